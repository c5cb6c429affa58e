// The steps of a MoE block on one rank with Megatron-Core's alltoall dispatcher (MEGATRON-NOTES.md
// section 6): router, permutation, all-to-all to the experts (then the ETP all-gather), expert GEMMs,
// (ETP reduce-scatter, then) all-to-all back, unpermutation. Backward runs the same steps in reverse.
// The flex dispatcher (DeepEP, HybridEP) sends the unpermuted tokens, permutes them by expert after the
// dispatch and back before the combine, and sums each token's expert outputs inside the combine.
#include <algorithm>
#include <map>

#include "fmsim/workload/moe_routing.hpp"
#include "moe_host_internal.hpp"
#include "trace_builder_internal.hpp"

namespace fmsim::workload::detail {
namespace {

using collectives::Op;

/// Width of the rows the routed experts take and return: the hidden size, or LatentMoE's latent width
/// (Nemotron 3 Super/Ultra: the dispatch and the experts work in moe_latent_size; hybrid_pattern.hpp).
double expert_width(const ModelSpec& m) { return m.hybrid.moe_latent > 0 ? m.hybrid.moe_latent : m.hidden; }

struct MoeShape {
  double tokens_in;        ///< tokens this rank routes (its sequence-parallel share)
  double routed_bytes;     ///< the permuted rows it sends: tokens x top-k x hidden x element bytes
  double rows_per_expert;  ///< rows each local expert receives (balanced routing)
  int local_experts;
  double fc1_n, fc2_k;     ///< expert FC1 output width and FC2 input width on this ETP rank
  double gated;
};

MoeShape moe_shape(const TraceWriter& w) {
  const auto& m = w.s.model;
  const auto& p = w.s.parallelism;
  MoeShape s{};
  s.tokens_in = w.tokens_sp;
  s.routed_bytes = s.tokens_in * m.moe.experts_per_token * expert_width(m) * w.act_bytes;
  s.local_experts = m.moe.experts / p.ep;
  s.rows_per_expert = s.tokens_in * m.moe.experts_per_token * p.etp / s.local_experts;
  // Every rank waits at the combine for the busiest one, which receives `imbalance` times the mean
  // (moe_load_imbalance, or what uniform random routing gives: Megatron's benchmarks force it). Token
  // dropping caps each expert at its capacity, capacity_factor x its balanced share; padded, every
  // expert computes and receives exactly that.
  const double mean_rows = s.tokens_in * m.moe.experts_per_token;
  const double imbalance = w.s.training.moe_load_imbalance > 0 ? w.s.training.moe_load_imbalance
                                                               : fmsim::workload::random_routing_imbalance(p.ep, mean_rows);
  const double cf = w.s.training.moe_capacity_factor;
  const double share = cf <= 0 ? imbalance : w.s.training.moe_pad_to_capacity ? cf : std::min(cf, imbalance);
  s.routed_bytes *= share;
  s.rows_per_expert *= share;
  s.gated = m.gated_mlp ? 2 : 1;
  s.fc1_n = s.gated * m.moe.expert_ffn / p.etp;
  s.fc2_k = m.moe.expert_ffn / static_cast<double>(p.etp);
  return s;
}

/// The weight-gradient GEMM of FC2 (h x fc2_k) or FC1 (fc1_n x h) of every local expert, over its rows.
int expert_wgrad(TraceWriter& w, int rank, int layer, const MoeShape& s, bool fc1, int after) {
  const double h = expert_width(w.s.model);
  const bool fp8 = w.fp8(layer);
  if (fc1) return w.gemm(rank, "moe.fc1.wgrad", s.fc1_n, h, s.rows_per_expert, fp8, after_of(after), s.local_experts);
  return w.gemm(rank, "moe.fc2.wgrad", h, s.fc2_k, s.rows_per_expert, fp8, after_of(after), s.local_experts);
}

bool flex(const TraceWriter& w) { return w.s.training.moe_dispatcher == MoeDispatcher::flex; }
/// Whether the experts' activation runs again before its backward (selective recompute of moe_act).
bool moe_act_recomputed(const TraceWriter& w) {
  return w.s.training.recompute == Recompute::selective && w.s.training.recompute_modules.moe_act;
}
bool overlapped_shared_expert(const TraceWriter& w) { return w.s.training.moe_shared_expert_overlap && w.s.model.moe.shared_ffn > 0; }

/// The host thread's issue of one MoE step (moe_host.hpp): a node on the rank's "host" stream that takes
/// the step's host time, after the host's previous work (stream order) and `deps`. The step's last GPU
/// node waits for it: the GPU cannot finish a step before the host has issued all of its kernels.
int host_issue(TraceWriter& w, int rank, const char* name, fmsim::workload::MoeHostOps ops, std::vector<int> deps = {}) {
  TraceNode node = w.compute(rank, name, Kernel::memory);
  node.stream = "host";
  ops.eager_scale = w.s.cluster.instance.host_op_time_factor;
  node.duration_s = ops.seconds();
  node.deps = std::move(deps);
  return w.add(std::move(node));
}

/// Megatron adds the experts' FC2 bias outside the grouped GEMM (TEGroupedMLP._apply_bias, experts.py at
/// core_v0.16.0): per local expert `t + b * p` over its rows (the bias times each row's routing
/// probability, FP32 like the probabilities), then torch.cat of the experts' results and .to(BF16).
/// Forward ops: a multiply and an add per expert, the cat and the cast; backward (autograd): the cast's
/// and the add's gradient casts, and per expert the multiply's two gradients (a multiply and a sum
/// each), so six per expert and two more.
double expert_bias_ops(int local_experts, bool backward) { return (backward ? 6.0 : 2.0) * local_experts + 2.0; }
/// Whether the bias add above runs: biased experts outside Transformer Engine's op fuser.
bool eager_expert_bias(const TraceWriter& w) { return w.s.model.moe.expert_bias && !w.s.training.te_op_fuser; }

/// HBM bytes per element of the experts' output (rows x hidden) that the bias add above moves. Forward:
/// b * p writes FP32 (4), t + it reads BF16 and FP32 and writes FP32 (2 + 4 + 4), cat copies FP32 (4 + 4),
/// .to(BF16) reads FP32 and writes BF16 (4 + 2): 28. Backward: the cast's gradient BF16 -> FP32 (2 + 4),
/// the add's to BF16 for t (4 + 2), torch.split's backward joining t's BF16 gradients (2 + 2), the bias
/// gradient (grad x p: 4 + 4, its sum over rows: 4) and the probabilities' (grad x b: 4 + 4, its sum over
/// the hidden dimension: 4): 40.
constexpr double kExpertBiasForwardBytes = 28.0;
constexpr double kExpertBiasBackwardBytes = 40.0;

int host_issue(TraceWriter& w, int rank, int layer, fmsim::workload::MoeStep step, bool backward, const char* name) {
  const auto& p = w.s.parallelism;
  auto eager = fmsim::workload::moe_host_ops(step, backward, w.s.training.moe_dispatcher, w.s.model.moe.experts / p.ep, w.fp8(layer));
  if (step == fmsim::workload::MoeStep::experts && eager_expert_bias(w)) eager.plain_ops = expert_bias_ops(w.s.model.moe.experts / p.ep, backward);
  if (step == fmsim::workload::MoeStep::experts) {
    // The clamp's ops, and in backward those of a recomputed activation's forward again.
    eager.plain_ops += activation_clamp_ops(w, backward) + (backward && moe_act_recomputed(w) ? activation_clamp_ops(w, false) : 0);
  }
  return host_issue(w, rank, name, fmsim::workload::graphed_moe_host_ops(w.s.training.cuda_graphs, step, backward, eager));
}

int gated_by_host(TraceWriter& w, int node, int host) { return gate_on_host(w, node, host); }

/// The dispatcher's device-to-host sync in a forward pass: the host waits for `gpu_node` (the kernels
/// that counted the tokens per expert), then for the copy.
int host_sync(TraceWriter& w, int rank, int gpu_node) {
  TraceNode node = w.compute(rank, "moe.d2h_sync", Kernel::memory);
  node.stream = "host";
  node.duration_s = fmsim::workload::kMoeD2hSync_s;
  node.deps = {gpu_node};
  return w.add(std::move(node));
}

bool syncs_host(const TraceWriter& w) {
  const auto& p = w.s.parallelism;
  const auto& t = w.s.training;
  // Drop and pad fixes every split size (Megatron's cuda_sync_point stays "no_sync"); a full-iteration
  // graph has no host to stop (Megatron-Bridge pairs it with static expert buffers, moe_paged_stash).
  if (t.moe_pad_to_capacity || t.cuda_graphs.full_iteration) return false;
  return fmsim::workload::moe_dispatch_syncs_host(t.moe_dispatcher, p.ep, w.s.model.moe.experts / p.ep);
}

/// Megatron's alltoall dispatcher receives rows grouped by source rank, then local expert, and with
/// more than one local expert reorders them by local expert for the grouped GEMM (sort_chunks_by_idxs
/// in dispatch_postprocess), and back before the combine (combine_preprocess); the flex dispatcher
/// receives tokens and permutes them into rows by local expert there, and back. Backward runs both on
/// the gradients. Each reads and writes this rank's routed rows. They run on the compute stream with the
/// experts (the expert piece of Megatron's fine-grained schedule), not beside the all-to-alls.
int reorder_by_expert(TraceWriter& w, int rank, const MoeShape& s, bool to_experts, bool backward, int after) {
  const bool fused = flex(w);
  if (!fused && s.local_experts < 2) return after;
  const char* name = fused ? (to_experts ? (backward ? "moe.unpermute.bwd" : "moe.permute")
                                         : (backward ? "moe.permute.bwd" : "moe.unpermute"))
                           : (to_experts ? (backward ? "moe.sort_chunks.combine_bwd" : "moe.sort_chunks")
                                         : (backward ? "moe.sort_chunks.bwd" : "moe.sort_chunks.combine"));
  return w.memory(rank, name, 2 * s.routed_bytes * w.s.parallelism.etp, after_of(after));
}

/// The NVLink domains an EP communicator spans, and its ranks per domain.
struct EpDomains {
  int domains = 1;
  int ranks_per_domain = 1;
};

EpDomains ep_domains(const TraceWriter& w, int ep_comm) {
  const int domain_gpus = w.s.cluster.gpus_per_node * w.s.cluster.nvlink_domain_nodes;
  std::map<int, int> per_domain;
  for (int r : w.trace.comms[ep_comm].ranks) ++per_domain[w.trace.rank_gpu[r] / domain_gpus];
  int most = 1;
  for (const auto& [domain, count] : per_domain) most = std::max(most, count);
  // HybridEP sizes its buffers for NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN (the largest group here).
  return {std::max<int>(1, static_cast<int>(per_domain.size())), most};
}

/// Bytes the flex dispatcher sends per byte the alltoall dispatcher sends. DeepEP and HybridEP send a
/// token once to each NVLink domain that holds one of its experts and fan it out there over NVLink, where
/// the alltoall dispatcher sends one copy per expert: over g domains the share is g P(hit) / k. The
/// all-to-all is priced whole at this share (it is bound by the cross-domain links). Inside a single
/// NVLink domain the fan-out is the whole all-to-all: one copy per destination GPU that holds one of the
/// token's experts (DeepEP's `is_token_in_rank`; HybridEP's "multicast to all ranks within this node
/// which need this token ... by issue each unicast separately", csrc/hybrid_ep/backend/
/// hybrid_ep_backend.cuh), so the share is ep P(a GPU is hit) / k.
double flex_send_share(const TraceWriter& w, int ep_comm, const EpDomains& d) {
  const int copies_over = d.domains >= 2 ? d.domains : static_cast<int>(w.trace.comms[ep_comm].ranks.size());
  return fmsim::workload::domain_send_share(w.s.model.moe, copies_over);
}

/// HybridEP's forward dispatch sends with every (token, GPU) copy the token's routing probabilities for
/// all experts of the destination domain, one FP32 row of NUM_OF_EXPERTS_PER_RANK x
/// NUM_OF_RANKS_PER_NODE (DeepEP hybrid-ep branch, hybrid_ep_backend.cuh; `dispatch_with_permute`), and
/// the dispatch's backward returns their gradients the same way (`combine_with_unpermute(...,
/// probs=grad_probs)`). Per byte of the token's row (the expert width in BF16: Megatron-Core's HybridEP
/// path dispatches BF16 only, fused_a2a.py) that is 4 E_local R / (width x 2). Nemotron 3 Super at EP64
/// in one NVL72 rack: 512 x 4 B against a 1,024-wide latent row of 2 KiB, twice the bytes; DeepSeek-V3 at
/// EP64 in one NVL72 rack: 7 % (on 8-GPU nodes 0.9 %). DeepEP sends the top-k indices and weights only
/// (k x 12 B, left out).
double hybridep_probability_share(const TraceWriter& w, const EpDomains& d) {
  if (!w.s.training.moe_flex_hybridep) return 0.0;
  const auto& m = w.s.model;
  const double local_experts = static_cast<double>(m.moe.experts) / w.s.parallelism.ep;
  const double row_bytes = expert_width(m) * w.act_bytes;
  return row_bytes > 0 ? 4.0 * local_experts * d.ranks_per_domain / row_bytes : 0.0;
}

/// The flex dispatcher's kernels through Megatron-Core's Torch API inside one NVLink domain reach 0.73 of the
/// bandwidth of NCCL's all-to-all of the same bytes on the same GPUs (TraceNode::comm_bandwidth_share). DeepEP
/// hybrid-ep branch, docs/README_Hybrid-EP.md, GB200 MNNVL, 4,096 tokens of hidden 7,168 in BF16, top-8 of 8
/// experts per rank, 32 SMs (Megatron-Bridge's performance scripts set 32): HybridEP dispatch / combine
/// 546/569, 523/522, 507/484, 484/465, 479/448 GB/s at 8, 16, 24, 32 and 36 ranks, against 747, 704, 690,
/// 683 and 681 GB/s for fmsim's NCCL all-to-all of the received 319-431 MB on those GPUs; the dispatch
/// figures count the token bytes only, so with its probability rows (4 x 8 x ranks B per 14,336 B copy,
/// 2-8 %) added: 0.74-0.77 dispatch, 0.66-0.76 combine, mean 0.73 (DGX B200, 8 ranks, 16 SMs: 536/531
/// against 747, 0.72). The same README's Torch-API table for DeepEP on GB200 (32 SMs) is no faster (616/520,
/// 521/443, 503/207 GB/s at 8, 16, 24 ranks), so both backends take the share. The kernels alone reach
/// 0.97-1.0 (642-764 GB/s): the Torch API adds the routing map's all-gather, its scan and the copies into and
/// out of the registered buffers on every call. The share is against fmsim's NCCL model (validated within
/// 5 % on NVLink 5, docs/validation.md), not a measured NCCL run beside it. Across NVLink domains the
/// kernels run at the network's line rate (HybridEP: 37-58 GB/s per H100 over 400 Gb/s InfiniBand in the
/// same tables), where NCCL's bound already applies: share 1.
constexpr double kFlexNvlinkShareOfNccl = 0.73;

/// An EP all-to-all as the trace prices it: its bytes and TraceNode::comm_bandwidth_share.
struct EpAllToAll {
  double bytes;
  double bandwidth_share;
};

/// The dispatcher's all-to-all: the alltoall dispatcher's per-expert copies at NCCL's bandwidth, or the flex
/// dispatcher's share of them (with HybridEP's probability rows where `with_probabilities`: the forward
/// dispatch and its backward) at kFlexNvlinkShareOfNccl inside one NVLink domain.
EpAllToAll ep_all_to_all(const TraceWriter& w, const Communicators& c, const MoeShape& s, bool with_probabilities) {
  if (!flex(w)) return {s.routed_bytes, 1.0};
  const EpDomains d = ep_domains(w, c.ep);
  double bytes = s.routed_bytes * flex_send_share(w, c.ep, d);
  if (with_probabilities) bytes *= 1.0 + hybridep_probability_share(w, d);
  return {bytes, d.domains < 2 ? kFlexNvlinkShareOfNccl : 1.0};
}

}  // namespace

int moe_route(TraceWriter& w, int rank, int layer, bool backward, int after) {
  const MoeShape s = moe_shape(w);
  const int host = host_issue(w, rank, layer, MoeStep::route, backward, backward ? "host.moe.route.bwd" : "host.moe.route");
  int node = after;
  if (!backward) node = w.gemm(rank, "moe.router", s.tokens_in, w.s.model.moe.experts, w.s.model.hidden, false, after_of(node));
  // The stack's unfused router and permutation (elementwise_fusion.cpp).
  if (const double router = router_extra_bytes(w, s.tokens_in); router > 0) {
    node = w.memory(rank, backward ? "moe.router_ops.bwd" : "moe.router_ops", router, after_of(node));
  }
  // DeepEP / HybridEP take the tokens unpermuted
  if (!flex(w)) {
    node = w.memory(rank, backward ? "moe.permute.bwd" : "moe.permute", (backward ? 4 : 2) * s.routed_bytes * permute_pass_factor(w), after_of(node));
  }
  gated_by_host(w, node, host);
  if (!backward && overlapped_shared_expert(w)) moe_shared_expert(w, rank, layer, true, false, node);  // beside the dispatch
  return node;
}

int moe_a2a_to_experts(TraceWriter& w, int rank, const Communicators& c, bool backward, int after) {
  const MoeShape s = moe_shape(w);
  const int etp = w.s.parallelism.etp;
  // The alltoall dispatcher's split sizes reach the host before the all-to-all is issued.
  const bool sync_before = !backward && syncs_host(w) && !flex(w);
  if (sync_before) host_sync(w, rank, after);
  const int host = host_issue(w, rank, 0, MoeStep::dispatch, backward, backward ? "host.moe.combine.bwd" : "host.moe.dispatch");
  const EpAllToAll a2a = ep_all_to_all(w, c, s, !backward);
  int node = w.collective(rank, c.ep, "ep", Category::ep_comm, Op::alltoall, a2a.bytes, backward ? "moe.combine.bwd" : "moe.dispatch",
                          after_of(after), a2a.bandwidth_share);
  if (etp > 1) {
    node = w.collective(rank, c.etp, "tp", Category::tp_comm, Op::all_gather, s.routed_bytes * etp, "moe.etp_ag", after_of(node));
  }
  gated_by_host(w, node, host);
  // DeepEP's dispatch hands the received counts per expert to the host, which waits for them; the
  // experts' kernels follow the sync (they are issued after it).
  if (!backward && syncs_host(w) && flex(w)) return host_sync(w, rank, node);
  return node;
}

int moe_experts(TraceWriter& w, int rank, int layer, bool backward, bool delay_wgrad, int after) {
  const auto& m = w.s.model;
  const auto& tr = w.s.training;
  const MoeShape s = moe_shape(w);
  const bool fp8 = w.fp8(layer);
  const double rows = s.rows_per_expert, h = expert_width(m);
  const int e = s.local_experts;
  const double act_bytes = (s.gated + 1) * rows * e * s.fc2_k * w.act_bytes;
  // GPT-OSS's clamped activation outside the fused kernel (elementwise_fusion.cpp), per element of FC1's output.
  const double clamp_fwd = activation_clamp_bytes(w, false) * rows * e * s.fc1_n;
  const double clamp_bwd = activation_clamp_bytes(w, true) * rows * e * s.fc1_n;
  const int host = host_issue(w, rank, layer, MoeStep::experts, backward, backward ? "host.moe.experts.bwd" : "host.moe.experts");
  int node = reorder_by_expert(w, rank, s, true, backward, after);
  if (!backward) {
    node = w.gemm(rank, "moe.fc1", rows, s.fc1_n, h, fp8, after_of(node), e);
    if (clamp_fwd > 0) node = w.memory(rank, "moe.act.clamp", clamp_fwd, after_of(node));
    node = w.memory(rank, "moe.act", act_bytes, after_of(node));
    node = w.gemm(rank, "moe.fc2", rows, h, s.fc2_k, fp8, after_of(node), e);
    if (eager_expert_bias(w)) node = w.memory(rank, "moe.fc2_bias", kExpertBiasForwardBytes * rows * e * h, {node});
  } else {
    const bool act_again = moe_act_recomputed(w);
    if (eager_expert_bias(w)) node = w.memory(rank, "moe.fc2_bias.bwd", kExpertBiasBackwardBytes * rows * e * h, after_of(node));
    node = w.gemm(rank, "moe.fc2.dgrad", rows, s.fc2_k, h, fp8, after_of(node), e);
    if (!delay_wgrad) node = expert_wgrad(w, rank, layer, s, false, node);
    // The recomputed activation runs its clamps again (bias_act_func is what activation_recompute wraps).
    if (clamp_bwd > 0) node = w.memory(rank, "moe.act.clamp.bwd", clamp_bwd + (act_again ? clamp_fwd : 0.0), after_of(node));
    node = w.memory(rank, "moe.act.bwd", (2 + (act_again ? 1 : 0)) * act_bytes, after_of(node));
    node = w.gemm(rank, "moe.fc1.dgrad", rows, h, s.fc1_n, fp8, after_of(node), e);
    if (!delay_wgrad) node = expert_wgrad(w, rank, layer, s, true, node);
  }
  node = reorder_by_expert(w, rank, s, false, backward, node);
  gated_by_host(w, node, host);
  if (m.moe.shared_ffn <= 0) return node;
  if (!tr.moe_shared_expert_overlap) {  // after the routed experts: FC1 then FC2, backward FC2 then FC1
    return moe_shared_expert(w, rank, layer, backward, backward, moe_shared_expert(w, rank, layer, !backward, backward, node));
  }
  // Overlapped: FC2 forward (FC1 backward) runs on the compute stream while the combine (backward
  // dispatch) all-to-all, which does not wait for it, moves the routed rows; FC1 forward (FC2 backward)
  // went beside the dispatch (moe_route, moe_unpermute).
  moe_shared_expert(w, rank, layer, backward, backward, node);
  return node;
}

int moe_shared_expert(TraceWriter& w, int rank, int layer, bool fc1, bool backward, int after) {
  const auto& m = w.s.model;
  const MoeShape s = moe_shape(w);
  const bool fp8 = w.fp8(layer);
  const double t = s.tokens_in, h = m.hidden, shared_n = s.gated * m.moe.shared_ffn, shared_k = m.moe.shared_ffn;
  int node = after;
  if (!backward && fc1) return w.gemm(rank, "moe.shared_fc1", t, shared_n, h, fp8, after_of(node));
  if (!backward) return w.gemm(rank, "moe.shared_fc2", t, h, shared_k, fp8, after_of(node));
  if (fc1) {
    node = w.gemm(rank, "moe.shared_fc1.dgrad", t, h, shared_n, fp8, after_of(node));
    return w.gemm(rank, "moe.shared_fc1.wgrad", shared_n, h, t, fp8, after_of(node));
  }
  node = w.gemm(rank, "moe.shared_fc2.dgrad", t, shared_k, h, fp8, after_of(node));
  return w.gemm(rank, "moe.shared_fc2.wgrad", h, shared_k, t, fp8, after_of(node));
}

int moe_expert_wgrad(TraceWriter& w, int rank, int layer, int after) {
  const MoeShape s = moe_shape(w);
  return expert_wgrad(w, rank, layer, s, true, expert_wgrad(w, rank, layer, s, false, after));
}

int moe_a2a_from_experts(TraceWriter& w, int rank, const Communicators& c, bool backward, int after) {
  const MoeShape s = moe_shape(w);
  const int etp = w.s.parallelism.etp;
  const int host = host_issue(w, rank, 0, MoeStep::combine, backward, backward ? "host.moe.dispatch.bwd" : "host.moe.combine");
  int node = after;
  if (etp > 1) {
    node = w.collective(rank, c.etp, "tp", Category::tp_comm, Op::reduce_scatter, s.routed_bytes * etp, "moe.etp_rs", after_of(node));
  }
  const EpAllToAll a2a = ep_all_to_all(w, c, s, backward);
  node = w.collective(rank, c.ep, "ep", Category::ep_comm, Op::alltoall, a2a.bytes, backward ? "moe.dispatch.bwd" : "moe.combine",
                      after_of(node), a2a.bandwidth_share);
  gated_by_host(w, node, host);
  return node;
}

int moe_forward_again(TraceWriter& w, int rank, const Communicators& c, int layer, int after) {
  int node = moe_route(w, rank, layer, false, after);
  node = moe_a2a_to_experts(w, rank, c, false, node);
  node = moe_experts(w, rank, layer, false, false, node);
  node = moe_a2a_from_experts(w, rank, c, false, node);
  return moe_unpermute(w, rank, layer, false, node);
}

int moe_unpermute(TraceWriter& w, int rank, int layer, bool backward, int after) {
  const MoeShape s = moe_shape(w);
  const int host = host_issue(w, rank, layer, MoeStep::unpermute, backward, backward ? "host.moe.unpermute.bwd" : "host.moe.unpermute");
  int node = after;  // flex: the combine kernel sums each token's expert outputs
  if (!flex(w)) {
    node = w.memory(rank, backward ? "moe.unpermute.bwd" : "moe.unpermute", (backward ? 4 : 2) * s.routed_bytes * permute_pass_factor(w), after_of(node));
  }
  gated_by_host(w, node, host);
  if (backward && overlapped_shared_expert(w)) moe_shared_expert(w, rank, layer, false, true, node);  // beside the combine's gradient
  return node;
}

int host_issue_node(TraceWriter& w, int rank, const char* name, double seconds) {
  TraceNode node = w.compute(rank, name, Kernel::memory);
  node.stream = "host";
  node.duration_s = seconds;
  return w.add(std::move(node));
}

/// `node` (a step's last GPU node) also waits for the host's issue of the step. Only nodes added after
/// the host node: an earlier one may be what the host node waits for (a sync).
int gate_on_host(TraceWriter& w, int node, int host) {
  if (node <= host) return node;
  auto& deps = w.trace.nodes[node].deps;
  if (std::find(deps.begin(), deps.end(), host) == deps.end()) deps.push_back(host);
  return node;
}

}  // namespace fmsim::workload::detail

namespace fmsim::workload {

MoeHostOps moe_host_ops(MoeStep step, bool backward, MoeDispatcher dispatcher, int local_experts, bool low_precision) {
  const bool fused_dispatch = dispatcher == MoeDispatcher::flex;
  const double e = local_experts;
  MoeHostOps ops;
  switch (step) {
    case MoeStep::route:
      // Forward: gate GEMM, fused top-k + score, aux-loss scores, tokens per expert, aux loss, routing-map
      // sum, EP all-gather of the counts, two split sums, two host copies, then (alltoall) the fused
      // permute's row-id map and permute; flex: DeepEP's dispatch layout instead. Backward: permute
      // backward, aux-loss backward (2), top-k backward, gate dgrad and wgrad.
      ops.eager_ops = backward ? (fused_dispatch ? 5 : 6) : (fused_dispatch ? 11 : 14);
      break;
    case MoeStep::dispatch: ops.eager_ops = backward ? 1 : (fused_dispatch ? 1 : 2); break;  // tokens (+ probs)
    case MoeStep::experts:
      // Two TEGroupedLinear calls, the activation, the reorder by local expert and back
      // (sort_chunks_by_idxs or the flex permute).
      ops.te_modules = 2;
      ops.eager_ops = 1 + (fused_dispatch || local_experts > 1 ? 2 : 0);
      ops.expert_launches = e * ((backward ? 4 : 2) + (low_precision ? 2 : 0));
      break;
    case MoeStep::combine: ops.eager_ops = backward ? (fused_dispatch ? 1 : 2) : 1; break;
    case MoeStep::unpermute: ops.eager_ops = fused_dispatch ? 0 : 1; break;
  }
  return ops;
}

MoeHostOps graphed_moe_host_ops(const CudaGraphScope& g, MoeStep step, bool backward, MoeHostOps eager) {
  if (g.full_iteration) return {};
  MoeHostOps replay;
  replay.eager_ops = kGraphReplayEagerOps;
  if (step == MoeStep::route) {
    // The router's ops (forward: gate GEMM, top-k with score, aux-loss scores, tokens per expert, aux
    // loss, routing-map sum; backward: aux loss (2), top-k, gate dgrad and wgrad), then the preprocess.
    const double router = backward ? 5 : 6;
    const double preprocess = std::max(0.0, eager.eager_ops - router);
    MoeHostOps ops;
    ops.eager_ops = (g.moe_router ? kGraphReplayEagerOps : router) +
                    (g.moe_preprocess ? (preprocess > 0 ? kGraphReplayEagerOps : 0.0) : preprocess);
    return ops;
  }
  if (!g.moe) return eager;
  return step == MoeStep::experts ? replay : MoeHostOps{};  // one graph for the block, replayed once
}

double moe_layer_attention_host_s(const CudaGraphScope& g, double eager_scale) {
  if (g.full_iteration) return 0.0;
  MoeHostOps ops;
  if (g.attn) {
    ops.eager_ops = kGraphReplayEagerOps;
  } else {
    ops = attention_host_ops();
  }
  ops.eager_scale = eager_scale;
  return ops.seconds();
}

MoeHostOps attention_host_ops() {
  MoeHostOps ops;
  ops.te_modules = 3;
  ops.eager_ops = 3;
  return ops;
}

bool moe_dispatch_syncs_host(MoeDispatcher dispatcher, int ep, int local_experts) {
  if (dispatcher == MoeDispatcher::flex) return ep > 1;
  return ep > 1 || local_experts > 1;
}

}  // namespace fmsim::workload
