// Job traces for `fmsim cluster` (job_trace.hpp): JSON Lines, one job per line, checked line by line;
// `sacct --parsable2` exports here, `sacct --json` ones in sacct_json.cpp.
#include "fmsim/cluster/job_trace.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"
#include "fmsim/config/object_reader.hpp"
#include "sacct_support.hpp"

namespace fmsim::cluster {

namespace {

using detail::kMaxJobs;
constexpr double kMaxSeconds = 3.2e9;  // about 100 years: beyond it a run never ends in any useful sense

/// A time key: a quantity ("90m", "2h") or a number of seconds.
double seconds_of(config::ObjectReader& r, const nlohmann::json& object, const std::string& key, double fallback, bool required) {
  if (!object.contains(key)) {
    if (required) r.required_value(key);  // throws, naming the key
    return fallback;
  }
  const auto& value = object[key];
  double s = 0;
  if (value.is_number()) {
    s = value.get<double>();
    r.required_value(key);  // mark as read
  } else {
    s = r.required_quantity(key, units::Dimension::time);
  }
  if (!std::isfinite(s) || s < 0 || s > kMaxSeconds) r.fail(key, "a time from 0 to 100 years, like \"90m\", \"2h\" or a number of seconds");
  return s;
}

/// "[D-]HH:MM:SS", "MM:SS" or "MM:SS.mmm" (sacct's Elapsed and Timelimit) in seconds; -1 when malformed.
double slurm_duration(const std::string& text) {
  double days = 0;
  std::string rest = text;
  if (const auto dash = text.find('-'); dash != std::string::npos) {
    try {
      days = std::stod(text.substr(0, dash));
    } catch (const std::exception&) {
      return -1;
    }
    rest = text.substr(dash + 1);
  }
  std::vector<double> parts;
  std::size_t start = 0;
  while (start <= rest.size()) {
    const auto colon = rest.find(':', start);
    const std::string piece = rest.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (piece.empty() || piece.find_first_not_of("0123456789.") != std::string::npos) return -1;
    try {  // "..." passes the character check but is no number (a fuzzed sacct line)
      parts.push_back(std::stod(piece));
    } catch (const std::exception&) {
      return -1;
    }
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (parts.size() < 2 || parts.size() > 3) return -1;
  double seconds = 0;
  for (double part : parts) seconds = seconds * 60 + part;
  return days * 86400 + seconds;
}

/// "2024-05-01T10:00:00" as seconds since 1970 (UTC; only differences matter); -1 when malformed.
double slurm_timestamp(const std::string& text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &s, &tail) != 6) return -1;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return -1;
  // Days from the civil date (Howard Hinnant's algorithm).
  const int yy = y - (mo <= 2 ? 1 : 0);
  const int era = (yy >= 0 ? yy : yy - 399) / 400;
  const int yoe = yy - era * 400;
  const int doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const double days = era * 146097.0 + doe - 719468;
  return days * 86400 + h * 3600 + mi * 60 + s;
}

/// `sacct --parsable2` output (a header line starting with JobID|): one job per allocation line; job
/// steps (JobID with a dot) and jobs that never ran (Elapsed 0, or PENDING / RUNNING) are skipped.
std::vector<JobSpec> read_sacct(std::istream& in, const std::string& file, int cluster_nodes) {
  std::string header;
  std::getline(in, header);
  std::vector<std::string> columns;
  auto split = [](const std::string& line) {
    std::vector<std::string> cells;
    std::size_t start = 0;
    while (true) {
      const auto bar = line.find('|', start);
      cells.push_back(line.substr(start, bar == std::string::npos ? std::string::npos : bar - start));
      if (bar == std::string::npos) break;
      start = bar + 1;
    }
    if (!cells.empty() && !cells.back().empty() && cells.back().back() == '\r') cells.back().pop_back();
    return cells;
  };
  columns = split(header);
  auto column = [&](const std::string& name) {
    for (std::size_t i = 0; i < columns.size(); ++i) {
      if (columns[i] == name) return static_cast<int>(i);
    }
    return -1;
  };
  const int id = column("JobID"), submit = column("Submit"), elapsed = column("Elapsed"), nodes_col = column("NNodes");
  const int limit = column("Timelimit"), partition = column("Partition"), priority = column("Priority"), state = column("State");
  if (id < 0 || submit < 0 || elapsed < 0 || nodes_col < 0) {
    throw InputError(file + ":1: a sacct --parsable2 header needs the columns JobID, Submit, Elapsed and NNodes (sacct --parsable2 "
                     "--format=JobID,Submit,Elapsed,NNodes,Timelimit,Partition,Priority,State); found " + header);
  }
  std::vector<JobSpec> jobs;
  std::string line;
  int number = 1;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = file + ":" + std::to_string(number);
    const auto cells = split(line);
    if (cells.size() != columns.size()) {
      throw InputError(where + ": " + std::to_string(cells.size()) + " fields where the header has " + std::to_string(columns.size()));
    }
    if (cells[id].find('.') != std::string::npos) continue;  // a job step (batch, extern, srun steps)
    const std::string st = state >= 0 ? cells[state] : "";
    if (st.rfind("PENDING", 0) == 0 || st.rfind("RUNNING", 0) == 0) continue;
    JobSpec job;
    job.id = cells[id];
    job.duration_s = slurm_duration(cells[elapsed]);
    if (job.duration_s < 0) throw InputError(where + ": Elapsed '" + cells[elapsed] + "': expected [D-]HH:MM:SS");
    if (job.duration_s == 0) continue;  // never ran (cancelled while pending)
    job.submit_s = slurm_timestamp(cells[submit]);
    if (job.submit_s < 0) throw InputError(where + ": Submit '" + cells[submit] + "': expected a time like 2024-05-01T10:00:00");
    char* end = nullptr;
    const long n = std::strtol(cells[nodes_col].c_str(), &end, 10);
    if (cells[nodes_col].empty() || *end != '\0' || n < 1) throw InputError(where + ": NNodes '" + cells[nodes_col] + "': expected a node count >= 1");
    if (n > cluster_nodes) {
      throw InputError(where + ": NNodes " + cells[nodes_col] + ": more than the cluster's " + std::to_string(cluster_nodes) +
                       " nodes (this job can never start here)");
    }
    job.nodes = static_cast<int>(n);
    job.time_limit_s = job.duration_s;
    if (limit >= 0) {
      const double l = slurm_duration(cells[limit]);
      if (l > job.duration_s) job.time_limit_s = l;  // UNLIMITED, Partition_Limit or a timeout's overrun: the run time
    }
    if (partition >= 0 && !cells[partition].empty()) job.queue = cells[partition];
    if (priority >= 0 && !cells[priority].empty()) {
      const long p = std::strtol(cells[priority].c_str(), &end, 10);
      if (*end == '\0') job.priority = static_cast<int>(std::clamp<long>(p, -1000000, 1000000));
    }
    jobs.push_back(std::move(job));
    if (jobs.size() > kMaxJobs) throw InputError(where + ": more than " + std::to_string(kMaxJobs) + " jobs (the most one run simulates)");
  }
  return detail::from_first_submission(std::move(jobs), file);
}

}  // namespace

std::vector<JobSpec> read_job_trace(const std::filesystem::path& path, int gpus_per_node, int cluster_nodes) {
  config::require_regular_file(path, "the job trace");
  std::ifstream in(path);
  if (!in) throw InputError(path.string() + ": cannot be read");
  if (in.peek() == 'J') {
    std::string first;
    std::getline(in, first);
    in.clear();
    in.seekg(0);
    if (first.rfind("JobID|", 0) == 0) return read_sacct(in, path.string(), cluster_nodes);
  }
  // `sacct --json`: one JSON document {"jobs": [...]} (a JSON Lines trace of several jobs is not one document).
  if (in.peek() == '{' || in.peek() == ' ' || in.peek() == '\n') {
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
    if (!doc.is_discarded() && detail::is_sacct_json(doc)) return detail::read_sacct_json(doc, path.string(), cluster_nodes);
    in.clear();
    in.seekg(0);
  }
  std::vector<JobSpec> jobs;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const std::string where = path.string() + ":" + std::to_string(number);
    const config::JsonFile parsed = config::parse_json_text(line, where);
    if (!parsed.root.is_object()) throw InputError(where + ": expected one JSON object per line (a job)");
    config::ObjectReader r(parsed.root, where);
    JobSpec job;
    job.id = r.string_or("id", "job-" + std::to_string(jobs.size() + 1));
    job.submit_s = seconds_of(r, parsed.root, "submit", 0, false);
    if (r.has("nodes") == r.has("gpus")) r.fail("nodes", "either \"nodes\" or \"gpus\" (a multiple of " + std::to_string(gpus_per_node) + "), not both nor neither");
    if (r.has("nodes")) {
      job.nodes = static_cast<int>(r.required_int("nodes", 1));
    } else {
      const auto gpus = r.required_int("gpus", 1);
      if (gpus % gpus_per_node != 0) {
        r.fail("gpus", "a multiple of the cluster's " + std::to_string(gpus_per_node) + " GPUs per node (jobs take whole nodes)");
      }
      job.nodes = static_cast<int>(gpus / gpus_per_node);
    }
    if (job.nodes > cluster_nodes) {
      r.fail(r.has("nodes") ? "nodes" : "gpus", "at most the cluster's " + std::to_string(cluster_nodes) + " nodes (" +
                                                   std::to_string(cluster_nodes * gpus_per_node) + " GPUs): this job can never start");
    }
    if (r.has("scenario") == r.has("duration")) {
      r.fail("duration", "either \"duration\" (a time) or \"scenario\" (a training scenario) with \"steps\", not both nor neither");
    }
    if (r.has("scenario")) {
      const auto scenario = (path.parent_path() / r.required_string("scenario")).lexically_normal();
      config::require_regular_file(scenario, "the job's training scenario (/scenario of " + where + ")");
      job.scenario = std::filesystem::absolute(scenario).string();
      job.steps = r.required_int("steps", 1, 1000000000);
      job.time_limit_s = seconds_of(r, parsed.root, "time_limit", 0, false);
    } else {
      if (r.has("steps")) r.fail("steps", "no steps without a scenario (a duration is the run time)");
      job.duration_s = seconds_of(r, parsed.root, "duration", 0, true);
      if (!(job.duration_s > 0)) r.fail("duration", "a run time above zero");
      job.time_limit_s = seconds_of(r, parsed.root, "time_limit", job.duration_s, false);
      if (job.time_limit_s < job.duration_s) {
        r.fail("time_limit", "at least the duration (a job that outlives its limit would be killed; give the duration it really runs)");
      }
    }
    job.priority = static_cast<int>(r.int_or("priority", 0, -1000000, 1000000));
    job.queue = r.string_or("queue", "default");
    job.checkpoint_interval_s = seconds_of(r, parsed.root, "checkpoint_interval", 0, false);
    if (r.has("min_nodes")) {
      job.min_nodes = static_cast<int>(r.required_int("min_nodes", 1, job.nodes));
    }
    if (r.has("topology")) {
      const std::string t = r.string_or("topology", "");
      if (t == "preferred") job.topology = TopologyRequest::preferred;
      else if (t == "required") job.topology = TopologyRequest::required;
      else r.fail("topology", "preferred or required (its nodes under one leaf switch or NVLink domain)");
      if (job.topology == TopologyRequest::required && job.min_nodes > 0) r.fail("topology", "required with min_nodes: an elastic job regrows anywhere");
    }
    if (r.has("topology_level")) {
      const std::string level = r.string_or("topology_level", "");
      if (level == "block") job.topology_level = TopologyLevel::block;
      else if (level != "group") r.fail("topology_level", "group (a leaf switch or NVLink domain, the default) or block (a block of them under one upper switch)");
      if (job.topology == TopologyRequest::none) r.fail("topology_level", "given with a topology (preferred or required)");
    }
    r.reject_unknown_keys();
    jobs.push_back(std::move(job));
    if (jobs.size() > kMaxJobs) throw InputError(where + ": more than " + std::to_string(kMaxJobs) + " jobs (the most one run simulates)");
  }
  if (jobs.empty()) throw InputError(path.string() + ": the trace holds no jobs");
  std::stable_sort(jobs.begin(), jobs.end(), [](const JobSpec& a, const JobSpec& b) { return a.submit_s < b.submit_s; });
  return jobs;
}

}  // namespace fmsim::cluster
