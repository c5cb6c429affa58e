// HTML report page for an RL post-training iteration (fmsim.rl/1, fmsim run on a training.workload "rl"
// scenario): the iteration's phases per role on a time line, its breakdown, and each role's load.
#include <map>

#include "fmsim/common/markup_escape.hpp"
#include "fmsim/report/svg_chart.hpp"
#include "result_reader.hpp"

namespace fmsim::report::detail {

namespace {

const std::vector<std::pair<std::string, std::string>> kPhases = {{"generation", "#4e79a7"}, {"forward", "#f28e2b"}, {"update", "#59a14f"},
                                                                  {"weight_sync", "#e15759"}, {"handover", "#bab0ac"}};

int phase_index(const std::string& phase) {
  for (std::size_t i = 0; i < kPhases.size(); ++i) {
    if (kPhases[i].first == phase) return static_cast<int>(i);
  }
  return 0;
}

}  // namespace

std::string rl_page(const ResultReader& r) {
  const std::string subtitle = r.text("/algorithm") + " iteration, " + r.text("/placement") + " on " + std::to_string(r.integer("/cluster/gpus")) +
                               " x " + r.text("/cluster/gpu") + " (" + r.text("/cluster/instance_type") + ")";
  std::vector<std::pair<std::string, std::string>> facts = {
      {"iteration", duration_text(r.number("/iteration_s")) + (r.text("/placement") == "disaggregated"
                                                                   ? " (staleness " + std::to_string(r.integer("/staleness")) + ")"
                                                                   : std::string())},
      {"samples", with_unit(r.number("/samples"), "") + " (" + with_unit(r.number("/prompts"), "prompts") + " x " +
                      with_unit(r.number("/group_size"), "responses") + "), " + with_unit(r.number("/mean_response_tokens"), "response tokens") +
                      " on average"},
      {"throughput", with_unit(r.number("/samples_per_s"), "samples/s") + ", " + with_unit(r.number("/response_tokens_per_s"), "response tokens/s")},
      {"rollout", with_unit(r.number("/roles/rollout/gpus"), "GPUs") + ", " + with_unit(r.number("/roles/rollout/replicas"), "replicas") + " of TP" +
                      std::to_string(r.integer("/roles/rollout/tensor_parallel_size")) + ", busy " +
                      with_unit(100 * r.number("/roles/rollout/utilization"), "%")},
      {"trainer", with_unit(r.number("/roles/trainer/gpus"), "GPUs") + ", TP" + std::to_string(r.integer("/roles/trainer/tensor_parallel_size")) +
                      " PP" + std::to_string(r.integer("/roles/trainer/pipeline_parallel_size")) + " DP" +
                      std::to_string(r.integer("/roles/trainer/data_parallel_size")) + ", busy " +
                      with_unit(100 * r.number("/roles/trainer/utilization"), "%")},
      {"weight transfer", with_unit(r.number("/weight_sync_bytes") / 1e9, "GB") + " in " + duration_text(r.number("/breakdown_s/weight_sync"))},
  };
  if (r.has("/usd_per_iteration")) facts.push_back({"cost", "$" + with_unit(r.number("/usd_per_iteration"), "per iteration")});

  std::map<std::string, svg::Lane> lanes{{"rollout", {"rollout", {}}}, {"trainer", {"trainer", {}}}};
  const auto& spans = r.array("/timeline");
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const std::string where = "/timeline/" + std::to_string(i);
    const std::string role = r.text(where + "/role"), phase = r.text(where + "/phase");
    if (!lanes.count(role)) r.fail(where + "/role", "should be rollout or trainer");
    lanes[role].spans.push_back({r.number(where + "/start_s"), r.number(where + "/end_s"), phase_index(phase), phase});
  }
  std::vector<std::string> colors;
  std::vector<svg::Part> key, breakdown;
  for (const auto& [phase, color] : kPhases) {
    colors.push_back(color);
    key.push_back({phase, 0, color});
    breakdown.push_back({phase, r.number("/breakdown_s/" + phase), color});
  }
  const std::string timeline =
      section("timeline", "One iteration in time",
              r.text("/placement") == "colocated" ? "The same GPUs run every phase in turn; the two lanes separate the roles."
                                                  : "Each pool on its own lane; with staleness 1 or more the rollout generates the next iteration "
                                                    "while the trainer trains, and both stop for the weight transfer.",
              svg::timeline("rl-timeline", {lanes["rollout"], lanes["trainer"]}, r.number("/iteration_s"), colors) + svg::legend(key));
  const std::string parts =
      section("breakdown", "Time per phase",
              "Generation includes its long tail (" + duration_text(r.number("/breakdown_s/generation_tail")) +
                  " after 90 % of the responses had finished); forward is every scoring pass, update every optimizer step.",
              svg::stacked_rows("rl-breakdown", {{"phases", breakdown}}, 1, "seconds") + svg::legend(breakdown, 1, "s", true));
  return html_page(r.text("/name"), subtitle, section("summary", "Summary", "", facts_table(facts)) + timeline + parts);
}

}  // namespace fmsim::report::detail
