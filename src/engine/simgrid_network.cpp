// The only translation unit that includes SimGrid. Settings (see docs/model.md): CM02 network model
// without cross-traffic, TCP gamma effectively unlimited, so a flow's time is latency + bytes / its
// max-min fair share of bandwidth, matching closed forms to 1e-6 (SIMGRID-NOTES.md).
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "simgrid_setup.hpp"

#include "fmsim/common/error.hpp"
#include "fmsim/engine/network_sim.hpp"

namespace sg4 = simgrid::s4u;

namespace fmsim::engine {
namespace {

void validate(const SimPlatform& platform, const std::vector<SimJob>& jobs) {
  const int hosts = static_cast<int>(platform.hosts.size());
  const int links = static_cast<int>(platform.links.size());
  std::set<std::pair<int, int>> routed;
  for (const auto& route : platform.routes) {
    if (route.src < 0 || route.src >= hosts || route.dst < 0 || route.dst >= hosts || route.src == route.dst) {
      throw InternalError("engine: route between invalid hosts " + std::to_string(route.src) + " -> " +
                          std::to_string(route.dst));
    }
    for (int link : route.links) {
      if (link < 0 || link >= links) throw InternalError("engine: route uses unknown link " + std::to_string(link));
    }
    if (!routed.insert({route.src, route.dst}).second) {
      throw InternalError("engine: duplicate route " + std::to_string(route.src) + " -> " + std::to_string(route.dst));
    }
  }
  for (const auto& link : platform.links) {
    if (!(link.bandwidth_Bps > 0)) throw InternalError("engine: link " + link.name + " has no bandwidth");
  }
  auto need = [&](int src, int dst) {
    if (src == dst) throw InternalError("engine: transfer from a host to itself");
    if (!routed.count({src, dst})) {
      throw InternalError("engine: no route " + platform.hosts.at(src) + " -> " + platform.hosts.at(dst));
    }
  };
  for (const auto& job : jobs) {
    for (const auto& flow : job.flows) need(flow.src, flow.dst);
    if (!job.is_program) continue;
    const auto& program = job.program;
    // Per ordered pair of ranks, the sends of one must match the receives of the other, size by size
    // (run-length encoded: repeated steps repeat their sizes).
    using Sizes = std::vector<std::pair<std::uint64_t, long long>>;  // (bytes, count)
    auto append = [](Sizes& sizes, std::uint64_t bytes, long long count) {
      if (!sizes.empty() && sizes.back().first == bytes) sizes.back().second += count;
      else sizes.emplace_back(bytes, count);
    };
    std::map<std::pair<int, int>, Sizes> sent, received;
    for (std::size_t rank = 0; rank < program.steps.size(); ++rank) {
      for (const auto& step : program.steps[rank]) {
        if (step.repeat < 1) throw InternalError("engine: a program step repeats fewer than once");
        for (const auto& op : step.ops) {
          int me = static_cast<int>(rank);
          if (op.peer < 0 || op.peer >= static_cast<int>(program.steps.size())) {
            throw InternalError("engine: a program names rank " + std::to_string(op.peer) + " of " +
                                std::to_string(program.steps.size()));
          }
          int a = program.rank_host.at(me), b = program.rank_host.at(op.peer);
          auto bytes = static_cast<std::uint64_t>(op.bytes);
          if (op.send) {
            need(a, b);
            append(sent[{me, op.peer}], bytes, step.repeat);
          } else {
            need(b, a);
            append(received[{op.peer, me}], bytes, step.repeat);
          }
        }
      }
    }
    if (sent != received) throw InternalError("engine: a program's sends and receives do not match");
  }
}

struct Runtime {
  std::vector<sg4::Host*> hosts;
  SimStats stats;
};

std::string mailbox_name(int from, int to) { return std::to_string(from) + ">" + std::to_string(to); }

/// Messages carry no data (only their simulated size), but SimGrid wants a non-null payload.
int payload_token = 0;

void run_rank(const SimProgram* program, int rank, Runtime* runtime) {
  std::deque<std::vector<sg4::CommPtr>> pending_sends;  // one entry per step still in flight
  auto run_step = [&](const SimStep& step) {
    std::vector<sg4::CommPtr> sends, receives;
    std::vector<int*> landed(step.ops.size(), nullptr);  // where receives deliver their (unused) payload
    std::size_t index = 0;
    for (const auto& op : step.ops) {
      int** slot = &landed[index++];
      auto bytes = static_cast<uint64_t>(op.bytes);
      if (op.send) {
        sends.push_back(sg4::Mailbox::by_name(mailbox_name(rank, op.peer))->put_async(&payload_token, bytes));
        runtime->stats.bytes_sent += static_cast<double>(bytes);
        ++runtime->stats.messages;
      } else {
        receives.push_back(sg4::Mailbox::by_name(mailbox_name(op.peer, rank))->get_async<int>(slot));
        runtime->stats.bytes_received += static_cast<double>(bytes);
      }
    }
    sg4::Comm::wait_all(receives);
    pending_sends.push_back(std::move(sends));
    while (static_cast<int>(pending_sends.size()) > program->send_window_steps) {
      sg4::Comm::wait_all(pending_sends.front());
      pending_sends.pop_front();
    }
  };
  for (const SimStep& step : program->steps[rank]) {
    for (int round = 0; round < step.repeat; ++round) run_step(step);
  }
  for (auto& sends : pending_sends) sg4::Comm::wait_all(sends);
}

void run_jobs(const std::vector<SimJob>* jobs, Runtime* runtime) {
  for (const SimJob& job : *jobs) {
    double start = sg4::Engine::get_clock();
    if (job.is_program) {
      std::vector<sg4::ActorPtr> actors;
      for (std::size_t rank = 0; rank < job.program.steps.size(); ++rank) {
        actors.push_back(sg4::Actor::create("rank" + std::to_string(rank),
                                            runtime->hosts.at(job.program.rank_host[rank]), run_rank,
                                            &job.program, static_cast<int>(rank), runtime));
      }
      for (auto& actor : actors) actor->join();
    } else {
      std::vector<sg4::CommPtr> comms;
      comms.reserve(job.flows.size());
      for (const auto& flow : job.flows) {
        auto bytes = static_cast<uint64_t>(flow.bytes);
        comms.push_back(sg4::Comm::sendto_async(runtime->hosts[flow.src], runtime->hosts[flow.dst], bytes));
        runtime->stats.bytes_sent += static_cast<double>(bytes);
        runtime->stats.bytes_received += static_cast<double>(bytes);
        ++runtime->stats.messages;
      }
      sg4::Comm::wait_all(comms);
    }
    runtime->stats.durations_s.push_back(sg4::Engine::get_clock() - start);
  }
}

}  // namespace

SimStats simulate(const SimPlatform& platform, const std::vector<SimJob>& jobs) {
  auto engine = detail::make_engine();
  validate(platform, jobs);
  Runtime runtime;
  runtime.hosts = detail::build_zone(platform).hosts;

  sg4::Actor::create("controller", runtime.hosts.front(), run_jobs, &jobs, &runtime);
  engine->run();
  if (runtime.stats.durations_s.size() != jobs.size()) {
    throw InternalError("engine: the simulation stopped before every job finished (deadlocked program)");
  }
  return runtime.stats;
}

}  // namespace fmsim::engine
