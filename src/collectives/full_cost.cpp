// Cost of a full-fidelity simulation (see full_cost.hpp).
#include "fmsim/collectives/full_cost.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

namespace fmsim::collectives {

void FullCost::add(const engine::SimProgram& program) {
  ranks = std::max(ranks, static_cast<double>(program.steps.size()));
  double program_messages = 0, active = 0, alive = 0;
  for (const auto& steps : program.steps) {
    double widest_sends = 0, widest_receives = 0, rounds = 0;
    for (const auto& step : steps) {
      double sends = 0;
      for (const auto& op : step.ops) sends += op.send ? 1 : 0;
      program_messages += sends * step.repeat;
      rounds += step.repeat;
      widest_sends = std::max(widest_sends, sends);
      widest_receives = std::max(widest_receives, static_cast<double>(step.ops.size()) - sends);
      program_bytes += sizeof(engine::SimStep) + step.ops.size() * sizeof(engine::SimStep::Op);
    }
    active += widest_sends;
    // Sends stay alive for up to send_window_steps + 1 steps, receives for one.
    alive += widest_sends * std::min(rounds, program.send_window_steps + 1.0) + widest_receives;
  }
  messages += program_messages;
  seconds += program_messages * kFullSecondsPerMessage * std::sqrt(std::max(active, 1.0));
  active_flows = std::max(active_flows, active);
  peak_in_flight = std::max(peak_in_flight, alive);
}

double FullCost::memory_bytes() const {
  return kFullBaseBytes + program_bytes + peak_in_flight * kFullBytesPerCommAlive + ranks * kFullBytesPerActor;
}

double available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    double kib = 0;
    fields >> kib;
    return kib * 1024.0;
  }
  return 0;
}

}  // namespace fmsim::collectives
