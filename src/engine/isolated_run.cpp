// Runs a simulation in a forked child and reads its results back through a pipe.
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "fmsim/common/error.hpp"
#include "fmsim/engine/flow_driver.hpp"
#include "fmsim/engine/network_sim.hpp"
#include "fmsim/engine/task_graph.hpp"

namespace fmsim::engine {
namespace {

bool write_all(int fd, const void* data, std::size_t size) {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t written = ::write(fd, bytes, size);
    if (written <= 0) return false;
    bytes += written;
    size -= static_cast<std::size_t>(written);
  }
  return true;
}

std::string read_all(int fd) {
  std::string data;
  char buffer[65536];
  ssize_t got;
  while ((got = ::read(fd, buffer, sizeof buffer)) > 0) data.append(buffer, static_cast<std::size_t>(got));
  return data;
}

}  // namespace

std::string run_isolated(const std::function<std::string()>& work) {
  int fds[2];
  if (::pipe(fds) != 0) throw InternalError("engine: pipe() failed");
  pid_t pid = ::fork();
  if (pid < 0) throw InternalError("engine: fork() failed");
  if (pid == 0) {
    ::close(fds[0]);
    int status = 0;
    std::string payload;
    try {
      payload = "K" + work();
    } catch (const InputError& error) {
      payload = std::string("I") + error.what();
      status = 1;
    } catch (const std::exception& error) {
      payload = std::string("E") + error.what();
      status = 1;
    }
    write_all(fds[1], payload.data(), payload.size());
    ::close(fds[1]);
    ::_exit(status);
  }
  ::close(fds[1]);
  std::string payload = read_all(fds[0]);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (payload.empty()) throw InternalError("engine: the simulation process died (signal or crash)");
  if (payload[0] == 'I') throw InputError(payload.substr(1));
  if (payload[0] == 'E') throw InternalError(payload.substr(1));
  return payload.substr(1);
}

namespace {

void append_doubles(std::string& out, const std::vector<double>& values) {
  const std::uint64_t count = values.size();
  out.append(reinterpret_cast<const char*>(&count), sizeof count);
  out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(double));
}

std::vector<double> take_doubles(const std::string& in, std::size_t& offset) {
  std::uint64_t count = 0;
  if (offset + sizeof count > in.size()) throw InternalError("engine: truncated simulation result");
  std::memcpy(&count, in.data() + offset, sizeof count);
  offset += sizeof count;
  if (offset + count * sizeof(double) > in.size()) throw InternalError("engine: truncated simulation result");
  std::vector<double> values(count);
  std::memcpy(values.data(), in.data() + offset, count * sizeof(double));
  offset += count * sizeof(double);
  return values;
}

}  // namespace

SimStats simulate_in_child(const SimPlatform& platform, const std::vector<SimJob>& jobs) {
  std::string payload = run_isolated([&] {
    SimStats stats = simulate(platform, jobs);
    std::string out;
    append_doubles(out, {stats.bytes_sent, stats.bytes_received, static_cast<double>(stats.messages)});
    append_doubles(out, stats.durations_s);
    return out;
  });
  std::size_t offset = 0;
  auto header = take_doubles(payload, offset);
  SimStats stats;
  stats.bytes_sent = header.at(0);
  stats.bytes_received = header.at(1);
  stats.messages = static_cast<long long>(header.at(2));
  stats.durations_s = take_doubles(payload, offset);
  if (stats.durations_s.size() != jobs.size()) throw InternalError("engine: simulation returned the wrong number of results");
  return stats;
}

TaskTimes simulate_tasks_in_child(const SimPlatform& platform, const SimTaskGraph& graph) {
  std::string payload = run_isolated([&] {
    TaskTimes times = simulate_tasks(platform, graph);
    std::string out;
    append_doubles(out, {times.makespan_s, static_cast<double>(times.flows)});
    append_doubles(out, times.start_s);
    append_doubles(out, times.end_s);
    append_doubles(out, times.link_bytes);
    return out;
  });
  std::size_t offset = 0;
  auto header = take_doubles(payload, offset);
  TaskTimes times;
  times.makespan_s = header.at(0);
  times.flows = static_cast<long long>(header.at(1));
  times.start_s = take_doubles(payload, offset);
  times.end_s = take_doubles(payload, offset);
  times.link_bytes = take_doubles(payload, offset);
  return times;
}

}  // namespace fmsim::engine
