// The SSD chunked scan's kernels (ssd_scan.hpp).
#include "fmsim/workload/ssd_scan.hpp"

#include <algorithm>

#include "fmsim/compute/ssd_kernels.hpp"

namespace fmsim::workload {
namespace {

/// Per-token HBM bytes of the tensors the kernels read and write, and per-token matrix products, on one
/// rank (CP's all-to-all gives a rank cp x the tokens of 1/cp of the heads: the same per-token figures).
struct Per {
  double x, b, c, dt, y, states, cb;  ///< bytes
  double hpn, hqp, gqn;               ///< FLOPs: 2 H P N, 2 H Q P, 2 G Q N
};

Per per_token(const MambaShape& s, double tp) {
  const double H = s.heads / tp, G = s.groups / tp, P = s.head_dim, N = s.state, Q = s.chunk;
  Per p{};
  p.x = 2.0 * H * P;               // x (bf16)
  p.b = 2.0 * G * N;               // B
  p.c = 2.0 * G * N;               // C
  p.dt = 8.0 * H;                  // dt after softplus and dA cumulative sum (fp32)
  p.y = 2.0 * H * P;               // output
  p.states = 4.0 * H * P * N / Q;  // one fp32 state (P x N per head) per chunk of Q tokens
  p.cb = 4.0 * G * Q;              // C B^T within each chunk (fp32, Q x Q per group and chunk)
  // A chunk's states from B and x (P x N per head), the output from the states and C, the intra-chunk
  // output (Q keys per token, P values per head), C B^T within each chunk (Q x N per group).
  p.hpn = 2.0 * H * P * N;
  p.hqp = 2.0 * H * Q * P;
  p.gqn = 2.0 * G * Q * N;
  return p;
}

}  // namespace

std::vector<SsdKernel> ssd_forward_kernels(const MambaShape& shape, double tp) {
  const Per p = per_token(shape, tp);
  return {{"ssd.chunk_cumsum", p.dt / 4 + p.dt, 0},
          {"ssd.chunk_state", p.b + p.x + p.dt + p.states, p.hpn},
          {"ssd.state_passing", 2 * p.states, 0},
          {"ssd.bmm_chunk", p.c + p.b + p.cb, p.gqn},
          {"ssd.chunk_scan", p.cb + p.x + p.dt + p.c + p.states + p.y, p.hqp + p.hpn}};
}

std::vector<SsdKernel> ssd_backward_kernels(const MambaShape& shape, double tp) {
  const Per p = per_token(shape, tp);
  return {{"ssd.bwd.recompute_states", p.b + p.x + p.dt + 3 * p.states, p.hpn},
          {"ssd.bwd.dstates", p.y + p.c + p.dt / 2 + p.states, p.hpn},
          {"ssd.bwd.state_passing", 3 * p.states, 0},
          {"ssd.bwd.dx", 2 * p.x + p.b + p.cb + p.y + p.states + 1.5 * p.dt, p.hqp + p.hpn},
          {"ssd.bwd.dC", p.states + p.y + 2 * p.c, p.hpn},
          {"ssd.bwd.dB", p.x + p.dt + p.states + p.b, p.hpn},
          {"ssd.bwd.dcb", p.x + p.y + p.dt + p.cb, p.hqp},
          {"ssd.bwd.bmm_chunk", p.cb + 2 * p.b + 2 * p.c, 2 * p.gqn},
          {"ssd.bwd.chunk_cumsum", p.dt / 4 + 2 * p.dt, 0}};
}

double ssd_kernel_s(const compute::ComputeModel& gpu, const SsdKernel& kernel, double tokens, bool backward) {
  const double rate = backward ? compute::kSsdBackwardFlopRate : compute::kSsdForwardFlopRate;
  return std::max(gpu.memory_s(tokens * kernel.bytes_per_token), compute::kMemoryKernelOverhead_s + tokens * kernel.flops_per_token / rate);
}

}  // namespace fmsim::workload
