#pragma once
// The per-rank op graph of one training step, Chakra-style: compute nodes (FLOPs, bytes, GEMM shape),
// collectives (communicator, bytes), sends and receives, each with data dependencies and a stream. Ops of
// one rank on one stream run in the order listed (like a CUDA stream). A trace either lists every rank,
// or (symmetric) one representative rank per pipeline stage: the other ranks of its communicators are
// taken to do the same at the same time, which is how fmsim simulates 100k GPUs.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fmsim/collectives/collective.hpp"

namespace fmsim::workload {

enum class NodeType { comp, coll, send, recv };
/// Where a node's time goes in the step breakdown.
enum class Category { compute, tp_comm, cp_comm, ep_comm, dp_comm, pp_comm, optimizer };
enum class Kernel { gemm, attention_fwd, attention_bwd, memory, optimizer };

struct TraceNode {
  int id = 0;
  int rank = 0;                 ///< global rank
  NodeType type = NodeType::comp;
  Category category = Category::compute;
  std::string name;
  std::string stream = "compute";
  // compute
  Kernel kernel = Kernel::memory;
  double flops = 0;
  double bytes = 0;             ///< HBM bytes of a memory-bound kernel
  double m = 0, n = 0, k = 0;   ///< GEMM shape
  int repeat = 1;               ///< identical kernels run back to back (e.g. one GEMM per local expert)
  bool fp8 = false;
  bool fp4 = false;             ///< an FP4 GEMM (NVFP4/MXFP4 training, FP4 tensor-core peak)
  bool fp8_split_accumulator = false;  ///< FP8 GEMM promoting partial sums to FP32 (TE's dgrad/wgrad)
  bool fp8_block_scaled = false;  ///< an MXFP8 GEMM (1x32 block scales; GpuSpec::gemm_mxfp8_rate)
  int sms_taken = 0;            ///< SMs held by an overlapped communication kernel
  double attention_span = 0;    ///< attention: keys per query in the kernel (0: a long sequence)
  /// attention: kernel steps a query's keys are split over (context parallelism: CP); the causal diagonal
  /// is in one of them, so its cost is spread over span x steps keys (compute::attention_efficiency)
  int attention_steps = 1;
  bool attention_flash2 = false;  ///< attention: FlashAttention-2 (PyTorch SDPA) instead of the fused FA3/cuDNN kernel
  double attention_head_dim = 0;  ///< attention: the model's head dim (MLA: mean of Q/K and V); 0: 128
  double duration_s = -1;       ///< given duration (traces from elsewhere); < 0: from the compute model
  // communication
  collectives::Op op = collectives::Op::all_reduce;
  int comm = -1;                ///< communicator id (collectives)
  double comm_bytes = 0;        ///< collective size as nccl-tests counts it, or the message size
  /// Share of NCCL's bandwidth for these bytes that the collective's kernels reach (1: NCCL itself). The
  /// flex MoE dispatcher's kernels through Megatron-Core's Torch API inside one NVLink domain: 0.73
  /// (workload/moe_ops.cpp). The cost models price comm_bytes / share; comm_bytes stays the real size.
  double comm_bandwidth_share = 1.0;
  int peer = -1;                ///< send/recv: the other rank
  int tag = 0;                  ///< send/recv matching
  std::vector<int> deps;        ///< node ids that must finish first
};

struct Communicator {
  int id = 0;
  std::string kind;             ///< tp, cp, dp, ep, edp
  std::vector<int> ranks;       ///< global ranks, in communicator order
};

struct Trace {
  nlohmann::json scenario;      ///< the resolved scenario it came from (cluster, model, strategy)
  int world = 0;
  bool symmetric = true;
  std::vector<int> ranks;       ///< ranks with nodes
  std::vector<int> rank_gpu;    ///< global rank -> GPU ordinal (all ranks)
  std::vector<Communicator> comms;
  std::vector<TraceNode> nodes;
  double model_flops_per_step = 0;  ///< Megatron accounting, for MFU
  double tokens_per_step = 0;
};

std::string to_string(NodeType type);
std::string to_string(Category category);
std::string to_string(Kernel kernel);
std::vector<Category> all_categories();

/// Chakra-style JSON (docs/formats.md, schema "fmsim.trace/1").
nlohmann::json trace_to_json(const Trace& trace);
/// Reads and checks a trace: ids, dependencies, communicators and matching sends/receives. Throws
/// InputError naming the file and node.
Trace trace_from_json(const nlohmann::json& document, const std::string& file);
/// What trace_from_json checks beyond each field (trace_validation.cpp): every node's rank is listed in
/// `ranks`, `rank_gpu` has one GPU per rank, communicators list distinct ranks, a collective's rank is
/// a member of its communicator, fully simulated communicators get the same number of calls from each
/// member, GEMM FLOPs match their shape, and data dependencies plus stream order form no cycle. Throws
/// InputError naming the file and the nodes.
void check_trace(const Trace& trace, const std::string& file);
/// A cycle in a graph given by each vertex's predecessors, in dependency order (each vertex waits on the
/// one before it, the first on the last); empty when there is none.
std::vector<int> find_cycle(const std::vector<std::vector<int>>& preds);
/// "a -> b -> c -> a" with `name` for each vertex (a long cycle is cut short).
std::string describe_cycle(const std::vector<int>& cycle, const std::function<std::string(int)>& name);
/// One line naming a node for messages: "node 12 (fwd.attn.qkv, rank 3)".
std::string describe_node(const TraceNode& node);

}  // namespace fmsim::workload
