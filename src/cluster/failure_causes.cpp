// The Llama 3 root-cause table (failure_causes.hpp).
#include "fmsim/cluster/failure_causes.hpp"

namespace fmsim::cluster {

const std::vector<FailureCause>& llama3_failure_causes() {
  static const std::vector<FailureCause> causes = {
      {"Faulty GPU", "GPU", 148, 79, false},
      {"GPU HBM3 Memory", "GPU", 72, 95, true},
      {"Software Bug", "Dependency", 54, 0, false},
      {"Network Switch/Cable", "Network", 35, 0, false},
      {"Host Maintenance", "Unplanned Maintenance", 32, 0, false},
      {"GPU SRAM Memory", "GPU", 19, 95, true},
      {"GPU System Processor", "GPU", 17, 119, false},
      {"NIC", "Host", 7, 0, false},
      {"NCCL Watchdog Timeouts", "Unknown", 7, 0, false},
      {"Silent Data Corruption", "GPU", 6, 0, false},
      {"GPU Thermal Interface + Sensor", "GPU", 6, 79, false},
      {"SSD", "Host", 3, 0, false},
      {"Power Supply", "Host", 3, 0, false},
      {"Server Chassis", "Host", 2, 0, false},
      {"IO Expansion Board", "Host", 2, 0, false},
      {"Dependency", "Dependency", 2, 0, false},
      {"CPU", "Host", 2, 0, false},
      {"System Memory", "Host", 2, 0, false},
  };
  return causes;
}

Recovery recovery_of(const std::string& category) {
  if (category == "Dependency") return Recovery::restart;
  if (category == "Unknown") return Recovery::hang;
  return Recovery::repair;
}

std::string to_string(Recovery recovery) {
  switch (recovery) {
    case Recovery::restart: return "restart";
    case Recovery::hang: return "hang";
    case Recovery::repair: break;
  }
  return "repair";
}

}  // namespace fmsim::cluster
