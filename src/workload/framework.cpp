// Stack files (configs/stacks/NAME.json): one software stack, its releases, each release's mechanisms
// and the settings it uses by default. docs/formats.md "Stack files".
#include "fmsim/workload/framework.hpp"

#include <algorithm>
#include <cstdlib>

#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"
#include "fmsim/config/object_reader.hpp"
#include "fmsim/workload/scenario.hpp"

namespace fmsim::workload {
namespace {

using nlohmann::json;

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out.empty() ? "none found" : out;
}

/// A stack name is a file stem: letters, digits, '-', '_' and '.', so that it cannot leave the directory.
bool valid_stack_name(const std::string& name) {
  if (name.empty() || name.size() > 64 || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
  });
}

void read_fusions(config::ObjectReader& r, Fusions& f) {
  f.norm = r.bool_or("norm", f.norm);
  f.rope = r.bool_or("rope", f.rope);
  f.rope_attention_factor = r.bool_or("rope_attention_factor", f.rope_attention_factor);
  f.bias_activation = r.bool_or("bias_activation", f.bias_activation);
  f.cross_entropy = r.bool_or("cross_entropy", f.cross_entropy);
  f.permute = r.bool_or("permute", f.permute);
  f.router = r.bool_or("router", f.router);
  r.reject_unknown_keys();
}

void check_defaults(config::ObjectReader& r) {
  if (!r.has("defaults")) return;
  config::ObjectReader defaults = r.required_object("defaults");
  for (const char* section : {"training", "parallelism"}) {
    if (defaults.has(section)) defaults.required_object(section);
  }
  defaults.reject_unknown_keys();
}

}  // namespace

std::filesystem::path default_stacks_dir() {
  if (const char* dir = std::getenv("FMSIM_STACKS_DIR")) return dir;
  return FMSIM_DEFAULT_STACKS_DIR;
}

std::vector<std::string> stack_names(const std::filesystem::path& stacks_dir) {
  std::vector<std::string> names;
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator(stacks_dir, ignored)) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Framework framework_from_json(const json& stack, const std::string& release_wanted, const std::string& file) {
  config::ObjectReader root(stack, file);
  root.optional_string("schema");
  root.optional_string("description");
  Framework f;
  f.name = root.required_string("name");
  const std::string display = root.string_or("display_name", f.name);
  const std::string default_release = root.required_string("default_release");
  config::ObjectReader releases = root.required_object("releases");
  root.reject_unknown_keys();
  const std::string release = release_wanted.empty() ? default_release : release_wanted;
  if (!releases.has(release)) {
    throw InputError(file + ": /releases: no release " + quote_for_message(release) + " of stack " +
                     quote_for_message(f.name) + " (known releases: " + joined(releases.keys()) + ")");
  }
  config::ObjectReader r = releases.required_object(release);
  f.release = release;
  f.display_name = display + " " + release;
  f.source = r.required_string("source");
  r.optional_string("notes");
  if (r.has("sources")) r.required_object("sources");  // per-mechanism citations, free text
  const std::string attention = r.choice_or("attention", {"fused", "flash2", "unfused"}, "fused");
  f.attention = attention == "unfused" ? AttentionKernel::unfused : attention == "flash2" ? AttentionKernel::flash2 : AttentionKernel::fused;
  if (r.has("attention_dropout") && f.attention != AttentionKernel::unfused) r.fail("attention_dropout", "only with attention = \"unfused\"");
  f.attention_dropout = r.bool_or("attention_dropout", false);
  if (auto fusions = r.optional_object("fusions")) read_fusions(*fusions, f.fusions);
  f.torch_compile = r.bool_or("torch_compile", false);
  f.graphs = r.choice_or("cuda_graphs", {"dense_layers", "none"}, "dense_layers") == "none" ? GraphCoverage::none
                                                                                            : GraphCoverage::dense_layers;
  f.host_launch = r.choice_or("host_launch", {"te_modules", "eager"}, "te_modules") == "eager" ? HostLaunch::eager
                                                                                              : HostLaunch::te_modules;
  const std::string engine = r.choice_or("data_parallel", {"megatron", "fsdp2", "deepspeed"}, "megatron");
  f.dp_engine = engine == "fsdp2" ? DataParallelEngine::fsdp2 : engine == "deepspeed" ? DataParallelEngine::deepspeed
                                                                                      : DataParallelEngine::megatron;
  f.selective_recompute = r.choice_or("selective_recompute", {"megatron_modules", "torch_op_sac"}, "megatron_modules") == "torch_op_sac"
                              ? SelectiveRecompute::torch_op_sac
                              : SelectiveRecompute::megatron_modules;
  if (r.has("max_reuse_distance") && f.dp_engine != DataParallelEngine::deepspeed) {
    r.fail("max_reuse_distance", "only with data_parallel = \"deepspeed\"");
  }
  f.max_reuse_distance = r.number_or("max_reuse_distance", 1e9, 0.0);
  check_defaults(r);
  if (r.has("defaults")) f.defaults = r.required_value("defaults");
  r.reject_unknown_keys();
  return f;
}

Framework load_framework(const std::string& value, const std::string& origin, const std::filesystem::path& stacks_dir) {
  const auto at = value.find('@');
  const std::string name = value.substr(0, at), release = at == std::string::npos ? "" : value.substr(at + 1);
  const auto known = stack_names(stacks_dir);
  const std::string where = origin + ": /training/framework = " + quote_for_message(value);
  if (!valid_stack_name(name) || std::find(known.begin(), known.end(), name) == known.end()) {
    throw InputError(where + ": expected NAME or NAME@RELEASE of a stack in " + stacks_dir.string() +
                     " (known stacks: " + joined(known) + ")");
  }
  if (at != std::string::npos && release.empty()) throw InputError(where + ": expected a release after '@'");
  const config::JsonFile file = config::load_json_file(stacks_dir / (name + ".json"));
  try {
    Framework f = framework_from_json(file.root, release, file.path);
    if (f.name != name) {
      throw InputError(file.path + ": at /name: found " + quote_for_message(f.name) + ", expected " +
                       quote_for_message(name) + " (the file's name)");
    }
    return f;
  } catch (const InputError& error) {
    throw InputError(where + ": " + error.what());
  }
}

std::string framework_display_name(const Scenario& scenario) { return scenario.framework.display_name; }

void apply_framework_defaults(const Framework& framework, json& document) {
  for (const char* section : {"training", "parallelism"}) {
    if (!framework.defaults.contains(section) || !document.contains(section) || !document[section].is_object()) continue;
    for (const auto& [key, value] : framework.defaults[section].items()) {
      if (!document[section].contains(key)) document[section][key] = value;
    }
  }
}

std::string to_string(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::fused: return "fused";
    case AttentionKernel::flash2: return "flash2";
    case AttentionKernel::unfused: return "unfused";
  }
  return "fused";
}

std::string to_string(DataParallelEngine engine) {
  switch (engine) {
    case DataParallelEngine::megatron: return "megatron";
    case DataParallelEngine::fsdp2: return "fsdp2";
    case DataParallelEngine::deepspeed: return "deepspeed";
  }
  return "megatron";
}

}  // namespace fmsim::workload
