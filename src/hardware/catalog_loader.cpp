// Reads topologies/catalog/*.json into a Catalog. A figure is {"value": ..., "source": "..."}; a figure
// without a non-empty source is rejected, so every number fmsim uses can be traced.
#include <cmath>

#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"
#include "fmsim/config/object_reader.hpp"
#include "fmsim/hardware/catalog.hpp"

namespace fmsim::hardware {

using config::ObjectReader;
using units::Dimension;

class CatalogLoader {
 public:
  explicit CatalogLoader(Catalog& catalog) : catalog_(catalog) {}

  void load(const config::JsonFile& gpus, const config::JsonFile& networks, const config::JsonFile& instances,
            const config::JsonFile& storage) {
    load_gpus(gpus);
    load_networks(networks);
    load_instances(instances);
    load_storage(storage);
    cross_check();
  }

 private:
  /// Opens a figure object, records its source and returns a reader positioned on it.
  static ObjectReader open_figure(ObjectReader& parent, const std::string& key, Sources& sources) {
    ObjectReader figure = parent.required_object(key);
    std::string source = figure.required_string("source");
    if (source.empty()) figure.fail("source", "a non-empty citation of where the figure comes from");
    sources[key] = source;
    return figure;
  }
  static double quantity(ObjectReader& parent, const std::string& key, Dimension dimension, Sources& sources) {
    ObjectReader figure = open_figure(parent, key, sources);
    double value = figure.required_quantity("value", dimension);
    figure.reject_unknown_keys({"note"});
    return value;
  }
  static double optional_quantity(ObjectReader& parent, const std::string& key, Dimension dimension,
                                  Sources& sources) {
    if (!parent.has(key)) return 0.0;
    return quantity(parent, key, dimension, sources);
  }
  static int count(ObjectReader& parent, const std::string& key, Sources& sources) {
    ObjectReader figure = open_figure(parent, key, sources);
    int value = static_cast<int>(figure.required_int("value", 1));
    figure.reject_unknown_keys({"note"});
    return value;
  }
  /// A positive figure; above `maximum` it fails naming `expected`.
  static double number(ObjectReader& parent, const std::string& key, Sources& sources, double maximum = INFINITY,
                       const char* expected = "") {
    ObjectReader figure = open_figure(parent, key, sources);
    double value = figure.required_number("value", 0.0);
    if (value > maximum) figure.fail("value", expected);
    figure.reject_unknown_keys({"note"});
    return value;
  }
  static double fraction(ObjectReader& parent, const std::string& key, Sources& sources) {
    ObjectReader figure = open_figure(parent, key, sources);
    double value = figure.required_number("value", 0.0);
    if (value > 1.0) figure.fail("value", "a fraction in (0, 1]");
    figure.reject_unknown_keys({"note"});
    return value;
  }
  static bool flag(ObjectReader& parent, const std::string& key, Sources& sources) {
    ObjectReader figure = open_figure(parent, key, sources);
    const auto& value = figure.required_value("value");
    if (!value.is_boolean()) figure.fail("value", "true or false");
    figure.reject_unknown_keys({"note"});
    return value.get<bool>();
  }

  void load_gpus(const config::JsonFile& file) {
    ObjectReader root(file.root, file.path);
    root.required_string("schema");
    root.optional_string("description");
    ObjectReader table = root.required_object("gpus");
    for (const auto& name : table.keys()) {
      ObjectReader entry = table.required_object(name);
      GpuSpec gpu;
      gpu.name = name;
      gpu.architecture = entry.required_string("architecture");
      gpu.sm_version = count(entry, "sm_version", gpu.sources);
      gpu.bf16_dense_flops = quantity(entry, "bf16_dense", Dimension::flop_rate, gpu.sources);
      gpu.fp8_dense_flops = optional_quantity(entry, "fp8_dense", Dimension::flop_rate, gpu.sources);
      gpu.fp4_dense_flops = optional_quantity(entry, "fp4_dense", Dimension::flop_rate, gpu.sources);
      gpu.hbm_bytes = quantity(entry, "hbm_capacity", Dimension::bytes, gpu.sources);
      gpu.hbm_bandwidth_Bps = quantity(entry, "hbm_bandwidth", Dimension::bandwidth, gpu.sources);
      gpu.nvlink_bandwidth_per_direction_Bps =
          quantity(entry, "nvlink_bandwidth_per_direction", Dimension::bandwidth, gpu.sources);
      gpu.nvlink_links = count(entry, "nvlink_links", gpu.sources);
      gpu.nvlink_sharp = flag(entry, "nvlink_sharp", gpu.sources);
      gpu.sm_count = count(entry, "sm_count", gpu.sources);
      gpu.gemm_peak_efficiency = fraction(entry, "gemm_peak_efficiency", gpu.sources);
      if (entry.has("sustained_clock_fraction")) {
        gpu.sustained_clock_fraction = number(entry, "sustained_clock_fraction", gpu.sources, 1.5, "a clock ratio in (0, 1.5]");
      }
      if (entry.has("attention_exp_rate")) {
        gpu.attention_exp_rate = number(entry, "attention_exp_rate", gpu.sources, 4, "an exponential-rate ratio in (0, 4]");
        if (gpu.attention_exp_rate <= 0) entry.fail("attention_exp_rate", "an exponential-rate ratio in (0, 4]");
      }
      if (entry.has("gemm_fp4_peak_efficiency")) {
        if (gpu.fp4_dense_flops <= 0) entry.fail("gemm_fp4_peak_efficiency", "only with fp4_dense (a GPU with FP4 tensor cores)");
        gpu.gemm_fp4_peak_efficiency = fraction(entry, "gemm_fp4_peak_efficiency", gpu.sources);
      }
      if (entry.has("gemm_tile_k_overhead")) {
        gpu.gemm_tile_k_overhead = number(entry, "gemm_tile_k_overhead", gpu.sources, 65536, "K elements per output tile in [0, 65536]");
      }
      if (entry.has("gemm_mxfp8_rate")) {
        if (gpu.sm_version < 100) entry.fail("gemm_mxfp8_rate", "only for a GPU with MXFP8 tensor cores (sm_version 100 or later)");
        gpu.gemm_mxfp8_rate = fraction(entry, "gemm_mxfp8_rate", gpu.sources);
      }
      gpu.hbm_achievable_fraction = fraction(entry, "hbm_achievable_fraction", gpu.sources);
      if (entry.has("tdp_W")) gpu.tdp_W = number(entry, "tdp_W", gpu.sources);
      entry.reject_unknown_keys();
      catalog_.gpus_[name] = gpu;
    }
    root.reject_unknown_keys();
  }

  void load_networks(const config::JsonFile& file) {
    ObjectReader root(file.root, file.path);
    root.required_string("schema");
    root.optional_string("description");
    ObjectReader table = root.required_object("interconnects");
    for (const auto& name : table.keys()) {
      ObjectReader entry = table.required_object(name);
      InterconnectSpec spec;
      spec.name = name;
      spec.kind = entry.choice_or("kind", {"nvlink", "efa", "infiniband"}, "");
      spec.message_latency_s = quantity(entry, "message_latency", Dimension::time, spec.sources);
      spec.switch_latency_s = quantity(entry, "switch_latency", Dimension::time, spec.sources);
      if (spec.kind == "nvlink") {
        spec.copy_efficiency = fraction(entry, "copy_efficiency", spec.sources);
        // Absent where the generation has no NVLink SHARP (NVLink 3).
        if (entry.has("nvls_efficiency")) spec.nvls_efficiency = fraction(entry, "nvls_efficiency", spec.sources);
      }
      entry.reject_unknown_keys();
      catalog_.interconnects_[name] = spec;
    }
    root.reject_unknown_keys();
  }

  void load_instances(const config::JsonFile& file) {
    ObjectReader root(file.root, file.path);
    root.required_string("schema");
    root.optional_string("description");
    ObjectReader table = root.required_object("instances");
    for (const auto& name : table.keys()) {
      ObjectReader entry = table.required_object(name);
      InstanceSpec spec;
      spec.name = name;
      spec.provider = entry.choice_or("provider", {"aws", "reference"}, "");
      spec.host_cpu = entry.choice_or("host_cpu", {"amd", "intel", "arm"}, "intel");
      spec.gpu = entry.required_string("gpu");
      spec.nvlink = entry.required_string("nvlink");
      spec.nvlink_domain = entry.choice_or("nvlink_domain", {"instance", "ultraserver"}, "instance");
      spec.interconnect = entry.required_string("interconnect");
      spec.gpus = count(entry, "gpus", spec.sources);
      spec.gpu_memory_bytes = optional_quantity(entry, "gpu_memory", Dimension::bytes, spec.sources);
      spec.nics = count(entry, "nics", spec.sources);
      spec.network_bandwidth_Bps = quantity(entry, "network_bandwidth", Dimension::bandwidth, spec.sources);
      spec.nvme_bytes = quantity(entry, "nvme_capacity", Dimension::bytes, spec.sources);
      spec.nvme_read_Bps = quantity(entry, "nvme_read_bandwidth", Dimension::bandwidth, spec.sources);
      spec.nvme_write_Bps = quantity(entry, "nvme_write_bandwidth", Dimension::bandwidth, spec.sources);
      spec.host_memory_bytes = quantity(entry, "host_memory", Dimension::bytes, spec.sources);
      spec.host_gpu_bandwidth_Bps = quantity(entry, "host_gpu_bandwidth", Dimension::bandwidth, spec.sources);
      if (entry.has("host_op_time_factor")) {
        ObjectReader figure = open_figure(entry, "host_op_time_factor", spec.sources);
        spec.host_op_time_factor = figure.required_number("value", 0.0);
        if (spec.host_op_time_factor <= 0 || spec.host_op_time_factor > 100) figure.fail("value", "a time ratio in (0, 100]");
        figure.reject_unknown_keys({"note"});
      }
      if (entry.has("usd_per_hour")) {
        ObjectReader price = open_figure(entry, "usd_per_hour", spec.sources);
        spec.usd_per_hour = price.required_number("value", 0.0);
        spec.price_as_of = price.required_string("as_of");
        price.reject_unknown_keys({"note"});
      }
      entry.reject_unknown_keys();
      catalog_.instances_[name] = spec;
    }
    ObjectReader servers = root.required_object("ultraservers");
    for (const auto& name : servers.keys()) {
      ObjectReader entry = servers.required_object(name);
      UltraServerSpec spec;
      spec.name = name;
      spec.instance = entry.required_string("instance");
      spec.instances = count(entry, "instances", spec.sources);
      entry.reject_unknown_keys();
      catalog_.ultraservers_[name] = spec;
    }
    root.reject_unknown_keys();
  }

  void load_storage(const config::JsonFile& file) {
    ObjectReader root(file.root, file.path);
    root.required_string("schema");
    root.optional_string("description");
    ObjectReader fsx = root.required_object("fsx_lustre");
    for (const auto& name : fsx.keys()) {
      ObjectReader entry = fsx.required_object(name);
      FsxDeploymentSpec spec;
      spec.name = name;
      spec.disk_throughput_per_tib_Bps =
          quantity(entry, "disk_throughput_per_tib", Dimension::bandwidth, spec.sources);
      spec.network_throughput_per_tib_Bps =
          quantity(entry, "network_throughput_per_tib", Dimension::bandwidth, spec.sources);
      spec.metadata_latency_s = quantity(entry, "metadata_latency", Dimension::time, spec.sources);
      spec.ost_bytes = quantity(entry, "ost_capacity", Dimension::bytes, spec.sources);
      spec.metadata_ops_per_tib_per_s = quantity(entry, "metadata_rate_per_tib", Dimension::request_rate, spec.sources);
      entry.reject_unknown_keys();
      catalog_.fsx_[name] = spec;
    }
    ObjectReader client = root.required_object("lustre_client");
    catalog_.lustre_client_.tcp_Bps = quantity(client, "tcp_bandwidth", Dimension::bandwidth, catalog_.lustre_client_.sources);
    catalog_.lustre_client_.efa_Bps = quantity(client, "efa_bandwidth", Dimension::bandwidth, catalog_.lustre_client_.sources);
    client.reject_unknown_keys();
    ObjectReader s3 = root.required_object("s3");
    S3Spec& spec = catalog_.s3_;
    spec.put_rate_per_prefix_per_s = quantity(s3, "put_rate_per_prefix", Dimension::request_rate, spec.sources);
    spec.get_rate_per_prefix_per_s = quantity(s3, "get_rate_per_prefix", Dimension::request_rate, spec.sources);
    spec.per_instance_bandwidth_Bps = quantity(s3, "per_instance_bandwidth", Dimension::bandwidth, spec.sources);
    spec.first_byte_latency_s = quantity(s3, "first_byte_latency", Dimension::time, spec.sources);
    spec.part_bytes = quantity(s3, "part_size", Dimension::bytes, spec.sources);
    spec.max_concurrent_requests = count(s3, "max_concurrent_requests", spec.sources);
    s3.reject_unknown_keys();
    root.reject_unknown_keys();
  }

  /// References between tables must resolve (an instance names a GPU and interconnects that exist).
  void cross_check() const {
    for (const auto& [name, instance] : catalog_.instances_) {
      const GpuSpec& gpu = catalog_.gpu(instance.gpu);
      if (instance.gpu_memory_bytes > gpu.hbm_bytes) {
        throw InputError("instances.json: at /instances/" + name + "/gpu_memory: more than the " + gpu.name +
                         "'s hbm_capacity (expected the HBM per GPU the instance exposes, at most the GPU's)");
      }
      if (catalog_.interconnect(instance.nvlink).kind != "nvlink") {
        throw InputError("instances.json: at /instances/" + name + "/nvlink: '" + instance.nvlink +
                         "' is not an NVLink generation");
      }
      if (catalog_.interconnect(instance.interconnect).kind == "nvlink") {
        throw InputError("instances.json: at /instances/" + name + "/interconnect: '" +
                         instance.interconnect + "' is not a scale-out network");
      }
    }
    for (const auto& [name, server] : catalog_.ultraservers_) {
      const InstanceSpec& instance = catalog_.instance(server.instance);
      if (instance.nvlink_domain != "ultraserver") {
        throw InputError("instances.json: at /ultraservers/" + name + "/instance: '" + server.instance +
                         "' does not have nvlink_domain 'ultraserver'");
      }
    }
  }

  Catalog& catalog_;
};

Catalog Catalog::load(const std::filesystem::path& directory) {
  if (!std::filesystem::is_directory(directory)) {
    throw InputError(directory.string() + ": catalog directory not found (set FMSIM_CATALOG_DIR or --catalog)");
  }
  // Read in this order, so that the first unreadable file is the one named.
  const config::JsonFile gpus = config::load_json_file(directory / "gpus.json");
  const config::JsonFile networks = config::load_json_file(directory / "networks.json");
  const config::JsonFile instances = config::load_json_file(directory / "instances.json");
  const config::JsonFile storage = config::load_json_file(directory / "storage.json");
  return from_files(gpus, networks, instances, storage);
}

Catalog Catalog::from_files(const config::JsonFile& gpus, const config::JsonFile& networks, const config::JsonFile& instances,
                            const config::JsonFile& storage) {
  Catalog catalog;
  CatalogLoader(catalog).load(gpus, networks, instances, storage);
  return catalog;
}

}  // namespace fmsim::hardware
