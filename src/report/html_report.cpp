// The HTML report: the page shell, the dispatch on the result's schema, and the training-step page.
#include "fmsim/report/html_report.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "fmsim/common/markup_escape.hpp"
#include "fmsim/report/svg_chart.hpp"
#include "result_reader.hpp"

namespace fmsim::report {

using nlohmann::json;

namespace detail {

std::string result_schema(const json& doc, const std::string& file) {
  if (!doc.is_object()) throw InputError(file + ": expected a JSON object written by fmsim run, serve or checkpoint");
  const std::string schema = doc.is_object() && doc.contains("schema") && doc["schema"].is_string() ? doc["schema"].get<std::string>() : "";
  // fmsim serve --allow-oom writes only the reason when a replica does not fit: nothing to report.
  if (schema == "fmsim.serve/1" && doc.contains("oom_reason") && doc["oom_reason"].is_string()) {
    throw InputError(file + ": a serving result with \"oom\": true (fmsim serve --allow-oom): nothing was simulated, so there is nothing to report: " +
                     doc["oom_reason"].get<std::string>());
  }
  if (schema == "fmsim.run/1" || schema == "fmsim.serve/1" || schema == "fmsim.checkpoint/1" || schema == "fmsim.rl/1" ||
      schema == "fmsim.cluster/1") {
    return schema;
  }
  throw InputError(file + ": /schema is \"" + schema +
                   "\"; expected a result of fmsim run (fmsim.run/1, or fmsim.rl/1 for an RL scenario), serve (fmsim.serve/1), checkpoint "
                   "(fmsim.checkpoint/1) or cluster (fmsim.cluster/1)");
}

std::string with_unit(double value, const std::string& unit) { return svg::compact_number(value) + " " + unit; }

std::string duration_text(double s) {
  if (s < 1e-3) return with_unit(s * 1e6, "µs");
  if (s < 1) return with_unit(s * 1e3, "ms");
  if (s < 3600) return with_unit(s, "s");
  if (s < 3 * 86400) return with_unit(s / 3600, "h");
  return with_unit(s / 86400, "days");
}

std::string html_page(const std::string& title, const std::string& subtitle, const std::string& body) {
  std::ostringstream s;
  s << "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
    << "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">"
    << "<title>" << markup_escape(title) << " - fmsim</title><style>"
    << "body{font:14px/1.45 system-ui,sans-serif;color:#222;margin:24px auto;max-width:960px;padding:0 12px}"
    << "h1{font-size:22px;margin:0}h2{font-size:17px;margin:28px 0 4px;border-bottom:1px solid #ddd}"
    << ".sub{color:#666;margin:2px 0 12px}.note{color:#555;margin:2px 0 8px}"
    << "table.facts{border-collapse:collapse}table.facts td{padding:2px 14px 2px 0}table.facts td:first-child{color:#555}"
    << ".legend span{margin-right:16px;white-space:nowrap}.legend i{display:inline-block;width:11px;height:11px;margin-right:5px;vertical-align:-1px}"
    << "svg.chart text{font:12px system-ui,sans-serif;fill:#333}svg.chart .unit{fill:#666}svg.chart .limit-label{fill:#c00}"
    << "footer{color:#888;margin-top:32px;font-size:12px}"
    << "</style></head><body><h1>" << markup_escape(title) << "</h1><p class='sub'>" << markup_escape(subtitle) << "</p>" << body
    << "<footer>Simulated by fmsim; every number on this page is a prediction, not a measurement.</footer></body></html>\n";
  return s.str();
}

std::string facts_table(const std::vector<std::pair<std::string, std::string>>& rows) {
  std::ostringstream s;
  s << "<table class='facts'>";
  for (const auto& [name, value] : rows) s << "<tr><td>" << markup_escape(name) << "</td><td>" << markup_escape(value) << "</td></tr>";
  s << "</table>";
  return s.str();
}

std::string section(const std::string& id, const std::string& heading, const std::string& note, const std::string& content) {
  return "<section id='" + markup_escape(id) + "'><h2>" + markup_escape(heading) + "</h2>" +
         (note.empty() ? "" : "<p class='note'>" + markup_escape(note) + "</p>") + content + "</section>";
}

}  // namespace detail

namespace {

using detail::ResultReader;

// Step breakdown parts, in the order of the text summary, with their colours (Tableau 10).
const std::vector<std::pair<std::string, std::string>> kBreakdownParts = {
    {"compute", "#4e79a7"}, {"tp_comm", "#f28e2b"}, {"cp_comm", "#e15759"},   {"ep_comm", "#76b7b2"},
    {"pp_comm", "#59a14f"}, {"dp_comm", "#edc948"}, {"optimizer", "#b07aa1"}, {"host", "#9c755f"}, {"bubble", "#bab0ac"}};
// Pipeline passes: forward, backward, optimizer.
const std::vector<std::string> kPassColors = {"#1f77b4", "#2ca02c", "#9467bd"};
// Memory parts.
const std::vector<std::pair<std::string, std::string>> kMemoryParts = {
    {"weights", "#8c564b"}, {"gradients", "#e377c2"}, {"optimizer", "#7f7f7f"}, {"activations", "#bcbd22"}, {"reserved", "#17becf"}};

std::string breakdown_chart(const ResultReader& r) {
  std::vector<svg::Part> parts;
  const json& breakdown = r.at("/breakdown_s");
  for (const auto& [key, color] : kBreakdownParts) {
    const double value = breakdown.contains(key) && breakdown[key].is_number() ? breakdown[key].get<double>() : 0.0;
    if (value > 0 || key == "compute") parts.push_back({key, value, color});
  }
  const double step = r.number("/step_time_s");
  const std::string chart = svg::stacked_rows("breakdown-chart", {{"step", parts}}, 1, "seconds");
  return detail::section("breakdown", "Step time breakdown",
                         "Exposed time of the critical rank " + std::to_string(r.integer_or("/breakdown_rank", 0)) +
                             (r.has("/breakdown_pipeline_rank")
                                  ? " (pipeline stage " + std::to_string(r.integer("/breakdown_pipeline_rank")) + ", the busiest)"
                                  : std::string()) +
                             "; communication hidden under compute is not counted; step " + detail::duration_text(step) + ".",
                         chart + svg::legend(parts, 1, "s", true));
}

std::string timeline_chart(const ResultReader& r) {
  if (!r.has("/pipeline_timeline")) {
    return detail::section("pipeline", "Pipeline time line", "Not in this result (a replayed trace from elsewhere, or too many passes).", "");
  }
  std::vector<svg::Lane> lanes;
  double end = 0;
  for (const auto& stage : r.array("/pipeline_timeline/stages")) {
    const std::string where = "/pipeline_timeline/stages/" + std::to_string(lanes.size());
    svg::Lane lane{"stage " + std::to_string(r.integer_in(stage, "pipeline_rank", where)) + " (rank " +
                       std::to_string(r.integer_in(stage, "rank", where)) + ")",
                   {}};
    const auto& kind = stage.at("kind");
    for (std::size_t i = 0; i < kind.size(); ++i) {
      const std::string k = kind[i].get<std::string>();
      const double start = stage.at("start_s")[i].get<double>(), stop = stage.at("end_s")[i].get<double>();
      const int mb = r.whole_number(stage.at("microbatch").at(i), where + "/microbatch/" + std::to_string(i), -1, r.kLargestCount);
      const int chunk = r.whole_number(stage.at("chunk").at(i), where + "/chunk/" + std::to_string(i), -1, r.kLargestCount);
      const int style = k == "F" ? 0 : k == "B" ? 1 : 2;
      const std::string title = k == "O" ? "optimizer step"
                                         : std::string(k == "F" ? "forward" : "backward") + " micro-batch " + std::to_string(mb) +
                                               " chunk " + std::to_string(chunk);
      lane.spans.push_back({start, stop, style, title + ", " + detail::duration_text(stop - start)});
      end = std::max(end, stop);
    }
    lanes.push_back(std::move(lane));
  }
  end = std::max(end, r.number("/step_time_s"));
  const std::vector<svg::Part> key = {{"forward", 0, kPassColors[0]}, {"backward", 0, kPassColors[1]}, {"optimizer", 0, kPassColors[2]}};
  return detail::section("pipeline", "Pipeline time line of one step",
                         "Compute passes of the first rank of each pipeline stage; gaps are the bubble and waits for "
                         "communication. Hover a pass for its micro-batch and duration.",
                         svg::timeline("pipeline-chart", lanes, end, kPassColors) + svg::legend(key));
}

std::string memory_chart(const ResultReader& r) {
  std::vector<svg::Part> peak;
  for (const auto& [key, color] : kMemoryParts) peak.push_back({key, r.number("/memory/" + key + "_bytes"), color});
  const int peak_rank = r.integer("/memory/pipeline_rank");
  std::vector<svg::Row> rows{{"peak (stage " + std::to_string(peak_rank) + ")", peak}};
  for (const auto& b : r.array("/memory/by_pipeline_rank")) {
    const std::string where = "/memory/by_pipeline_rank/" + std::to_string(rows.size() - 1);
    rows.push_back({"stage " + std::to_string(r.integer_in(b, "pipeline_rank", where)), {{"total", b.at("total_bytes").get<double>(), "#9c9ede"}}});
  }
  const double hbm = r.number("/hbm_capacity_bytes");
  const bool oom = r.at("/oom").get<bool>();
  return detail::section("memory", "Memory per GPU against HBM",
                         std::string(oom ? "OUT OF MEMORY: " : "") + "peak " + detail::with_unit(r.number("/hbm_peak_bytes") / 1e9, "GB") +
                             " of " + detail::with_unit(hbm / 1e9, "GB") + " HBM.",
                         svg::stacked_rows("memory-chart", rows, 1e9, "GB", {hbm, "HBM " + detail::with_unit(hbm / 1e9, "GB")}) +
                             svg::legend(peak, 1e9, "GB", true));
}

std::string run_page(const ResultReader& r) {
  const json& scenario = r.at("/scenario");
  const json par = scenario.value("parallelism", json::object());
  std::ostringstream strategy;
  auto size = [&](const char* key) { return r.integer_in_or(par, key, "/scenario/parallelism", 1); };
  strategy << "TP" << size("tensor_model_parallel_size") << " PP" << size("pipeline_model_parallel_size");
  if (size("virtual_pipeline_model_parallel_size") > 1) strategy << " VP" << size("virtual_pipeline_model_parallel_size");
  strategy << " CP" << size("context_parallel_size") << " DP" << r.integer("/derived/data_parallel_size");
  if (size("expert_model_parallel_size") > 1) strategy << " EP" << size("expert_model_parallel_size");
  const std::string subtitle = r.text("/model/name") + " on " + std::to_string(r.integer("/derived/gpus")) + " x " +
                               r.text("/derived/gpu") + " (" + std::to_string(r.integer("/derived/nodes")) + " x " +
                               r.text("/derived/instance_type") + "), " + strategy.str() + ", " + r.text("/derived/precision");
  std::vector<std::pair<std::string, std::string>> facts = {
      {"step time", detail::duration_text(r.number("/step_time_s"))},
      {"tokens/s per GPU", detail::with_unit(r.number("/tokens_per_s_per_gpu"), "")},
      {"model TFLOP/s per GPU", detail::with_unit(r.number("/model_tflops_per_gpu"), "")},
      {"MFU (of BF16 peak)", detail::with_unit(100 * r.number("/mfu"), "%")},
      {"memory per GPU", detail::with_unit(r.number("/hbm_peak_bytes") / 1e9, "GB") + " of " +
                             detail::with_unit(r.number("/hbm_capacity_bytes") / 1e9, "GB") + (r.at("/oom").get<bool>() ? " (OOM)" : "")},
  };
  if (r.has("/error_band/description")) facts.push_back({"expected error (validation)", r.text("/error_band/description")});
  if (r.has("/usd_per_step")) {
    facts.push_back({"cost", "$" + detail::with_unit(r.number("/usd_per_step"), "per step") + ", $" +
                                 detail::with_unit(r.number("/usd_per_million_tokens"), "per million tokens")});
  }
  if (r.has("/busiest_link/name") && !r.text("/busiest_link/name").empty()) {
    facts.push_back({"busiest link", r.text("/busiest_link/name") + " (" +
                                         detail::with_unit(100 * r.number("/busiest_link/utilization"), "% busy") + ")"});
  }
  if (r.has("/checkpoint")) {
    facts.push_back({"checkpoint goodput", detail::with_unit(100 * r.number("/checkpoint/goodput"), "%")});
  }
  const std::string body = detail::section("summary", "Summary", "", detail::facts_table(facts)) + breakdown_chart(r) +
                           timeline_chart(r) + memory_chart(r);
  return detail::html_page(r.text_or("/name", "training step"), subtitle, body);
}

}  // namespace

std::string html_report(const json& result, const std::string& file) {
  const std::string schema = detail::result_schema(result, file);
  const ResultReader r(result, file);
  if (schema == "fmsim.run/1") return run_page(r);
  if (schema == "fmsim.serve/1") return detail::serve_page(r);
  if (schema == "fmsim.rl/1") return detail::rl_page(r);
  if (schema == "fmsim.cluster/1") return detail::cluster_page(r);
  return detail::checkpoint_page(r);
}

}  // namespace fmsim::report
