// Two Megatron-Core settings that decide how much of a MoE layer the host issues op by op
// (moe_host.hpp): token dropping with padding (static expert shapes, no device-to-host sync) and the
// CUDA-graph scope (captured pieces replay as one graph launch). Names and values are Megatron-Core's
// (transformer_config.py: moe_expert_capacity_factor, moe_pad_expert_input_to_capacity; cuda_graph_impl,
// cuda_graph_scope from megatron/core/transformer/enums.py CudaGraphScope).
#include "fmsim/common/error.hpp"
#include "fmsim/config/object_reader.hpp"
#include "fmsim/workload/model.hpp"
#include "fmsim/workload/parallelism.hpp"

namespace fmsim::workload {

double read_load_imbalance(config::ObjectReader& r, const std::string& key, double absent) {
  if (!r.has(key)) return absent;
  const double value = r.required_number(key, 0.0);
  if (!(value >= 1.0 && value <= 64)) r.fail(key, "the busiest expert-parallel rank's tokens over the mean, from 1 (perfect balance) to 64");
  return value;
}

void read_token_drop(config::ObjectReader& r, TrainingOptions& t) {
  if (r.has("moe_expert_capacity_factor")) {
    const auto& v = r.required_value("moe_expert_capacity_factor");
    if (!v.is_null()) {  // Megatron's None: dropless
      t.moe_capacity_factor = r.required_number("moe_expert_capacity_factor", 0.0);
      if (t.moe_capacity_factor <= 0 || t.moe_capacity_factor > 64) {
        r.fail("moe_expert_capacity_factor", "a capacity factor > 0 and at most 64, or null for dropless routing");
      }
    }
  }
  t.moe_load_imbalance = read_load_imbalance(r, "moe_load_imbalance", t.moe_load_imbalance);
  t.moe_pad_to_capacity = r.bool_or("moe_pad_expert_input_to_capacity", false);
  if (t.moe_pad_to_capacity && t.moe_capacity_factor <= 0) {
    r.fail("moe_pad_expert_input_to_capacity", "false unless moe_expert_capacity_factor is set (Megatron: the capacity "
                                               "is what the experts' input is padded to)");
  }
}

void read_cuda_graphs(config::ObjectReader& r, TrainingOptions& t) {
  const std::string impl = r.choice_or("cuda_graph_impl", {"none", "local", "transformer_engine", "full_iteration"}, "none");
  CudaGraphScope g;
  g.full_iteration = impl == "full_iteration";
  if (r.has("cuda_graph_scope")) {
    const auto& list = r.required_value("cuda_graph_scope");
    const std::string expected = "a list of attn, mlp, moe, moe_router, moe_preprocess, mamba (Megatron-Core's CudaGraphScope)";
    if (!list.is_array()) r.fail("cuda_graph_scope", expected);
    if (impl == "none" && !list.empty()) {
      // Megatron-Core ignores the scope without an implementation; fmsim says so rather than guess.
      r.fail("cuda_graph_scope", "no scope unless cuda_graph_impl is \"local\" or \"transformer_engine\" (it is \"none\")");
    }
    for (const auto& item : list) {
      const std::string name = item.is_string() ? item.get<std::string>() : "";
      if (name == "attn") g.attn = true;
      else if (name == "mlp") g.mlp = true;
      else if (name == "moe") g.moe = true;
      else if (name == "moe_router") g.moe_router = true;
      else if (name == "moe_preprocess") g.moe_preprocess = true;
      else if (name == "mamba") g.mamba = true;
      else if (name == "full_iteration") g.full_iteration = true;
      else r.fail("cuda_graph_scope", expected + " (" + config::render_value(item) + " is not one)");
    }
    if (g.full_iteration && impl != "full_iteration") {
      r.fail("cuda_graph_scope", "no full_iteration entry unless cuda_graph_impl = \"full_iteration\"");
    }
  }
  if ((impl == "local" || impl == "transformer_engine") && !r.has("cuda_graph_scope")) {
    // Megatron-Core's default scope ("full"): the whole layer where its shapes are static.
    g.attn = g.mlp = g.moe_router = g.moe_preprocess = g.mamba = true;
    g.moe = t.moe_pad_to_capacity;
  }
  t.cuda_graphs = g;
}

void validate_moe_options(const TrainingOptions& t, const ModelSpec& m, const std::string& where) {
  if (t.moe_load_imbalance > 0 && !m.is_moe()) {
    throw InputError(where + ": /training/moe_load_imbalance: needs a mixture-of-experts model (" + m.name + " is dense)");
  }
  if (t.moe_capacity_factor > 0) {
    if (!m.is_moe()) throw InputError(where + ": /training/moe_expert_capacity_factor: needs a mixture-of-experts model");
    if (t.moe_dispatcher == MoeDispatcher::flex) {
      throw InputError(where + ": /training/moe_expert_capacity_factor: token dropping is modelled with the alltoall "
                               "dispatcher only (Megatron-Core refuses padding with DeepEP; HybridEP's rank capacity "
                               "is not modelled)");
    }
  }
  if (t.cuda_graphs.moe && !t.moe_pad_to_capacity && m.is_moe()) {
    throw InputError(where + ": /training/cuda_graph_scope: \"moe\" needs static expert shapes, i.e. "
                             "moe_expert_capacity_factor with moe_pad_expert_input_to_capacity = true (dropless experts "
                             "change shape every step)");
  }
}

}  // namespace fmsim::workload
