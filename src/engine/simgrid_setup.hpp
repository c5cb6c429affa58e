#pragma once
// Shared by the engine's SimGrid translation units: the one Engine of the process, configured as
// docs/model.md says (CM02, no cross-traffic, unlimited TCP gamma), and a full zone built from a
// SimPlatform. Included only by src/engine/*.cpp.
#include <memory>
#include <string>
#include <vector>

#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include "fmsim/common/error.hpp"
#include "fmsim/engine/network_sim.hpp"

namespace fmsim::engine::detail {

/// The process's SimGrid engine; throws InternalError when a second one is asked for.
inline std::unique_ptr<simgrid::s4u::Engine> make_engine() {
  static bool used = false;
  if (used) throw InternalError("engine: SimGrid runs once per process; fork to simulate again");
  used = true;
  xbt_log_control_set("root.thres:critical");
  static char name[] = "fmsim";
#if defined(__SANITIZE_ADDRESS__)
  // FMSIM_SANITIZE builds: AddressSanitizer does not follow SimGrid's own stack switching (raw contexts)
  // and warns of false errors, so actors run as threads, on stacks large enough for its redzones. The
  // factory is chosen when the engine starts: set_config() afterwards would be too late.
  static char factory[] = "--cfg=contexts/factory:thread";
  static int argc = 2;
  static char* argv[] = {name, factory, nullptr};
#else
  static int argc = 1;
  static char* argv[] = {name, nullptr};
#endif
  auto engine = std::make_unique<simgrid::s4u::Engine>(&argc, argv);
  engine->set_config("network/model:CM02");
  engine->set_config("network/crosstraffic:0");
  engine->set_config("network/TCP-gamma:1e18");
  // The task executor runs one short actor per task: small stacks without guard pages make creating
  // hundreds of thousands of them cheap (their code is a few frames deep).
#if defined(__SANITIZE_ADDRESS__)
  engine->set_config("contexts/stack-size:2048");
#else
  engine->set_config("contexts/stack-size:256");
#endif
  engine->set_config("contexts/guard-size:0");
  return engine;
}

struct BuiltZone {
  simgrid::s4u::NetZone* zone = nullptr;
  std::vector<simgrid::s4u::Host*> hosts;  ///< by SimPlatform host index
};

/// Creates the platform's hosts, links and routes in a full zone; `seal` false leaves it open for more hosts.
inline BuiltZone build_zone(const SimPlatform& platform, bool seal = true) {
  namespace sg4 = simgrid::s4u;
  BuiltZone built;
  built.zone = sg4::create_full_zone("fmsim");
  for (const auto& host : platform.hosts) built.hosts.push_back(built.zone->create_host(host, 1e9)->seal());
  std::vector<sg4::Link*> links;
  links.reserve(platform.links.size());
  for (const auto& link : platform.links) {
    links.push_back(built.zone->create_link(link.name, link.bandwidth_Bps)->set_latency(link.latency_s)->seal());
  }
  for (const auto& route : platform.routes) {
    std::vector<sg4::LinkInRoute> path;
    path.reserve(route.links.size());
    for (int link : route.links) path.emplace_back(links[link]);
    built.zone->add_route(built.hosts[route.src]->get_netpoint(), built.hosts[route.dst]->get_netpoint(), nullptr, nullptr,
                          path, false);
  }
  if (seal) built.zone->seal();
  return built;
}

}  // namespace fmsim::engine::detail
