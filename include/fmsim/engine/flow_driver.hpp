#pragma once
// An online simulation: a driver with its own events (a serving system's arrivals and iterations)
// that starts network flows as it goes and hears when each one has delivered its last byte. The
// engine owns the clock and the network, so flows that share links slow each other down. Nothing
// here includes SimGrid.
#include <functional>
#include <string>
#include <vector>

#include "fmsim/engine/network_sim.hpp"

namespace fmsim::engine {

class FlowStarter {
 public:
  virtual ~FlowStarter() = default;
  /// Starts `bytes` from host `src` to host `dst` now; `tag` comes back in FlowDriver::on_flow_done.
  virtual void start_flow(long long tag, int src, int dst, double bytes) = 0;
};

class FlowDriver {
 public:
  virtual ~FlowDriver() = default;
  /// When the driver's next own event is due (+infinity when it has none).
  virtual double next_event_s() const = 0;
  /// The clock has reached next_event_s(): run the events due.
  virtual void on_time(double now_s, FlowStarter& network) = 0;
  /// The flow started with `tag` has completed at `now_s`.
  virtual void on_flow_done(long long tag, double now_s, FlowStarter& network) = 0;
};

struct FlowRunStats {
  long long flows = 0;
  double bytes = 0;
  std::vector<double> link_bytes;  ///< per platform link
};

/// Runs the driver on the platform until it has no events and no flows are in flight (one SimGrid run
/// per process: see simulate()). Throws InternalError for a flow without a route.
FlowRunStats run_flow_driver(const SimPlatform& platform, FlowDriver& driver);

/// Runs a driver that starts no flows, without SimGrid (any number per process). A flow is an InternalError.
void run_driver_without_network(FlowDriver& driver);

/// Runs `work` in a forked child and returns the bytes it returned. An InputError thrown in the child
/// is rethrown as InputError, anything else as InternalError.
std::string run_isolated(const std::function<std::string()>& work);

}  // namespace fmsim::engine
