// HTML report pages for serving (fmsim.serve/1) and checkpoint (fmsim.checkpoint/1) results.
#include <cstdio>
#include <sstream>

#include "fmsim/common/markup_escape.hpp"
#include "fmsim/report/svg_chart.hpp"
#include "result_reader.hpp"

namespace fmsim::report::detail {

using nlohmann::json;

namespace {

const std::vector<std::pair<std::string, std::string>> kPercentiles = {
    {"p50", "#4e79a7"}, {"p90", "#f28e2b"}, {"p99", "#e15759"}, {"max", "#bab0ac"}};
const std::vector<std::pair<std::string, std::string>> kServingMemory = {
    {"weights", "#8c564b"}, {"activations", "#bcbd22"}, {"runtime", "#17becf"}, {"kv_cache", "#1f77b4"}};

/// One latency metric's percentiles as bars, against its SLO when the scenario sets one.
std::string latency_chart(const ResultReader& r, const std::string& key, const std::string& label) {
  std::vector<svg::Row> rows;
  for (const auto& [p, color] : kPercentiles) rows.push_back({p, {{label, r.number("/" + key + "/" + p), color}}});
  svg::Limit limit;
  if (r.has("/slo/" + key)) {
    limit.value = r.number("/slo/" + key);
    char percentile[16];
    std::snprintf(percentile, sizeof percentile, "%g", r.number_or("/slo/percentile", 99));
    limit.label = "SLO p" + std::string(percentile) + " " + duration_text(limit.value);
  }
  const bool ms = r.number("/" + key + "/max") < 1 && limit.value < 1;
  return "<h3>" + markup_escape(label) + "</h3>" + svg::stacked_rows(key + "-chart", rows, ms ? 1e-3 : 1, ms ? "ms" : "seconds", limit);
}

}  // namespace

std::string serve_page(const ResultReader& r) {
  const std::string subtitle = r.text("/model") + " on " + std::to_string(r.integer("/cluster/gpus")) + " x " +
                               r.text("/cluster/gpu") + " (" + r.text("/cluster/instance_type") + "), " + r.text("/precision") +
                               (r.at("/disaggregated").get<bool>() ? ", prefill and decode disaggregated" : "");
  std::vector<std::pair<std::string, std::string>> facts = {
      {"requests", with_unit(r.number("/completed"), "") + " completed of " + with_unit(r.number("/requests"), "")},
      {"throughput", with_unit(r.number("/requests_per_s"), "requests/s") + ", " + with_unit(r.number("/output_tokens_per_s"), "output tokens/s") +
                         " (" + with_unit(r.number("/output_tokens_per_s_per_gpu"), "per GPU") + ")"},
      {"SLO", std::string(r.at("/slo_met").get<bool>() ? "met" : "missed") + "; goodput " + with_unit(100 * r.number("/slo_goodput"), "%") +
                  " of requests"},
      {"TTFT p50 / p99", duration_text(r.number("/ttft_s/p50")) + " / " + duration_text(r.number("/ttft_s/p99"))},
      {"TPOT p50 / p99", duration_text(r.number("/tpot_s/p50")) + " / " + duration_text(r.number("/tpot_s/p99"))},
      {"KV cache use", "peak " + with_unit(100 * r.number("/kv_cache_utilization/peak"), "%") + ", preemptions " +
                           with_unit(r.number("/preemptions"), "")},
  };
  if (r.has("/error_band/description")) facts.push_back({"expected error (validation)", r.text("/error_band/description")});
  if (r.has("/usd_per_million_tokens")) facts.push_back({"cost", "$" + with_unit(r.number("/usd_per_million_tokens"), "per million output tokens")});

  const std::string latency = section("latency", "Latency percentiles",
                                      "Time to first token, time per output token and end-to-end latency over all completed requests.",
                                      latency_chart(r, "ttft_s", "time to first token") + latency_chart(r, "tpot_s", "time per output token") +
                                          latency_chart(r, "e2e_latency_s", "end-to-end latency") +
                                          svg::legend({{"p50", 0, kPercentiles[0].second}, {"p90", 0, kPercentiles[1].second},
                                                       {"p99", 0, kPercentiles[2].second}, {"max", 0, kPercentiles[3].second}}));
  std::vector<svg::Row> memory_rows;
  std::vector<svg::Part> key;
  for (const auto& pool : r.array("/pools")) {
    std::vector<svg::Part> parts;
    for (const auto& [name, color] : kServingMemory) parts.push_back({name, pool.at("memory_per_gpu").value(name + "_bytes", 0.0), color});
    memory_rows.push_back({pool.value("role", "pool") + " (TP" + std::to_string(r.integer_in_or(pool, "tensor_parallel_size", "/pools", 1)) + ")", parts});
    if (key.empty()) key = parts;
  }
  const double hbm = r.number_or("/cluster/hbm_capacity_bytes", 0);
  const std::string memory = section("memory", "Memory per GPU against HBM",
                                     "The KV cache takes what the weights, activation workspace and runtime leave.",
                                     svg::stacked_rows("memory-chart", memory_rows, 1e9, "GB", {hbm, "HBM " + with_unit(hbm / 1e9, "GB")}) +
                                         svg::legend(key, 1e9, "GB", true));
  std::vector<svg::Row> busy_rows;
  int index = 0;
  for (const auto& replica : r.array("/replicas")) {
    busy_rows.push_back({replica.value("pool", "replica") + " " + std::to_string(index++),
                         {{"busy", 100 * replica.value("busy_fraction", 0.0), "#59a14f"}}});
  }
  const std::string load = section("replicas", "Replica load", "Fraction of the run each replica spent running iterations.",
                                   svg::stacked_rows("replica-chart", busy_rows, 1, "% busy"));
  return html_page(r.text_or("/scenario/name", "serving"), subtitle, section("summary", "Summary", "", facts_table(facts)) + latency + memory + load);
}

std::string checkpoint_page(const ResultReader& r) {
  const std::string subtitle = std::to_string(r.integer("/cluster/gpus")) + " GPUs (" +
                               std::to_string(r.integer("/cluster/nodes")) + " x " + r.text("/cluster/instance_type") +
                               "), checkpoint " + with_unit(r.number("/checkpoint_bytes") / 1e12, "TB");
  const std::vector<std::pair<std::string, std::string>> facts = {
      {"strategy", r.text("/strategy") + " every " + r.count_text("/interval_steps") + " steps"},
      {"save / restore", duration_text(r.number("/save_time_s")) + " / " + duration_text(r.number("/restore_time_s"))},
      {"stall per checkpoint", duration_text(r.number("/step_stall_s"))},
      {"bottleneck", r.text_or("/bottleneck", "-")},
      {"goodput", with_unit(100 * r.number("/goodput"), "%") + " with " + with_unit(r.number("/expected_interruptions"), "interruptions")},
      {"time to train", duration_text(r.number("/time_to_train_s"))},
  };
  std::vector<svg::Row> save_rows, goodput_rows;
  for (const auto& s : r.array("/strategies")) {
    if (!s.value("available", false)) continue;
    const std::string name = s.value("strategy", "?");
    save_rows.push_back({name, {{"save", s.value("save_time_s", 0.0), "#4e79a7"}, {"restore", s.value("restore_time_s", 0.0), "#f28e2b"}}});
    goodput_rows.push_back({name, {{"lost", 100 * (1 - s.value("goodput", 0.0)), "#e15759"}}});
  }
  const std::string body =
      section("summary", "Summary", "", facts_table(facts)) +
      section("strategies", "Strategies compared", "Save and restore time of one checkpoint, and the share of the run's wall time lost to checkpoint stalls, "
              "failures, lost work and restarts (100 % minus goodput).",
              svg::stacked_rows("save-chart", save_rows, 1, "seconds") +
                  svg::legend({{"save", 0, "#4e79a7"}, {"restore", 0, "#f28e2b"}}) +
                  svg::stacked_rows("goodput-chart", goodput_rows, 1, "% of wall time lost"));
  return html_page("checkpoint plan", subtitle, body);
}

}  // namespace fmsim::report::detail
