// Request generation (offline, Poisson) and trace reading (JSON Lines, CSV).
#include "fmsim/inference/requests.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"

namespace fmsim::inference {
namespace {

/// The most tokens one request's prompt or output may have (kMaxTokens in serve_scenario.cpp).
constexpr double kMaxRequestTokens = 1 << 24;
/// As many requests as a generated workload may have (serve_scenario.cpp).
constexpr std::size_t kMaxTraceRequests = 10000000;

/// Uniform in (0, 1) from 53 random bits: the same numbers on every platform (std:: distributions are not).
double unit(std::mt19937_64& rng) { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53; }

double standard_normal(std::mt19937_64& rng) {
  return std::sqrt(-2.0 * std::log(unit(rng))) * std::cos(2.0 * M_PI * unit(rng));
}

int draw_length(const LengthSpec& spec, std::mt19937_64& rng) {
  double value = spec.mean;
  switch (spec.kind) {
    case LengthSpec::Kind::fixed: break;
    case LengthSpec::Kind::uniform:
      value = spec.min + std::floor(unit(rng) * (spec.max - spec.min + 1));
      break;
    case LengthSpec::Kind::lognormal:
      // Mean of the distribution (not of its log) is `mean`: mu = ln(mean) - sigma^2 / 2.
      value = std::exp(std::log(spec.mean) - 0.5 * spec.sigma * spec.sigma + spec.sigma * standard_normal(rng));
      break;
  }
  // Without a "max" a lognormal tail still stops at the per-request limit (a draw of e^29 tokens was
  // converted to int as it was); min() first, so that llround never sees a value beyond long long.
  const double cap = spec.max > 0 ? spec.max : kMaxRequestTokens;
  long long tokens = std::llround(std::min(value, cap));
  tokens = std::max<long long>(tokens, spec.min);
  return static_cast<int>(tokens);
}

[[noreturn]] void trace_error(const std::filesystem::path& path, int line, const std::string& what) {
  throw InputError(path.string() + ":" + std::to_string(line) + ": " + what);
}

int positive_count(const std::filesystem::path& path, int line, const std::string& key, double value) {
  // The same limits as generated workloads: 16M tokens per request, 4096 samples.
  const double most = key == "samples" ? 4096.0 : 16777216.0;
  if (!(value >= 1) || value != std::floor(value) || value > most) {
    char text[64];
    std::snprintf(text, sizeof text, "%.17g", value);
    trace_error(path, line, key + " = " + text + ": expected a whole number from 1 to " + std::to_string(static_cast<long long>(most)));
  }
  return static_cast<int>(value);
}

/// A plain decimal number as JSON writes them ("0.25", "812", "1.5e3"): no hex, inf, nan, or spaces.
bool decimal_number(const std::string& text, double& value) {
  if (text.empty() || text.find_first_not_of("0123456789.eE+-") != std::string::npos) return false;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value, std::chars_format::general);
  return error == std::errc() && stop == end && std::isfinite(value);
}

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream stream(line);
  std::string cell;
  while (std::getline(stream, cell, ',')) {
    cell.erase(0, cell.find_first_not_of(" \t\r"));
    cell.erase(cell.find_last_not_of(" \t\r") + 1);
    cells.push_back(cell);
  }
  return cells;
}

}  // namespace

std::vector<Request> read_trace(const std::filesystem::path& path, int default_samples) {
  config::require_regular_file(path, "workload.trace");
  std::ifstream in(path);
  if (!in) throw InputError(path.string() + ": cannot open the trace file (workload.trace)");
  const bool csv = path.extension() == ".csv";
  std::vector<Request> requests;
  std::string line;
  int number = 0;
  int arrival_column = -1, input_column = -1, output_column = -1, prefix_id_column = -1, prefix_tokens_column = -1;
  // A shared prefix: its id (a whole number >= 0) and its length (1 to the prompt's length).
  auto set_prefix = [&](Request& request, double id, double tokens) {
    if (!(id >= 0) || id != std::floor(id) || id > 2147483647.0) {
      char text[64];
      std::snprintf(text, sizeof text, "%.17g", id);
      trace_error(path, number, std::string("prefix_id = ") + text + ": expected a whole number >= 0");
    }
    request.prefix_group = static_cast<int>(id);
    request.prefix_tokens = positive_count(path, number, "prefix_tokens", tokens);
    if (request.prefix_tokens > request.input_tokens) {
      trace_error(path, number, "prefix_tokens = " + std::to_string(request.prefix_tokens) + ": expected at most input_tokens (" +
                                    std::to_string(request.input_tokens) + "), the prefix being the prompt's first tokens");
    }
  };
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Request request;
    request.samples = default_samples;
    if (csv) {
      auto cells = split_csv(line);
      if (arrival_column < 0) {
        for (int i = 0; i < static_cast<int>(cells.size()); ++i) {
          if (cells[i] == "arrival_s") arrival_column = i;
          if (cells[i] == "input_tokens") input_column = i;
          if (cells[i] == "output_tokens") output_column = i;
          if (cells[i] == "prefix_id") prefix_id_column = i;
          if (cells[i] == "prefix_tokens") prefix_tokens_column = i;
        }
        if (arrival_column < 0 || input_column < 0 || output_column < 0) {
          trace_error(path, number, "expected a CSV header naming arrival_s, input_tokens and output_tokens");
        }
        continue;
      }
      if ((prefix_id_column < 0) != (prefix_tokens_column < 0)) {
        trace_error(path, number, "expected both prefix_id and prefix_tokens columns, or neither");
      }
      const int needed = std::max({arrival_column, input_column, output_column, prefix_id_column, prefix_tokens_column});
      if (static_cast<int>(cells.size()) <= needed) trace_error(path, number, "expected " + std::to_string(needed + 1) + " columns");
      double values[3];
      const int columns[3] = {arrival_column, input_column, output_column};
      for (int i = 0; i < 3; ++i) {
        if (!decimal_number(cells[columns[i]], values[i])) {
          trace_error(path, number, quote_for_message(cells[columns[i]]) + " is not a decimal number (like 0.25, 812 or 1e3)");
        }
      }
      request.arrival_s = values[0];
      request.input_tokens = positive_count(path, number, "input_tokens", values[1]);
      request.output_tokens = positive_count(path, number, "output_tokens", values[2]);
      if (prefix_id_column >= 0) {
        double id = 0, tokens = 0;
        for (auto [column, value] : {std::pair{prefix_id_column, &id}, std::pair{prefix_tokens_column, &tokens}}) {
          if (!decimal_number(cells[column], *value)) {
            trace_error(path, number, quote_for_message(cells[column]) + " is not a decimal number (like 0.25, 812 or 1e3)");
          }
        }
        set_prefix(request, id, tokens);
      }
    } else {
      nlohmann::json object = nlohmann::json::parse(line, nullptr, false);
      if (object.is_discarded() || !object.is_object()) trace_error(path, number, "expected one JSON object per line");
      for (const char* key : {"arrival_s", "input_tokens", "output_tokens"}) {
        if (!object.contains(key) || !object[key].is_number()) trace_error(path, number, std::string("expected a number for \"") + key + "\"");
      }
      for (const auto& item : object.items()) {
        if (item.key() != "arrival_s" && item.key() != "input_tokens" && item.key() != "output_tokens" && item.key() != "samples" &&
            item.key() != "prefix_id" && item.key() != "prefix_tokens") {
          trace_error(path, number, "unknown key \"" + item.key() + "\" (known: arrival_s, input_tokens, output_tokens, samples, prefix_id, prefix_tokens)");
        }
      }
      request.arrival_s = object["arrival_s"].get<double>();
      request.input_tokens = positive_count(path, number, "input_tokens", object["input_tokens"].get<double>());
      request.output_tokens = positive_count(path, number, "output_tokens", object["output_tokens"].get<double>());
      if (object.contains("samples")) {
        if (!object["samples"].is_number()) trace_error(path, number, "expected a number for \"samples\"");
        request.samples = positive_count(path, number, "samples", object["samples"].get<double>());
      }
      if (object.contains("prefix_id") != object.contains("prefix_tokens")) {
        trace_error(path, number, "expected both \"prefix_id\" and \"prefix_tokens\", or neither");
      }
      if (object.contains("prefix_id")) {
        for (const char* key : {"prefix_id", "prefix_tokens"}) {
          if (!object[key].is_number()) trace_error(path, number, std::string("expected a number for \"") + key + "\"");
        }
        set_prefix(request, object["prefix_id"].get<double>(), object["prefix_tokens"].get<double>());
      }
    }
    if (!(request.arrival_s >= 0) || !std::isfinite(request.arrival_s)) {
      trace_error(path, number, "arrival_s = " + std::to_string(request.arrival_s) + ": expected seconds >= 0");
    }
    requests.push_back(request);
    if (requests.size() > kMaxTraceRequests) {
      trace_error(path, number, "more than " + std::to_string(kMaxTraceRequests) + " requests (the most one run replays)");
    }
  }
  if (requests.empty()) throw InputError(path.string() + ": the trace holds no requests");
  std::stable_sort(requests.begin(), requests.end(), [](const Request& a, const Request& b) { return a.arrival_s < b.arrival_s; });
  for (std::size_t i = 0; i < requests.size(); ++i) requests[i].id = static_cast<int>(i);
  return requests;
}

std::vector<Request> make_requests(const WorkloadSpec& workload) {
  if (workload.arrival == WorkloadSpec::Arrival::trace) return read_trace(workload.trace, workload.samples_per_prompt);
  std::mt19937_64 lengths(workload.seed), gaps(workload.seed ^ 0x9e3779b97f4a7c15ULL), prefixes(workload.seed ^ 0xbf58476d1ce4e5b9ULL);
  std::vector<Request> requests(static_cast<std::size_t>(workload.requests));
  double clock = 0;
  for (int i = 0; i < workload.requests; ++i) {
    Request& r = requests[static_cast<std::size_t>(i)];
    r.id = i;
    r.input_tokens = draw_length(workload.input, lengths);
    r.output_tokens = draw_length(workload.output, lengths);
    r.samples = workload.samples_per_prompt;
    if (workload.prefix_groups > 0) {
      // Its own stream: adding prefixes keeps every request's lengths and arrival.
      r.prefix_group = std::min(workload.prefix_groups - 1, static_cast<int>(unit(prefixes) * workload.prefix_groups));
      r.prefix_tokens = workload.prefix_tokens;
      r.input_tokens += workload.prefix_tokens;
    }
    if (workload.arrival == WorkloadSpec::Arrival::poisson) {
      clock += -std::log(unit(gaps)) / workload.rate_per_s;
      r.arrival_s = clock;
    }
  }
  return requests;
}

}  // namespace fmsim::inference
