// The online driver loop on SimGrid: one controller actor sleeps until the driver's next event or
// wakes when a flow completes, whichever comes first; flows are SimGrid communications that share
// the platform's links. Also the same loop without a network, for drivers that start no flows.
#include <cmath>
#include <limits>
#include <map>

#include "fmsim/engine/flow_driver.hpp"
#include "simgrid_setup.hpp"

namespace fmsim::engine {
namespace {

namespace sg4 = simgrid::s4u;

class SimgridFlows final : public FlowStarter {
 public:
  std::vector<sg4::Host*> hosts;
  std::map<std::pair<int, int>, std::vector<int>> route_links;
  std::vector<sg4::ActivityPtr> active;
  std::vector<long long> active_tag;
  FlowRunStats stats;

  void start_flow(long long tag, int src, int dst, double bytes) override {
    auto route = route_links.find({src, dst});
    if (route == route_links.end()) {
      throw InternalError("engine: flow from host " + std::to_string(src) + " to " + std::to_string(dst) + " has no route");
    }
    for (int link : route->second) stats.link_bytes[static_cast<std::size_t>(link)] += bytes;
    ++stats.flows;
    stats.bytes += bytes;
    active.push_back(sg4::Comm::sendto_async(hosts[static_cast<std::size_t>(src)], hosts[static_cast<std::size_t>(dst)],
                                             static_cast<uint64_t>(std::max(1.0, bytes))));
    active_tag.push_back(tag);
  }

  void run(FlowDriver& driver) {
    while (true) {
      const double next = driver.next_event_s();
      const double now = sg4::Engine::get_clock();
      if (active.empty()) {
        if (std::isinf(next)) return;
        if (next > now) sg4::this_actor::sleep_until(next);
        driver.on_time(sg4::Engine::get_clock(), *this);
        continue;
      }
      const double timeout = std::isinf(next) ? -1.0 : std::max(0.0, next - now);
      ssize_t index = timeout == 0.0 ? -1 : sg4::Activity::wait_any_for(active, timeout);
      if (index < 0) {
        driver.on_time(sg4::Engine::get_clock(), *this);
        continue;
      }
      const long long tag = active_tag[static_cast<std::size_t>(index)];
      active[static_cast<std::size_t>(index)] = active.back();
      active.pop_back();
      active_tag[static_cast<std::size_t>(index)] = active_tag.back();
      active_tag.pop_back();
      driver.on_flow_done(tag, sg4::Engine::get_clock(), *this);
    }
  }
};

class NoNetwork final : public FlowStarter {
 public:
  void start_flow(long long, int, int, double) override {
    throw InternalError("engine: a driver run without a network started a flow");
  }
};

}  // namespace

FlowRunStats run_flow_driver(const SimPlatform& platform, FlowDriver& driver) {
  auto engine = detail::make_engine();
  SimgridFlows flows;
  detail::BuiltZone built = detail::build_zone(platform, false);
  flows.hosts = built.hosts;
  sg4::Host* controller_host = built.zone->create_host("fmsim-driver", 1e9)->seal();
  built.zone->seal();
  for (const auto& route : platform.routes) flows.route_links[{route.src, route.dst}] = route.links;
  flows.stats.link_bytes.assign(platform.links.size(), 0.0);
  std::string failure;
  bool input_failure = false;
  sg4::Actor::create("driver", controller_host, [&]() {
    try {
      flows.run(driver);
    } catch (const InputError& error) {
      failure = error.what();
      input_failure = true;
    } catch (const std::exception& error) {
      failure = error.what();
    }
    // Flows left in flight after a failure would keep the engine running.
    for (auto& activity : flows.active) activity->cancel();
  });
  engine->run();
  if (input_failure) throw InputError(failure);
  if (!failure.empty()) throw InternalError(failure);
  return flows.stats;
}

void run_driver_without_network(FlowDriver& driver) {
  NoNetwork network;
  while (true) {
    const double next = driver.next_event_s();
    if (std::isinf(next)) return;
    driver.on_time(next, network);
  }
}

}  // namespace fmsim::engine
