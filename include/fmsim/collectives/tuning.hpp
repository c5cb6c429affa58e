#pragma once
// Model constants of the collectives part, in one place. Each cites where it comes from; docs/model.md
// explains how they combine. Latency tables are NCCL's own tuning tables (NCCL-NOTES.md section 2, NVIDIA/nccl
// src/graph/tuning.cc, v2.30.7); efficiencies come from the calibration cases named beside them.
#include "fmsim/collectives/collective.hpp"
#include "fmsim/collectives/layout.hpp"

namespace fmsim::collectives::tuning {

/// Achieved fraction of NVLink line rate (per direction) for copy-style traffic on NVLink 4 (H100):
/// ~370 GB/s busbw of 450 GB/s on 8x H100 (calibration coll-h100-8gpu-ring-vs-nvls-nccl-maintainer).
/// The collectives take the figure of the cluster's NVLink generation from the catalog
/// (topologies/catalog/networks.json: copy_efficiency, nvls_efficiency; CommLayout); this Hopper value
/// remains for the training and serving models' point-to-point NVLink transfers.
inline constexpr double kNvlinkCopyEfficiency = 370.0 / 450.0;

/// A fixed cost of every collective operation beyond NCCL's tuning latencies (kernel launch and start,
/// the work descriptors, the nccl-tests loop): the measured floors sit ~5 us above NCCL's own latency
/// on two fabrics and algorithms: 4 x GB200 ring/LL 15.4 us at 1 KiB against 6.6 + 6 x 0.6 = 10.2
/// (calibration coll-azure-nd-gb200-v6-4gpu-allreduce-ring), 8 x H200 NVLS 29.9-31.2 us from 1 KiB to
/// 512 KiB against NCCL's 25 (coll-azure-nd_h200_v5-8gpu-allreduce-nvls). Added to every operation of
/// `fmsim collective` (run_benchmark); collective_cost(), which the training and serving replays use, leaves
/// it out for now (their calibrations were set without it; docs/model.md).
inline constexpr double kOperationOverhead_s = 5.0e-6;

/// NVLS chunk (NCCL nvlsChunkSize, 128 KiB; NCCL-NOTES.md section 3) and NVLS channels by GPU generation
/// (16 on SM90; on SM100 and later 24 in one node or one NVL domain, 32 across domains; NCCL-NOTES.md
/// section 3).
inline constexpr double kNvlsChunkBytes = 131072.0;
int nvls_channels(int sm_version, bool multi_domain);

/// Achieved fraction of EFA/InfiniBand line rate for NCCL Simple traffic: 2-node p5 all_gather reaches
/// 328-334 GB/s busbw of 400 GB/s (calibration coll-aws-p5-allgather-2nodes, 2 GiB), and the same
/// factor puts 2-node alltoall at 78 GB/s busbw against 79 measured (coll-aws-p5-alltoall-2nodes).
inline constexpr double kNetworkEfficiency = 0.82;

/// Bandwidth factors of the protocols relative to Simple (NCCL tuning.cc: LL moves 4 B of data per
/// 8 B line, LL128 120 B per 128 B line and NCCL applies 0.92 to ring LL128).
inline constexpr double kLlBandwidthFactor = 0.5;
inline constexpr double kLl128BandwidthFactor = 0.92;

/// NCCL llMaxBws (GB/s of busbw) that cap LL: single node by GPU generation (Hopper 141, Blackwell
/// 282); several nodes by host CPU vendor and node count (Intel 39.0 / 20.4, AMD 22.5 / 19.0 for
/// 2 / >= 4 nodes). NCCL-NOTES.md section 2.
double ll_max_busbw_Bps(int sm_version, bool amd_host, int islands);

/// NCCL baseLat (us), per algorithm and protocol: Ring/Tree 6.6-6.8 LL, 14.0 LL128, 8.4 Simple.
double base_latency_s(Algorithm algorithm, Protocol protocol);

/// NCCL hwLat over NVLink (us) per step.
double nvlink_step_latency_s(Algorithm algorithm, Protocol protocol);

/// NCCL hwLat over the network (us) per step, to which the network's message latency is added
/// (twice for Simple, as NCCL adds latencyInter twice).
double network_step_latency_s(Algorithm algorithm, Protocol protocol, double message_latency_s);

/// NCCL netOverhead on multi-node rings: 1 us Intel, 2 us AMD, x3 for Simple.
double ring_net_overhead_s(bool amd_host, Protocol protocol);

/// Ring Simple all_reduce on more than one node: NCCL multiplies its latency by 1.4 (SM80+).
inline constexpr double kRingSimpleMultiNodeLatencyFactor = 1.4;

/// Pipelining of tree-like algorithms: chunks of 512 KiB (aws-ofi-nccl sets NCCL_NVLSTREE_MAX_CHUNKSIZE
/// and NCCL_P2P_NET_CHUNKSIZE to 524288 on p5) over 16 channels (NCCL NVLS channels on SM90).
inline constexpr double kPipelineChunkBytes = 524288.0;
inline constexpr int kChannels = 16;

/// NVLS-tree's network stage: a fixed cost per chunk beyond its wire time (the proxy's post and the
/// receive-side flush before the NVLS multicast may read the chunk). Set from NVIDIA/nccl PR #1112
/// (8 p5 nodes, 4 GiB): 64 KiB chunks reach 104 GB/s busbw where the default reaches 280, a ratio of
/// 0.371 that a per-chunk cost c gives when (64K/B + c)/(512K/B + c) = 0.371 at B = 0.82 x 50 GB/s,
/// c ~ 4 us. It makes the network share of 512 KiB chunks 62 % of the EFA line rate (not 82 % as for
/// rings), which the 2-node calibration curve (coll-aws-p5-2node-allreduce-8B-16GB) was not used to set.
inline constexpr double kNvlsTreeNetChunkOverhead_s = 4.0e-6;

/// Per-peer cost of an alltoall message on the network (proxy progress, RDMA-write handshake for
/// messages above the 8 KiB eager limit, aws-ofi-nccl doc): an estimate, not fitted to a measurement
/// (none beyond 2 nodes in the calibration set); see docs/validation.md.
inline constexpr double kAlltoallPerPeerOverhead_s = 2.0e-6;

/// aws-ofi-nccl's minimum stripe size (its threshold scheduler, `min_stripe_size`, default 128 KiB,
/// NCCL-NOTES.md section 5): a message of m bytes goes over ceil(m / 128 KiB) of a GPU's NICs (rounded
/// down to a divisor of the NIC count), round-robin; smaller messages use one NIC.
inline constexpr double kMinStripeBytes = 131072.0;

/// Fraction of a GPU's NICs kept busy when each of `channels` channels (spread evenly over the
/// island's GPUs) has one `message_bytes` message in flight, as in a ring step. 1 where the rail has
/// one NIC or the network is not EFA.
double rail_use(const CommLayout& layout, double message_bytes, int channels);

/// NCCL_STEPS: slots per channel connection, i.e. how many steps a sender may run ahead of its receiver.
inline constexpr int kSendWindowSteps = 8;

}  // namespace fmsim::collectives::tuning
