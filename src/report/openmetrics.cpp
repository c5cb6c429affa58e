// The OpenMetrics text writer (openmetrics.hpp): families, series, timestamped samples, `# EOF`.
#include "fmsim/report/openmetrics.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "fmsim/common/error.hpp"

namespace fmsim::report {

namespace {

std::string render_labels(const MetricLabels& own, const MetricLabels& common) {
  std::string out;
  for (const MetricLabels* set : {&own, &common}) {
    for (const auto& [k, v] : *set) {
      if (!out.empty()) out += ',';
      out += k + "=\"" + escape_label_value(v) + "\"";
    }
  }
  return out;
}

std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  char text[40];
  std::snprintf(text, sizeof text, "%.15g", v);
  return text;
}

std::string timestamp(long long t_ms) {
  char text[40];
  std::snprintf(text, sizeof text, "%lld.%03lld", t_ms / 1000, t_ms % 1000);
  return text;
}

bool valid_label_name(const std::string& name) {
  static const std::regex pattern("[a-zA-Z_][a-zA-Z0-9_]*");
  return std::regex_match(name, pattern) && name.rfind("__", 0) != 0;
}

}  // namespace

std::string escape_label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

const std::vector<std::string>& reserved_metric_labels() {
  static const std::vector<std::string> names = {
      "simulated", "scenario", "gpu", "Hostname", "modelName", "rank", "pipeline_rank", "device", "replica", "pool",
      "strategy", "tier", "quantile", "le", "job", "part", "phase", "xid", "state", "instance"};
  return names;
}

double parse_metrics_start(const std::string& text) {
  if (text == "now") {
    return std::floor(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  }
  static const std::regex unix_seconds("[0-9]{1,12}(\\.[0-9]+)?");
  if (std::regex_match(text, unix_seconds)) return std::stod(text);
  static const std::regex rfc3339("([0-9]{4})-([0-9]{2})-([0-9]{2})[T ]([0-9]{2}):([0-9]{2}):([0-9]{2})(\\.[0-9]+)?Z");
  std::smatch m;
  if (std::regex_match(text, m, rfc3339)) {
    std::tm tm{};
    tm.tm_year = std::stoi(m[1]) - 1900;
    tm.tm_mon = std::stoi(m[2]) - 1;
    tm.tm_mday = std::stoi(m[3]);
    tm.tm_hour = std::stoi(m[4]);
    tm.tm_min = std::stoi(m[5]);
    tm.tm_sec = std::stoi(m[6]);
    const bool in_range = tm.tm_mon >= 0 && tm.tm_mon < 12 && tm.tm_mday >= 1 && tm.tm_mday <= 31 && tm.tm_hour < 24 &&
                          tm.tm_min < 60 && tm.tm_sec < 61 && tm.tm_year >= 70;
    if (in_range) {
      std::tm asked = tm;
      const std::time_t t = timegm(&tm);  // normalises a day past the month's end (Feb 30): refused below
      if (tm.tm_mday == asked.tm_mday && tm.tm_mon == asked.tm_mon) {
        return static_cast<double>(t) + (m[7].length() ? std::stod("0" + m[7].str()) : 0.0);
      }
    }
  }
  throw InputError("--metrics-start: '" + text +
                   "' is not a time; expected \"now\", Unix seconds (1767225600) or an RFC 3339 UTC time (2026-01-01T00:00:00Z)");
}

std::pair<std::string, std::string> parse_metrics_label(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw InputError("--metrics-label: '" + text + "' is not KEY=VALUE (e.g. --metrics-label cluster=prod)");
  }
  const std::string key = text.substr(0, eq), value = text.substr(eq + 1);
  if (!valid_label_name(key)) {
    throw InputError("--metrics-label: '" + key + "' is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __)");
  }
  const auto& reserved = reserved_metric_labels();
  if (std::find(reserved.begin(), reserved.end(), key) != reserved.end()) {
    throw InputError("--metrics-label: label '" + key + "' clashes with a label fmsim's own series carry (" +
                     [&] {
                       std::string all;
                       for (const auto& r : reserved) all += (all.empty() ? "" : ", ") + r;
                       return all;
                     }() +
                     "); choose another name");
  }
  return {key, value};
}

void OpenMetricsWriter::family(const std::string& name, MetricType type, const std::string& help, const std::string& unit,
                               std::vector<double> buckets) {
  if (!unit.empty() && (name.size() < unit.size() || name.compare(name.size() - unit.size(), unit.size(), unit) != 0)) {
    throw std::logic_error("OpenMetrics family " + name + ": the name must end with its unit " + unit);
  }
  auto it = index_.find(name);
  if (it != index_.end()) {
    const Family& f = families_[it->second];
    if (f.type != type || f.buckets != buckets) throw std::logic_error("OpenMetrics family " + name + " declared twice with different types");
    return;
  }
  if (type == MetricType::histogram) buckets.push_back(INFINITY);
  index_[name] = families_.size();
  Family f;
  f.name = name;
  f.help = help;
  f.unit = unit;
  f.type = type;
  f.buckets = std::move(buckets);
  families_.push_back(std::move(f));
}

OpenMetricsWriter::Family& OpenMetricsWriter::find(const std::string& name, MetricType type) {
  auto it = index_.find(name);
  if (it == index_.end()) throw std::logic_error("OpenMetrics family " + name + " used before it was declared");
  Family& f = families_[it->second];
  if ((type == MetricType::histogram) != (f.type == MetricType::histogram)) {
    throw std::logic_error("OpenMetrics family " + name + ": sample of the wrong kind");
  }
  return f;
}

OpenMetricsWriter::Series& OpenMetricsWriter::series_of(Family& f, const MetricLabels& labels) {
  MetricLabels common = {{"simulated", "true"}};
  common.insert(common.end(), options_.labels.begin(), options_.labels.end());
  const std::string rendered = render_labels(labels, common);
  auto it = f.index.find(rendered);
  if (it == f.index.end()) {
    it = f.index.emplace(rendered, f.series.size()).first;
    f.series.push_back({rendered, {}});
  }
  return f.series[it->second];
}

namespace {

long long to_ms(double start_unix_s, double t_s) { return std::llround((start_unix_s + t_s) * 1000.0); }

}  // namespace

void OpenMetricsWriter::sample(const std::string& name, const MetricLabels& labels, double t_s, double value) {
  Family& f = find(name, MetricType::gauge);
  series_of(f, labels).points.push_back({to_ms(options_.start_unix_s, t_s), {value}});
}

void OpenMetricsWriter::histogram(const std::string& name, const MetricLabels& labels, double t_s,
                                  const std::vector<double>& cumulative, double sum) {
  Family& f = find(name, MetricType::histogram);
  if (cumulative.size() != f.buckets.size()) throw std::logic_error("OpenMetrics histogram " + name + ": bucket count");
  std::vector<double> values = cumulative;
  values.push_back(cumulative.back());
  values.push_back(sum);
  series_of(f, labels).points.push_back({to_ms(options_.start_unix_s, t_s), std::move(values)});
}

std::size_t OpenMetricsWriter::series_count() const {
  std::size_t n = 0;
  for (const auto& f : families_) n += f.series.size();
  return n;
}

std::string OpenMetricsWriter::text() const {
  std::ostringstream out;
  for (const auto& f : families_) {
    if (f.series.empty()) continue;
    const char* type = f.type == MetricType::gauge ? "gauge" : f.type == MetricType::counter ? "counter" : "histogram";
    out << "# TYPE " << f.name << " " << type << "\n";
    if (!f.unit.empty()) out << "# UNIT " << f.name << " " << f.unit << "\n";
    out << "# HELP " << f.name << " " << f.help << "\n";
    for (const auto& s : f.series) {
      std::vector<Point> points = s.points;
      std::stable_sort(points.begin(), points.end(), [](const Point& a, const Point& b) { return a.t_ms < b.t_ms; });
      for (std::size_t i = 0; i < points.size(); ++i) {
        if (i + 1 < points.size() && points[i + 1].t_ms == points[i].t_ms) continue;  // the last at one millisecond
        const Point& p = points[i];
        const std::string ts = timestamp(p.t_ms);
        const std::string braces = s.labels.empty() ? "" : s.labels;
        if (f.type == MetricType::histogram) {
          for (std::size_t b = 0; b < f.buckets.size(); ++b) {
            out << f.name << "_bucket{" << braces << (braces.empty() ? "" : ",") << "le=\"" << number(f.buckets[b]) << "\"} "
                << number(p.values[b]) << " " << ts << "\n";
          }
          out << f.name << "_count{" << braces << "} " << number(p.values[f.buckets.size()]) << " " << ts << "\n";
          out << f.name << "_sum{" << braces << "} " << number(p.values[f.buckets.size() + 1]) << " " << ts << "\n";
        } else {
          out << f.name << (f.type == MetricType::counter ? "_total" : "") << "{" << braces << "} " << number(p.values[0])
              << " " << ts << "\n";
        }
      }
    }
  }
  out << "# EOF\n";
  return out.str();
}

std::vector<double> sample_grid(double end_s, int max_points) {
  const double end = std::max(end_s, 0.0);
  const int intervals_cap = std::max(1, max_points - 1);
  const double step = std::max(1e-3, std::ceil(end / intervals_cap * 1000.0) / 1000.0);
  std::vector<double> t;
  for (int i = 0;; ++i) {
    const double at = i * step;
    if (at >= end - 1e-9) {
      t.push_back(end);
      break;
    }
    t.push_back(at);
  }
  return t;
}

}  // namespace fmsim::report
