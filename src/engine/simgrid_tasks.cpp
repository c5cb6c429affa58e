// The task-graph executor on SimGrid (see task_graph.hpp). One controller actor starts each task when
// its dependencies are done: delays are executions on a timer host with as many cores as needed (so
// delays never share a core), flows are SimGrid communications over the platform's routes, sharing
// link bandwidth max-min fairly with every other flow in flight. Same settings as simgrid_network.cpp.
#include <map>
#include <set>

#include "simgrid_setup.hpp"

#include "fmsim/common/error.hpp"
#include "fmsim/engine/task_graph.hpp"

namespace sg4 = simgrid::s4u;

namespace fmsim::engine {
namespace {

/// Timer host speed: delays are executions of delay x this many flops, so that SimGrid's work-amount
/// precision (1e-5 flops by default) stays far below a nanosecond.
constexpr double kTimerFlopsPerSecond = 1e9;

void validate(const SimPlatform& platform, const SimTaskGraph& graph) {
  const int hosts = static_cast<int>(platform.hosts.size());
  std::set<std::pair<int, int>> routed;
  for (const auto& route : platform.routes) {
    if (route.src < 0 || route.src >= hosts || route.dst < 0 || route.dst >= hosts || route.src == route.dst) {
      throw InternalError("engine: invalid route");
    }
    for (int link : route.links) {
      if (link < 0 || link >= static_cast<int>(platform.links.size())) throw InternalError("engine: unknown link in route");
    }
    routed.insert({route.src, route.dst});
  }
  const int tasks = static_cast<int>(graph.tasks.size());
  for (int i = 0; i < tasks; ++i) {
    const auto& task = graph.tasks[i];
    if (task.delay_s < 0 || task.overlap_delay_s < 0) throw InternalError("engine: negative delay in task " + std::to_string(i));
    for (int dep : task.deps) {
      if (dep < 0 || dep >= tasks || dep == i) throw InternalError("engine: task " + std::to_string(i) + " has an invalid dependency");
    }
    for (const auto& flow : task.flows) {
      if (!routed.count({flow.src, flow.dst})) {
        throw InternalError("engine: no route " + platform.hosts.at(flow.src) + " -> " + platform.hosts.at(flow.dst));
      }
    }
  }
}

struct Controller {
  const SimTaskGraph* graph = nullptr;
  std::vector<sg4::Host*> hosts;
  sg4::Host* timer = nullptr;
  std::map<std::pair<int, int>, std::vector<int>> route_links;
  TaskTimes times;

  static int activities_of(const SimTask& t) {
    int count = t.overlap_delay_s > 0 ? 1 : 0;
    for (const auto& flow : t.flows) count += flow.bytes > 0 ? 1 : 0;
    return count;
  }

  /// Starts the task's phase-2 activities in a helper actor; the returned receive completes when they have.
  sg4::ActivityPtr helper(int task) {
    const SimTask& t = graph->tasks[task];
    for (const auto& flow : t.flows) {
      if (flow.bytes <= 0) continue;
      for (int link : route_links[{flow.src, flow.dst}]) times.link_bytes[link] += flow.bytes;
      ++times.flows;
    }
    sg4::Mailbox* mailbox = sg4::Mailbox::by_name("fmsim-task-" + std::to_string(task));
    sg4::Actor::create("helper", timer, [this, task, mailbox] {
      const SimTask& t = graph->tasks[task];
      std::vector<sg4::ActivityPtr> activities;
      if (t.overlap_delay_s > 0) activities.push_back(sg4::this_actor::exec_async(t.overlap_delay_s * kTimerFlopsPerSecond));
      for (const auto& flow : t.flows) {
        if (flow.bytes > 0) {
          activities.push_back(sg4::Comm::sendto_async(hosts[flow.src], hosts[flow.dst], static_cast<uint64_t>(flow.bytes)));
        }
      }
      for (auto& activity : activities) activity->wait();
      mailbox->put(&done_token, 0);
    });
    return mailbox->get_async(&received_token);
  }

  /// Dependency counts and successor lists of every task; start and end times reset to -1.
  void prepare(std::vector<int>& waiting, std::vector<std::vector<int>>& successors) {
    const auto& tasks = graph->tasks;
    const int n = static_cast<int>(tasks.size());
    waiting.assign(n, 0);
    successors.assign(n, {});
    for (int i = 0; i < n; ++i) {
      for (int dep : tasks[i].deps) {
        successors[dep].push_back(i);
        ++waiting[i];
      }
    }
    times.start_s.assign(n, -1.0);
    times.end_s.assign(n, -1.0);
  }

  static inline int done_token = 0;
  void* received_token = nullptr;

  // The actor-per-task executor (SimTaskGraph::actor_per_task): every task runs in its own actor and
  // reports to the controller through a condition variable, so no wait ever spans all tasks in flight.
  sg4::MutexPtr mutex;
  sg4::ConditionVariablePtr wake;
  std::vector<int> done;  ///< tasks finished since the controller last looked (guarded by mutex)

  void run_task(int task) {
    const SimTask& t = graph->tasks[task];
    if (t.delay_s > 0) sg4::this_actor::execute(t.delay_s * kTimerFlopsPerSecond);
    std::vector<sg4::ActivityPtr> activities;
    if (t.overlap_delay_s > 0) activities.push_back(sg4::this_actor::exec_async(t.overlap_delay_s * kTimerFlopsPerSecond));
    for (const auto& flow : t.flows) {
      if (flow.bytes > 0) activities.push_back(sg4::Comm::sendto_async(hosts[flow.src], hosts[flow.dst], static_cast<uint64_t>(flow.bytes)));
    }
    for (auto& activity : activities) activity->wait();
    times.end_s[task] = sg4::Engine::get_clock();
    std::unique_lock<sg4::Mutex> lock(*mutex);
    done.push_back(task);
    wake->notify_one();
  }

  void run_actor_per_task() {
    const auto& tasks = graph->tasks;
    const int n = static_cast<int>(tasks.size());
    mutex = sg4::Mutex::create();
    wake = sg4::ConditionVariable::create();
    std::vector<int> waiting;
    std::vector<std::vector<int>> successors;
    prepare(waiting, successors);
    int running = 0, finished = 0;
    auto start = [&](int task) {
      times.start_s[task] = sg4::Engine::get_clock();
      for (const auto& flow : tasks[task].flows) {
        if (flow.bytes <= 0) continue;
        for (int link : route_links[{flow.src, flow.dst}]) times.link_bytes[link] += flow.bytes;
        ++times.flows;
      }
      ++running;
      sg4::Actor::create("task", timer, [this, task] { run_task(task); });
    };
    for (int i = 0; i < n; ++i) {
      if (waiting[i] == 0) start(i);
    }
    std::vector<int> batch;
    while (running > 0) {
      {
        std::unique_lock<sg4::Mutex> lock(*mutex);
        while (done.empty()) wake->wait(lock);
        batch.swap(done);
      }
      for (int task : batch) {
        --running;
        ++finished;
        for (int next : successors[task]) {
          if (--waiting[next] == 0) start(next);
        }
      }
      batch.clear();
    }
    if (finished != n) throw InternalError("engine: the task graph has a cycle (" + std::to_string(n - finished) + " tasks never ran)");
    for (double end : times.end_s) times.makespan_s = std::max(times.makespan_s, end);
  }

  void run() {
    if (graph->actor_per_task) {
      run_actor_per_task();
      return;
    }
    const auto& tasks = graph->tasks;
    const int n = static_cast<int>(tasks.size());
    std::vector<int> waiting, phase(n, 0), outstanding(n, 0);
    std::vector<std::vector<int>> successors;
    prepare(waiting, successors);
    std::vector<sg4::ActivityPtr> active;
    std::vector<int> active_task;
    std::vector<int> ready;
    for (int i = 0; i < n; ++i) {
      if (waiting[i] == 0) ready.push_back(i);
    }
    int finished = 0;
    // Starts the next non-empty phase of a task, or finishes it (and readies its successors).
    auto advance = [&](int task) {
      const SimTask& t = tasks[task];
      while (true) {
        if (phase[task] == 0) {
          phase[task] = 1;
          if (t.delay_s > 0) {
            active.push_back(timer->exec_async(t.delay_s * kTimerFlopsPerSecond));
            active_task.push_back(task);
            outstanding[task] = 1;
            return;
          }
        } else if (phase[task] == 1) {
          phase[task] = 2;
          int started = 0;
          if (activities_of(t) > 1) {
            // Several activities: a helper actor waits for them all and reports once, so the
            // controller's wait_any (O(activities in flight) per event) sees one entry per task, not
            // one per flow: thousands of concurrent flows would otherwise make it quadratic.
            active.push_back(helper(task));
            active_task.push_back(task);
            outstanding[task] = 1;
            return;
          }
          if (t.overlap_delay_s > 0) {
            active.push_back(timer->exec_async(t.overlap_delay_s * kTimerFlopsPerSecond));
            active_task.push_back(task);
            ++started;
          }
          for (const auto& flow : t.flows) {
            if (flow.bytes <= 0) continue;
            active.push_back(sg4::Comm::sendto_async(hosts[flow.src], hosts[flow.dst], static_cast<uint64_t>(flow.bytes)));
            active_task.push_back(task);
            for (int link : route_links[{flow.src, flow.dst}]) times.link_bytes[link] += flow.bytes;
            ++times.flows;
            ++started;
          }
          if (started > 0) {
            outstanding[task] = started;
            return;
          }
        } else {
          times.end_s[task] = sg4::Engine::get_clock();
          ++finished;
          for (int next : successors[task]) {
            if (--waiting[next] == 0) ready.push_back(next);
          }
          return;
        }
      }
    };
    while (true) {
      while (!ready.empty()) {
        int task = ready.back();
        ready.pop_back();
        times.start_s[task] = sg4::Engine::get_clock();
        advance(task);
      }
      if (active.empty()) break;
      ssize_t index = sg4::Activity::wait_any(active);
      int task = active_task[index];
      active[index] = active.back();
      active.pop_back();
      active_task[index] = active_task.back();
      active_task.pop_back();
      if (--outstanding[task] == 0) advance(task);
    }
    if (finished != n) throw InternalError("engine: the task graph has a cycle (" + std::to_string(n - finished) + " tasks never ran)");
    for (double end : times.end_s) times.makespan_s = std::max(times.makespan_s, end);
  }
};

}  // namespace

TaskTimes simulate_tasks(const SimPlatform& platform, const SimTaskGraph& graph) {
  auto engine = detail::make_engine();
  validate(platform, graph);
  Controller controller;
  controller.graph = &graph;
  detail::BuiltZone built = detail::build_zone(platform, false);
  controller.hosts = built.hosts;
  controller.timer = built.zone->create_host("fmsim-timer", kTimerFlopsPerSecond)->set_core_count(1 << 24)->seal();
  built.zone->seal();
  for (const auto& route : platform.routes) controller.route_links[{route.src, route.dst}] = route.links;
  controller.times.link_bytes.assign(platform.links.size(), 0.0);

  std::string failure;
  sg4::Actor::create("controller", controller.timer, [&controller, &failure]() {
    try {
      controller.run();
    } catch (const std::exception& error) {
      failure = error.what();
    }
  });
  engine->run();
  if (!failure.empty()) throw InternalError(failure);
  return controller.times;
}

}  // namespace fmsim::engine
