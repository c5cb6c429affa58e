// fmsim validate [--measurements FILE] [--out DIR] [--only LIST] [--bands FILE]
// Runs the validation suite against published measurements: every case of the measurements file (the
// calibration set by default) per category (collectives, serving, training, RL), each category's script of
// benchmarks/calibration with this fmsim binary, their tables (markdown) and raw rows (JSON) in DIR, the
// error bands fmsim states with its results recomputed from them, and one document, DIR/validation.md, in
// the form of docs/validation.md's tables. `make validate` is this command with the shipped bands file.
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "cleanup.hpp"
#include "progress.hpp"

#include "fmsim/cli/commands.hpp"
#include "fmsim/cli/output_file.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"

#ifndef FMSIM_SOURCE_DIR
#define FMSIM_SOURCE_DIR "."
#endif

namespace fmsim::cli {
namespace {

namespace fs = std::filesystem;

struct ValidateOptions {
  std::string measurements, out_dir = "fmsim-validation", only = "collectives,serving,training,rl", bands;
};

struct Category {
  const char* name;
  const char* script;
  const char* took;             ///< the time it takes, for the progress line
  bool takes_measurements;      ///< RL replays its own held-out file (benchmarks/calibration/published_nemo_rl.json)
};

constexpr Category kCategories[] = {
    {"collectives", "validate_collectives.py", "about a minute", true},
    {"serving", "validate_serving.py", "about 10 s", true},
    {"training", "validate_training.py", "3-8 minutes", true},
    {"rl", "validate_rl.py", "about 30 s", false},
};

std::string self_path() {
  char self[4096];
  const ssize_t length = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0) throw InternalError("cannot find the fmsim executable (/proc/self/exe)");
  self[length] = '\0';
  return self;
}

/// A private copy of this executable for the scripts to run: a rebuild of build/fmsim while the validation
/// runs (the linker replaces the file) would otherwise stop a script or mix two binaries in one set of
/// tables. Removed when the validation ends, or by the cleanup handlers if a signal ends it.
class ExecutableSnapshot {
 public:
  ExecutableSnapshot() {
    namespace fs = std::filesystem;
    std::string name = (fs::temp_directory_path() / "fmsim-validate-XXXXXX").string();
    const int fd = ::mkstemp(name.data());
    if (fd < 0) throw InternalError("fmsim validate: cannot create a temporary file in " + fs::temp_directory_path().string() + ": " + std::strerror(errno));
    ::close(fd);
    path_ = name;
    cleanup_ = register_temporary(path_);
    std::error_code error;
    fs::copy_file(self_path(), path_, fs::copy_options::overwrite_existing, error);
    if (!error) fs::permissions(path_, fs::perms::owner_read | fs::perms::owner_exec, fs::perm_options::replace, error);
    if (error) throw InternalError("fmsim validate: cannot copy the fmsim executable to " + path_ + ": " + error.message());
  }
  ~ExecutableSnapshot() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
    forget_temporary(cleanup_);
  }
  ExecutableSnapshot(const ExecutableSnapshot&) = delete;
  ExecutableSnapshot& operator=(const ExecutableSnapshot&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int cleanup_ = -1;
};

/// Runs a program with this process's stderr, its stdout sent to stderr too (progress, not results), and
/// returns its exit status; 127: it could not be started. It dies with fmsim.
int run_program(const std::vector<std::string>& arguments) {
  std::vector<std::string> text = arguments;
  std::vector<char*> argv;
  for (auto& t : text) argv.push_back(t.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) throw InternalError(std::string("fork() failed: ") + std::strerror(errno));
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(STDERR_FILENO, STDOUT_FILENO);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) throw InternalError(std::string("waitpid() failed: ") + std::strerror(errno));
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The lines of `markdown` from the first line starting with `start` to the first empty line after it:
/// a category's summary table.
std::string summary_of(const std::string& markdown, const std::string& start) {
  const auto at = markdown.find(start);
  if (at == std::string::npos) return "";
  const auto end = markdown.find("\n\n", at);
  return markdown.substr(at, end == std::string::npos ? std::string::npos : end - at) + "\n";
}

/// The whole line of `markdown` that contains `text` ("" if none).
std::string line_with(const std::string& markdown, const std::string& text) {
  const auto at = markdown.find(text);
  if (at == std::string::npos) return "";
  const auto begin = markdown.rfind('\n', at);
  const auto start = begin == std::string::npos ? 0 : begin + 1;
  return markdown.substr(start, markdown.find('\n', at) - start) + "\n";
}

int run_validate(const ValidateOptions& o) {
  const fs::path scripts = fs::path(FMSIM_SOURCE_DIR) / "benchmarks" / "calibration";
  if (!fs::is_directory(scripts)) {
    throw InputError("fmsim validate runs the validation scripts of " + scripts.string() +
                     ", which this installation does not have (run it from a build of the source tree)");
  }
  std::vector<const Category*> chosen;
  std::stringstream list(o.only);
  std::string name;
  while (std::getline(list, name, ',')) {
    const auto* c = std::find_if(std::begin(kCategories), std::end(kCategories), [&](const Category& k) { return name == k.name; });
    if (c == std::end(kCategories)) throw InputError("--only '" + o.only + "': '" + name + "': expected a comma-separated list of collectives, serving, training, rl");
    if (std::find(chosen.begin(), chosen.end(), c) == chosen.end()) chosen.push_back(c);
  }
  const auto includes = [&](const char* n) { return std::any_of(chosen.begin(), chosen.end(), [&](const Category* c) { return std::strcmp(c->name, n) == 0; }); };
  const bool bands = includes("collectives") && includes("serving") && includes("training");  // what the bands need
  if (!o.bands.empty() && !bands) {
    throw InputError("--bands needs the collectives, serving and training categories (--only '" + o.only + "' leaves one out)");
  }
  const std::string measurements =
      o.measurements.empty() ? (fs::path(FMSIM_SOURCE_DIR) / ".." / "shared" / "calibration" / "measurements.json").lexically_normal().string()
                             : o.measurements;
  config::require_regular_file(measurements, "the measurements file (--measurements)");
  (void)config::load_json_file(measurements);  // a malformed file: one message here, not one per script
  std::error_code error;
  fs::create_directories(o.out_dir, error);
  if (error || !fs::is_directory(o.out_dir)) throw InputError("--out '" + o.out_dir + "': cannot create the directory (" + error.message() + ")");
  const fs::path out(o.out_dir);
  const ExecutableSnapshot snapshot;
  const std::string& fmsim = snapshot.path();
  std::string summary;
  for (const Category* c : chosen) {
    progress()->info("validate: {} ({}) ...", c->name, c->took);
    std::vector<std::string> args = {"python3", (scripts / c->script).string(), "--fmsim", fmsim};
    if (c->takes_measurements) args.insert(args.end(), {"--measurements", measurements});
    args.insert(args.end(), {"--markdown", (out / (std::string(c->name) + ".md")).string(), "--json", (out / (std::string(c->name) + ".json")).string()});
    const int status = run_program(args);
    if (status == 127) throw InputError("fmsim validate needs python3 to run " + std::string(c->script) + " (make test-deps installs it)");
    if (status != 0) throw InternalError(std::string(c->script) + " failed (exit " + std::to_string(status) + "); its messages are above");
  }
  if (bands) {
    const std::string bands_file = o.bands.empty() ? (out / "error_bands.json").string() : o.bands;
    const int status = run_program({"python3", (scripts / "error_bands.py").string(), "--training", (out / "training.json").string(),
                                    "--serving", (out / "serving.json").string(), "--collectives", (out / "collectives.json").string(),
                                    "--measurements", measurements, "--out", bands_file, "--markdown", (out / "error_bands.md").string()});
    if (status != 0) throw InternalError("error_bands.py failed (exit " + std::to_string(status) + "); its messages are above");
  }
  // One document, in the order of docs/validation.md, and each part's summary on stdout.
  std::string document = "# Validation (generated by fmsim validate)\n\nMeasurements: " + measurements + "\n\n";
  if (bands) {
    document += "## Error bands\n\n" + read_text(out / "error_bands.md") + "\n";
    summary += "Error bands (per validation group):\n\n" + read_text(out / "error_bands.md") + "\n";
  }
  const std::pair<const char*, const char*> parts[] = {
      {"collectives", "## Collectives"}, {"training", "## Training throughput"}, {"serving", "## Serving"}, {"rl", "## RL post-training (held out: NeMo RL's published step times)"}};
  for (const auto& [n, heading] : parts) {
    if (!includes(n)) continue;
    const std::string md = read_text(out / (std::string(n) + ".md"));
    document += std::string(heading) + "\n\n" + md + "\n";
    if (bands) continue;
    // Its summary: the group table (collectives: the one under "Summary per group"; training: by generation,
    // model kind and workload, and its total line), RL's total line.
    const std::string table = std::strcmp(n, "rl") == 0          ? line_with(md, "rows: mean absolute error")
                              : std::strcmp(n, "collectives") == 0 ? summary_of(md.substr(std::min(md.size(), md.find("Summary per group"))), "| ")
                              : std::strcmp(n, "training") == 0    ? summary_of(md, "| generation |") + line_with(md, "All simulated rows")
                                                                   : summary_of(md, "| group |");
    summary += std::string(n) + ":\n\n" + (table.empty() ? std::string("(see ") + n + ".md)\n" : table) + "\n";
  }
  write_output((out / "validation.md").string(), document);
  write_output("-", summary + "wrote " + (out / "validation.md").string() + " (each category's tables and rows: " + out.string() + "/*.md, *.json)" +
                        (bands ? ", error bands " + (o.bands.empty() ? (out / "error_bands.json").string() : o.bands) : "") + "\n");
  return 0;
}

}  // namespace

void register_validate(CLI::App& app, const GlobalOptions&, Action& action) {
  auto o = std::make_shared<ValidateOptions>();
  CLI::App* sub = app.add_subcommand("validate", "run the validation suite against published measurements: per-group errors, tables, error bands");
  sub->add_option("--measurements", o->measurements, "measurements file (default: ../shared/calibration/measurements.json beside the source tree)");
  sub->add_option("--out", o->out_dir, "directory for the tables (markdown), raw rows (JSON) and validation.md (default fmsim-validation)");
  sub->add_option("--only", o->only, "comma-separated categories: collectives, serving, training, rl (default all)");
  sub->add_option("--bands", o->bands, "write the error bands here (default OUT/error_bands.json; make validate: configs/validation/error_bands.json)");
  sub->callback([o, &action] { action = [o] { return run_validate(*o); }; });
}

}  // namespace fmsim::cli
