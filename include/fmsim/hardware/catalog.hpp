#pragma once
// The hardware catalog: GPUs, interconnects, instance types, UltraServers and storage services, loaded
// from topologies/catalog/*.json. Every figure carries its source (see `sources` in each spec).
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fmsim::config {
struct JsonFile;
}  // namespace fmsim::config

namespace fmsim::hardware {

/// Figure name -> where it comes from (datasheet, calibration case id, or "estimate: ...").
using Sources = std::map<std::string, std::string>;

struct GpuSpec {
  std::string name;
  std::string architecture;
  int sm_version = 0;
  double bf16_dense_flops = 0;                  ///< FLOP/s, dense
  double fp8_dense_flops = 0;                   ///< FLOP/s, dense; 0 = not supported
  double fp4_dense_flops = 0;                   ///< FLOP/s, dense; 0 = not supported
  double hbm_bytes = 0;
  double hbm_bandwidth_Bps = 0;
  double nvlink_bandwidth_per_direction_Bps = 0;
  int nvlink_links = 0;
  bool nvlink_sharp = false;                    ///< NVLS in-switch reduction
  int sm_count = 0;                             ///< streaming multiprocessors (GEMM wave quantization)
  double gemm_peak_efficiency = 0;              ///< best achieved fraction of dense peak for one GEMM
  double gemm_fp4_peak_efficiency = 0;          ///< the same for FP4 GEMMs; 0 = as gemm_peak_efficiency
  /// K elements of tensor-core work each GEMM output tile costs beyond its own K loop: filling the
  /// operand pipeline and the epilogue that writes the tile (a tile of depth K takes the time of K + this).
  double gemm_tile_k_overhead = 0;
  double gemm_mxfp8_rate = 1.0;  ///< MXFP8 (1x32 block-scaled) GEMM throughput relative to per-tensor FP8
  /// Tensor-core clock this GPU sustains in multi-GPU training at its power limit, relative to the clock of
  /// the GEMM microbenchmark its gemm_peak_efficiency came from (1 = the same); scales GEMM and attention.
  double sustained_clock_fraction = 1.0;
  /// Exponential throughput of the special-function units relative to Blackwell's (Hopper and Blackwell 1;
  /// Blackwell Ultra 2): the share of fused attention's per-pair cost that is the softmax's exponential.
  double attention_exp_rate = 1.0;
  double hbm_achievable_fraction = 0;           ///< STREAM-like achieved fraction of HBM bandwidth
  double tdp_W = 0;                             ///< board power limit (TDP), watts; 0 = not given
  Sources sources;
};

struct InterconnectSpec {
  std::string name;
  std::string kind;                             ///< "nvlink", "efa" or "infiniband"
  double message_latency_s = 0;                 ///< one-way small-message latency (alpha)
  double switch_latency_s = 0;                  ///< per switch traversed
  /// NVLink generations only (kind "nvlink"): achieved fraction of the per-direction line rate for
  /// copy-style traffic (ring, chain, p2p) and for NVLS (multimem) traffic; 0 for scale-out networks.
  double copy_efficiency = 0;
  double nvls_efficiency = 0;
  Sources sources;
};

struct InstanceSpec {
  std::string name;
  std::string provider;                         ///< "aws" or "reference"
  std::string host_cpu;                         ///< "amd", "intel" or "arm" (NCCL tunes LL limits by it)
  std::string gpu;                              ///< key into the GPU table
  std::string nvlink;                           ///< key into the interconnect table (kind nvlink)
  std::string nvlink_domain;                    ///< "instance" or "ultraserver"
  std::string interconnect;                     ///< scale-out network, key into the interconnect table
  int gpus = 0;
  double gpu_memory_bytes = 0;                  ///< HBM per GPU as this instance exposes it; 0 = the GPU's figure
  int nics = 0;
  double network_bandwidth_Bps = 0;             ///< aggregate scale-out bandwidth per direction
  double nvme_bytes = 0;
  double nvme_read_Bps = 0;
  double nvme_write_Bps = 0;
  double host_memory_bytes = 0;
  double host_gpu_bandwidth_Bps = 0;            ///< per GPU, host <-> device (PCIe or C2C)
  /// Host time of one eager PyTorch op (Python, dispatcher, autograd, kernel launch) relative to the x86
  /// hosts fmsim's host constants come from (moe_host.hpp); Grace hosts take longer.
  double host_op_time_factor = 1.0;
  std::optional<double> usd_per_hour;           ///< on-demand; absent for reference systems
  std::string price_as_of;
  Sources sources;
};

struct UltraServerSpec {
  std::string name;
  std::string instance;
  int instances = 0;
  Sources sources;
};

struct FsxDeploymentSpec {
  std::string name;
  double disk_throughput_per_tib_Bps = 0;
  double network_throughput_per_tib_Bps = 0;
  double metadata_latency_s = 0;
  double ost_bytes = 0;                         ///< capacity of one object storage target (stripe unit)
  double metadata_ops_per_tib_per_s = 0;        ///< metadata operations per second per TiB provisioned
  Sources sources;
};

/// Throughput one Lustre client instance reaches, over TCP (ENA) or EFA (EFA-enabled PERSISTENT_2).
struct LustreClientSpec {
  double tcp_Bps = 0;
  double efa_Bps = 0;
  Sources sources;
};

struct S3Spec {
  double put_rate_per_prefix_per_s = 0;
  double get_rate_per_prefix_per_s = 0;
  double per_instance_bandwidth_Bps = 0;
  double first_byte_latency_s = 0;
  double part_bytes = 0;
  int max_concurrent_requests = 0;              ///< in flight per client process (SDK default)
  Sources sources;
};

class Catalog {
 public:
  /// Loads every catalog file from `directory`. Throws InputError naming the file and key on bad data.
  static Catalog load(const std::filesystem::path& directory);
  /// The four catalog files, already read (gpus, networks, instances, storage: config::load_json_file);
  /// the same checks as load. The catalog fuzz target parses only the file it replaces.
  static Catalog from_files(const config::JsonFile& gpus, const config::JsonFile& networks, const config::JsonFile& instances,
                            const config::JsonFile& storage);
  /// The catalog directory: $FMSIM_CATALOG_DIR if set, else the one the build was configured with.
  static std::filesystem::path default_directory();

  /// Look-ups throw InputError listing the known names when `name` is unknown.
  const GpuSpec& gpu(const std::string& name) const;
  const InterconnectSpec& interconnect(const std::string& name) const;
  const InstanceSpec& instance(const std::string& name) const;
  const UltraServerSpec& ultraserver(const std::string& name) const;
  const FsxDeploymentSpec& fsx_deployment(const std::string& name) const;
  const S3Spec& s3() const { return s3_; }
  const LustreClientSpec& lustre_client() const { return lustre_client_; }

  std::vector<std::string> instance_names() const;
  std::vector<std::string> ultraserver_names() const;
  std::vector<std::string> fsx_deployment_names() const;
  const std::map<std::string, GpuSpec>& gpus() const { return gpus_; }
  const std::map<std::string, InstanceSpec>& instances() const { return instances_; }
  const std::map<std::string, InterconnectSpec>& interconnects() const { return interconnects_; }

 private:
  friend class CatalogLoader;
  std::map<std::string, GpuSpec> gpus_;
  std::map<std::string, InterconnectSpec> interconnects_;
  std::map<std::string, InstanceSpec> instances_;
  std::map<std::string, UltraServerSpec> ultraservers_;
  std::map<std::string, FsxDeploymentSpec> fsx_;
  S3Spec s3_;
  LustreClientSpec lustre_client_;
};

/// "a, b, c" of a map's keys, for error messages.
template <typename Map>
std::string join_keys(const Map& map) {
  std::string text;
  for (const auto& entry : map) text += (text.empty() ? "" : ", ") + entry.first;
  return text;
}

}  // namespace fmsim::hardware
