// Runs a simulation in a forked child and reads its results back through a pipe.
#include <cstring>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "fmsim/common/error.hpp"
#include "fmsim/engine/network_sim.hpp"

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

SimStats simulate_in_child(const SimPlatform& platform, const std::vector<SimJob>& jobs) {
  int fds[2];
  if (::pipe(fds) != 0) throw InternalError("engine: pipe() failed");
  pid_t pid = ::fork();
  if (pid < 0) throw InternalError("engine: fork() failed");
  if (pid == 0) {
    ::close(fds[0]);
    int status = 0;
    std::string payload;
    try {
      SimStats stats = simulate(platform, jobs);
      payload.push_back('K');
      double header[3] = {stats.bytes_sent, stats.bytes_received, static_cast<double>(stats.messages)};
      payload.append(reinterpret_cast<const char*>(header), sizeof header);
      payload.append(reinterpret_cast<const char*>(stats.durations_s.data()), stats.durations_s.size() * sizeof(double));
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
  if (payload[0] == 'E') throw InternalError(payload.substr(1));
  SimStats stats;
  double header[3];
  if (payload.size() < 1 + sizeof header) throw InternalError("engine: truncated simulation result");
  std::memcpy(header, payload.data() + 1, sizeof header);
  stats.bytes_sent = header[0];
  stats.bytes_received = header[1];
  stats.messages = static_cast<long long>(header[2]);
  std::size_t count = (payload.size() - 1 - sizeof header) / sizeof(double);
  stats.durations_s.resize(count);
  std::memcpy(stats.durations_s.data(), payload.data() + 1 + sizeof header, count * sizeof(double));
  if (count != jobs.size()) throw InternalError("engine: simulation returned the wrong number of results");
  return stats;
}

}  // namespace fmsim::engine
