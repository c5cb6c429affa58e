#pragma once
// The expected error of a result: the validation group a training or serving scenario falls in, and that
// group's band (n, mean absolute error, signed mean, worst) from configs/validation/error_bands.json, the
// file `make validate` generates from the validation scripts (benchmarks/calibration/error_bands.py).
// A group with no rows is reported as such ("no validation data"); a neighbouring group is only ever shown
// labelled as the nearest validated one, never in the exact group's place.
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "fmsim/hardware/catalog.hpp"

namespace fmsim::workload {
struct Scenario;
struct Framework;
}
namespace fmsim::inference {
struct ServeScenario;
}

namespace fmsim::report {

/// The stack key of a training scenario that names none: the current Megatron-Core as the Megatron-Bridge
/// 25.11 and later recipes run it (what fmsim models by default; error_bands.py's DEFAULT_STACK).
inline constexpr const char* kDefaultTrainingStack = "megatron-core";

/// One validation group's figures (fractions: (fmsim - measured) / measured).
struct BandFigures {
  nlohmann::json group;  ///< the group key, e.g. {"generation": "H100", "kind": "dense", ...}
  std::string label;     ///< "dense H100 pretraining on Megatron-Core"
  std::string metric;
  int n = 0;
  double mean_abs_error = 0, signed_mean = 0, worst = 0;
  std::string worst_row;
  nlohmann::json source;  ///< script, date, commit, measurements (+ sha256), bands file
};

struct ErrorBand {
  std::string category;   ///< "training" or "serving"
  nlohmann::json group;   ///< the key the result falls in
  std::string label;      ///< that key in words
  std::optional<BandFigures> band;     ///< the exact group's figures; empty = no validation data
  std::optional<BandFigures> nearest;  ///< without the exact group: the closest validated one (labelled so)
  std::string bands_file;              ///< where the figures were looked up
  std::string missing_reason;          ///< why there is no band ("" when band is set)
};

/// Hardware generation of a GPU as the validation groups name it: A100, H100, H200, Blackwell, Blackwell
/// Ultra; any other GPU by its catalog name (it has no group).
std::string gpu_generation(const hardware::GpuSpec& gpu);

/// The training group key {generation, kind (dense/MoE/hybrid), workload (pretrain/sft/lora), stack}.
/// The stack is training_stack_key of the scenario's framework (training.framework, or its recipe's).
nlohmann::json training_group_key(const workload::Scenario& scenario);
/// The validation key of a stack: kDefaultTrainingStack for current Megatron (Megatron-Core, Megatron-Bridge
/// from 25.11), NAME@RELEASE for any other.
std::string training_stack_key(const workload::Framework& framework);
/// The serving group key {generation, kind (dense/MoE), mode (offline: every request at t = 0; server)}.
nlohmann::json serving_group_key(const inference::ServeScenario& scenario);

/// configs/validation of the source tree ($FMSIM_VALIDATION_DIR overrides).
std::filesystem::path default_validation_dir();
/// default_validation_dir() / "error_bands.json".
std::filesystem::path default_bands_file();

/// Looks `key` up in `bands` (a parsed fmsim.error_bands/1 document read from `file`). Throws InputError
/// naming the file and key when the document does not follow the schema.
ErrorBand lookup_band(const nlohmann::json& bands, const std::string& file, const std::string& category,
                      const nlohmann::json& key);
/// The same in default_bands_file() (read once); a missing file gives "no validation data" with the reason.
ErrorBand lookup_band(const std::string& category, const nlohmann::json& key);

ErrorBand training_error_band(const workload::Scenario& scenario);
ErrorBand serving_error_band(const inference::ServeScenario& scenario);

/// The fabric group of a collective as benchmarks/calibration/validate_collectives.py names them: one
/// NVLink domain (NVLink 4 for Hopper, NVLink 5 for Blackwell, a GB200 NVL72 rack where the domain spans
/// several trays), EFA p5 at 2 or more nodes, EFA v1 on p4de, InfiniBand/RoCE with Hopper; otherwise a
/// descriptive name that no validation group has ("EFA efa-v4 across 4 nodes (B200)").
/// `nodes` and `domains` are the instances and NVLink domains the communicator spans.
std::string collective_fabric(const hardware::InstanceSpec& instance, const hardware::GpuSpec& gpu, int nodes, int domains);
/// {"fabric": ..., "compared": "busbw >= 1 MiB"} (messages from 1 MiB, judged on bus bandwidth) or
/// {"fabric": ..., "compared": "time < 1 MiB"} (smaller messages, judged on time).
nlohmann::json collective_group_key(const std::string& fabric, bool from_1MiB);
ErrorBand collective_error_band(const std::string& fabric, bool from_1MiB);

/// The result document's "error_band" object (docs/schema/run.schema.json).
nlohmann::json to_json(const ErrorBand& band);
/// "validated +-5.0 % mean abs, signed +5.0 %, worst +12.3 %, n=10, for dense H100 pretraining on
/// Megatron-Core" or "no validation data for ... (nearest validated: ...)".
std::string describe(const ErrorBand& band);

}  // namespace fmsim::report
