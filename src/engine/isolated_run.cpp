// Runs a simulation in a forked child and reads its results back through a pipe.
#include <csignal>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fmsim/common/error.hpp"
#include "fmsim/common/fd_io.hpp"
#include "fmsim/engine/flow_driver.hpp"
#include "fmsim/engine/network_sim.hpp"
#include "fmsim/engine/result_bytes.hpp"
#include "fmsim/engine/task_graph.hpp"

namespace fmsim::engine {
std::string run_isolated(const std::function<std::string()>& work) {
  int fds[2];
  if (::pipe(fds) != 0) throw InternalError("engine: pipe() failed");
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw InternalError("engine: fork() failed");
  if (pid == 0) {
    // The simulation dies with the fmsim that asked for it (a killed sweep or check kills its points,
    // and so these), and a signal ends it plainly: the parent's cleanup handlers are not its business.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) std::signal(signal, SIG_DFL);
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

SimStats simulate_in_child(const SimPlatform& platform, const std::vector<SimJob>& jobs) {
  std::string payload = run_isolated([&] {
    SimStats stats = simulate(platform, jobs);
    std::string out;
    append_values<double>(out, {stats.bytes_sent, stats.bytes_received, static_cast<double>(stats.messages)});
    append_values<double>(out, stats.durations_s);
    return out;
  });
  std::size_t offset = 0;
  auto header = take_values<double>(payload, offset);
  SimStats stats;
  stats.bytes_sent = header.at(0);
  stats.bytes_received = header.at(1);
  stats.messages = static_cast<long long>(header.at(2));
  stats.durations_s = take_values<double>(payload, offset);
  if (stats.durations_s.size() != jobs.size()) throw InternalError("engine: simulation returned the wrong number of results");
  return stats;
}

TaskTimes simulate_tasks_in_child(const SimPlatform& platform, const SimTaskGraph& graph) {
  std::string payload = run_isolated([&] {
    TaskTimes times = simulate_tasks(platform, graph);
    std::string out;
    append_values<double>(out, {times.makespan_s, static_cast<double>(times.flows)});
    append_values<double>(out, times.start_s);
    append_values<double>(out, times.end_s);
    append_values<double>(out, times.link_bytes);
    return out;
  });
  std::size_t offset = 0;
  auto header = take_values<double>(payload, offset);
  TaskTimes times;
  times.makespan_s = header.at(0);
  times.flows = static_cast<long long>(header.at(1));
  times.start_s = take_values<double>(payload, offset);
  times.end_s = take_values<double>(payload, offset);
  times.link_bytes = take_values<double>(payload, offset);
  return times;
}

}  // namespace fmsim::engine
