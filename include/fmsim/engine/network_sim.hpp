#pragma once
// The engine's public face: a network described as plain data (hosts, one-direction links, explicit
// routes) and jobs to run on it. Nothing here includes SimGrid; simgrid_network.cpp does.
//
// One call to simulate() is one SimGrid run (SimGrid allows one engine per process): the jobs run one
// after the other, each on an idle network, and their durations come back in order.
#include <string>
#include <vector>

namespace fmsim::engine {

struct SimLink {
  std::string name;
  double bandwidth_Bps = 0;
  double latency_s = 0;
};

/// An ordered list of links from host `src` to host `dst`. Only pairs that carry traffic need one.
struct SimRoute {
  int src = 0;
  int dst = 0;
  std::vector<int> links;
};

struct SimPlatform {
  std::vector<std::string> hosts;
  std::vector<SimLink> links;
  std::vector<SimRoute> routes;
};

/// A transfer of `bytes` from host `src` to host `dst`.
struct SimFlow {
  int src = 0;
  int dst = 0;
  double bytes = 0;
};

/// One step of a rank: its sends and receives start together; the step ends when all have completed.
struct SimStep {
  struct Op {
    bool send = true;
    int peer = 0;   ///< rank
    double bytes = 0;
  };
  std::vector<Op> ops;
  int repeat = 1;  ///< the step runs this many times in a row (a ring's 2(p-1) identical steps are one)
};

/// A message-passing program: each rank, on its host, runs its steps in order. A send to rank r matches
/// the next receive from this rank posted by r (FIFO per ordered pair of ranks).
struct SimProgram {
  std::vector<int> rank_host;
  /// A rank waits for its receives at the end of each step, and for its sends only once they are this
  /// many steps old (NCCL_STEPS buffer slots): senders run ahead of slow receivers up to this window.
  int send_window_steps = 8;
  std::vector<std::vector<SimStep>> steps;  ///< steps[rank]
};

/// A job is either a set of flows that start together or a program.
struct SimJob {
  std::vector<SimFlow> flows;
  SimProgram program;
  bool is_program = false;
};

struct SimStats {
  std::vector<double> durations_s;  ///< one per job
  double bytes_sent = 0;            ///< over all jobs
  double bytes_received = 0;
  long long messages = 0;
};

/// Validates the platform (every route's links exist, every flow or message has a route) and runs the
/// jobs. Throws InternalError on an invalid platform or a deadlocked program.
SimStats simulate(const SimPlatform& platform, const std::vector<SimJob>& jobs);

}  // namespace fmsim::engine

namespace fmsim::engine {

/// simulate() in a forked child process, so that one process may run any number of simulations
/// (SimGrid keeps one engine per process). Errors in the child come back as InternalError.
SimStats simulate_in_child(const SimPlatform& platform, const std::vector<SimJob>& jobs);

}  // namespace fmsim::engine
