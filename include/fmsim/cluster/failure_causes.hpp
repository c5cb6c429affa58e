#pragma once
// What fails when a node of `fmsim cluster` fails: the root causes of Llama 3's 419 unexpected interruptions
// in 54 days on 16,384 H100 (The Llama 3 Herd of Models, arXiv:2407.21783, Table 5; calibration case
// fail-llama3-405b-54day-interruptions), drawn in their measured proportions, and the XID a GPU-attributed
// cause raises on the failed GPU (NVIDIA's Xid catalog: 79 "GPU has fallen off the bus", 95 "uncontained
// ECC error" (HBM and SRAM on Ampere and later, with a double-bit ECC count), 119 "GSP RPC timeout").
// Host, network and software causes raise no XID; silent data corruption raises none either.
#include <string>
#include <vector>

namespace fmsim::cluster {

/// What a failure of this cause does to the node and to the job on it:
/// - repair: hardware (GPU, host, network, maintenance): the node goes out for repair (or is replaced by a
///   spare); the job restarts from its last checkpoint;
/// - restart: software (Table 5's "Dependency" category: software bugs, dependencies): the node is healthy;
///   the job restarts on the same nodes at once;
/// - hang: "NCCL Watchdog Timeouts" ("Unknown"): the job stops making progress and holds its nodes until the
///   collective watchdog fires (FailureModel::watchdog_s), then restarts on the same nodes.
enum class Recovery { repair, restart, hang };

Recovery recovery_of(const std::string& category);
std::string to_string(Recovery recovery);

struct FailureCause {
  std::string name;      ///< Table 5's component
  std::string category;  ///< GPU, Network, Host, Dependency, Unplanned Maintenance, Unknown
  int count = 0;         ///< interruptions in the 54 days
  int xid = 0;           ///< raised on the failed GPU (0: none)
  bool ecc_dbe = false;  ///< adds a volatile double-bit ECC error on it
  Recovery recovery() const { return recovery_of(category); }
};

/// Table 5's rows, in its order.
const std::vector<FailureCause>& llama3_failure_causes();

}  // namespace fmsim::cluster
