// The trace writer (trace_builder_internal.hpp): how every builder of a training step adds its nodes:
// GEMMs (with their low-precision quantization and accumulator), memory-bound kernels, collectives on
// communicators created on first use.
#include <cmath>

#include "fmsim/workload/low_precision.hpp"
#include "trace_builder_internal.hpp"

namespace fmsim::workload::detail {

TraceNode node_of(int rank, NodeType type, Category category, std::string name) {
  TraceNode node;
  node.rank = rank;
  node.type = type;
  node.category = category;
  node.name = std::move(name);
  return node;
}

TraceWriter::TraceWriter(const Scenario& scenario, Trace& t) : s(scenario), trace(t) {
  const auto& p = s.parallelism;
  tokens = p.micro_batch * s.training.seq / p.cp;
  tokens_sp = p.sequence_parallel ? tokens / p.tp : tokens;
  vocab_padded = padded_vocab(s.model.vocab, p.tp);
  act_bytes = activation_bytes();
  counts = count_parameters(s.model);
}

int TraceWriter::comm(const std::string& kind, std::vector<int> ranks) {
  auto [it, inserted] = comm_ids_.try_emplace({kind, ranks}, static_cast<int>(trace.comms.size()));
  if (inserted) trace.comms.push_back({it->second, kind, std::move(ranks)});
  return it->second;
}

int TraceWriter::add(TraceNode node) {
  node.id = static_cast<int>(trace.nodes.size());
  trace.nodes.push_back(std::move(node));
  return trace.nodes.back().id;
}

TraceNode TraceWriter::compute(int rank, const std::string& name, Kernel kernel, Category category) const {
  TraceNode node = node_of(rank, NodeType::comp, category, name);
  node.kernel = kernel;
  node.stream = "compute";
  // Only the GEMMs and the attention kernels are SM-bound; memory-bound kernels keep the HBM.
  if (kernel == Kernel::gemm || kernel == Kernel::attention_fwd || kernel == Kernel::attention_bwd) node.sms_taken = sms_beside_comm;
  return node;
}

int TraceWriter::collective(int rank, int comm_id, const std::string& stream, Category category, collectives::Op op,
                            double bytes, const std::string& name, std::vector<int> deps, double bandwidth_share) {
  if (comm_id < 0 || trace.comms[comm_id].ranks.size() < 2 || bytes <= 0) {
    if (deps.size() == 1) return deps.front();
    return memory(rank, name + ".join", 0, std::move(deps));
  }
  TraceNode node = node_of(rank, NodeType::coll, category, name);
  node.stream = stream;
  node.op = op;
  node.comm = comm_id;
  node.comm_bytes = std::floor(bytes);
  node.comm_bandwidth_share = bandwidth_share;
  node.deps = std::move(deps);
  return add(std::move(node));
}

int TraceWriter::gemm(int rank, const std::string& name, double m, double n, double k, bool fp8, std::vector<int> deps,
                      int repeat, int sms_taken, int weights) {
  if (skips_gemm(name)) return deps.size() == 1 ? deps.front() : memory(rank, name + ".frozen", 0, std::move(deps));
  TraceNode node = compute(rank, name, Kernel::gemm);
  node.m = m;
  node.n = n;
  node.k = k;
  node.flops = 2.0 * m * n * k * repeat;
  // `fp8`: the layer runs its GEMMs in the scenario's low precision, FP8 or FP4 (TrainingOptions::layer_in_fp8).
  const bool low = fp8;
  node.fp4 = low && s.training.precision == Precision::fp4;
  node.fp8 = low && !node.fp4;
  // A low-precision GEMM quantizes its activation (or gradient) input first (low_precision.cpp).
  // Weight-gradient GEMMs reuse the copies made for the data-gradient GEMM.
  const auto ends_with = [&name](const char* suffix) {
    const std::string s(suffix);
    return name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  const bool wgrad = ends_with(".wgrad"), dgrad = ends_with(".dgrad");
  if (low && !wgrad) node.bytes = quantize_bytes_per_element(s.training, s.cluster.gpu.sm_version) * m * k * repeat;
  // The chunk's first micro-batch of the step (every one under disable_parameter_transpose_cache): a
  // forward GEMM also makes its weight's (n x k per distinct weight) quantized copies.
  if (low && !wgrad && !dgrad) node.bytes += weight_cast_bytes * n * k * (weights > 0 ? weights : repeat);
  // Transformer Engine runs the backward FP8 GEMMs with the split (FP32-promoting) accumulator and the
  // forward ones with fast accumulation (recipe MMParams: fprop False, dgrad and wgrad True).
  node.fp8_split_accumulator = node.fp8 && (wgrad || dgrad);
  // MXFP8 GEMMs read a UE8M0 scale per 32 elements of each operand (GpuSpec::gemm_mxfp8_rate).
  node.fp8_block_scaled = node.fp8 && s.training.fp8_recipe == Fp8Recipe::mxfp8;
  node.repeat = repeat;
  node.sms_taken += sms_taken;
  node.deps = std::move(deps);
  return add(std::move(node));
}

int TraceWriter::memory(int rank, const std::string& name, double bytes, std::vector<int> deps) {
  TraceNode node = compute(rank, name, Kernel::memory);
  node.bytes = bytes;
  node.deps = std::move(deps);
  return add(std::move(node));
}

}  // namespace fmsim::workload::detail
