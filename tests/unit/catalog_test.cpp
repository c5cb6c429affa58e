#include <catch2/catch.hpp>
#include <functional>

#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"
#include "test_support.hpp"

using Catch::Matchers::Contains;
using fmsim::test::catalog;

TEST_CASE("the GPU seed figures of the issue are in the catalog", "[catalog]") {
  const auto& h100 = catalog().gpu("H100-SXM");
  CHECK(h100.bf16_dense_flops == Approx(989.5e12));
  CHECK(h100.fp8_dense_flops == Approx(1979e12));
  CHECK(h100.hbm_bytes == Approx(80e9));
  CHECK(h100.hbm_bandwidth_Bps == Approx(3.35e12));
  const auto& h200 = catalog().gpu("H200-SXM");
  CHECK(h200.bf16_dense_flops == Approx(989.5e12));
  CHECK(h200.hbm_bytes == Approx(141e9));
  CHECK(h200.hbm_bandwidth_Bps == Approx(4.8e12));
  const auto& b200 = catalog().gpu("B200");
  CHECK(b200.bf16_dense_flops == Approx(2.25e15));
  CHECK(b200.fp8_dense_flops == Approx(4.5e15));
  CHECK(b200.hbm_bytes == Approx(180e9));
  CHECK(b200.hbm_bandwidth_Bps == Approx(8e12));
  const auto& b300 = catalog().gpu("B300");
  CHECK(b300.bf16_dense_flops == Approx(2.25e15));
  CHECK(b300.fp8_dense_flops == Approx(4.5e15));
  CHECK(b300.hbm_bytes == Approx(288e9));
  CHECK(b300.hbm_bandwidth_Bps == Approx(8e12));
}

TEST_CASE("every GPU has its figures and FP4 exactly where the hardware has it", "[catalog]") {
  for (const char* name : {"A100-SXM4-40GB", "A100-SXM4-80GB", "H100-SXM", "H200-SXM", "B200", "B300", "GB200"}) {
    INFO(name);
    const auto& gpu = catalog().gpu(name);
    CHECK(gpu.bf16_dense_flops > 0);
    CHECK(gpu.hbm_bytes > 0);
    CHECK(gpu.hbm_bandwidth_Bps > 0);
    CHECK(gpu.nvlink_bandwidth_per_direction_Bps > 0);
    bool blackwell = gpu.sm_version >= 100;
    CHECK((gpu.fp4_dense_flops > 0) == blackwell);
    CHECK((gpu.fp8_dense_flops > 0) == (gpu.sm_version >= 90));
    CHECK(gpu.nvlink_sharp == (gpu.sm_version >= 90));
  }
}

TEST_CASE("every AWS instance type of the issue is there with its network and price", "[catalog]") {
  const double gbps = 1.25e8;
  struct Row { const char* name; double network_Bps; const char* efa; };
  for (const Row& row : {Row{"p4d.24xlarge", 400 * gbps, "efa-v1"}, Row{"p4de.24xlarge", 400 * gbps, "efa-v1"},
                         Row{"p5.48xlarge", 3200 * gbps, "efa-v2"}, Row{"p5e.48xlarge", 3200 * gbps, "efa-v2"},
                         Row{"p5en.48xlarge", 3200 * gbps, "efa-v3"}, Row{"p6-b200.48xlarge", 3200 * gbps, "efa-v4"},
                         Row{"p6-b300.48xlarge", 6400 * gbps, "efa-v4"}}) {
    INFO(row.name);
    const auto& instance = catalog().instance(row.name);
    CHECK(instance.provider == "aws");
    CHECK(instance.gpus == 8);
    CHECK(instance.network_bandwidth_Bps == Approx(row.network_Bps));
    CHECK(instance.interconnect == row.efa);
    CHECK(instance.usd_per_hour.value_or(0) > 0);
    CHECK_FALSE(instance.price_as_of.empty());
    CHECK(instance.nvme_bytes > 0);
    CHECK(instance.host_memory_bytes > 0);
  }
}

TEST_CASE("a P6e-GB200 UltraServer is 72 GPUs and 13.4 TB of HBM in one NVLink domain", "[catalog]") {
  const auto& server = catalog().ultraserver("u-p6e-gb200x72");
  const auto& instance = catalog().instance(server.instance);
  CHECK(instance.nvlink_domain == "ultraserver");
  CHECK(server.instances * instance.gpus == 72);
  CHECK(server.instances * instance.gpus * catalog().gpu(instance.gpu).hbm_bytes == Approx(13.4e12).epsilon(0.01));
  const auto& half = catalog().ultraserver("u-p6e-gb200x36");
  CHECK(half.instances * catalog().instance(half.instance).gpus == 36);
  CHECK(catalog().ultraserver("dgx-gb200-nvl72").instances * 4 == 72);
}

TEST_CASE("EFA generations keep the published ratios", "[catalog]") {
  double v2 = catalog().interconnect("efa-v2").message_latency_s;
  double v3 = catalog().interconnect("efa-v3").message_latency_s;
  double v4 = catalog().interconnect("efa-v4").message_latency_s;
  CHECK(v3 / v2 == Approx(0.65));          // EFAv3: 35 % lower packet latency than v2
  CHECK(v3 / v4 == Approx(1.18).epsilon(0.01));  // EFAv4: 18 % better collective performance than v3
  CHECK(catalog().interconnect("ib-ndr").kind == "infiniband");
}

TEST_CASE("every figure in every catalog file names its source", "[catalog]") {
  int figures = 0;
  std::function<void(const nlohmann::json&, const std::string&)> walk = [&](const nlohmann::json& node,
                                                                            const std::string& path) {
    if (!node.is_object()) return;
    if (node.contains("value")) {
      ++figures;
      INFO(path);
      REQUIRE(node.contains("source"));
      CHECK(node["source"].get<std::string>().size() > 10);
      return;
    }
    for (auto it = node.begin(); it != node.end(); ++it) walk(it.value(), path + "/" + it.key());
  };
  for (const char* file : {"gpus.json", "instances.json", "networks.json", "storage.json"}) {
    auto doc = fmsim::config::load_json_file(std::filesystem::path(FMSIM_TEST_CATALOG_DIR) / file);
    walk(doc.root, file);
  }
  CHECK(figures > 150);
}

TEST_CASE("unknown names list the known ones", "[catalog]") {
  CHECK_THROWS_WITH(catalog().instance("p9.48xlarge"), Contains("unknown instance type 'p9.48xlarge' (known: "));
  CHECK_THROWS_WITH(catalog().instance("p9.48xlarge"), Contains("p5.48xlarge"));
  CHECK_THROWS_WITH(catalog().gpu("H300"), Contains("H100-SXM"));
}

TEST_CASE("a catalog figure without a source is rejected", "[catalog]") {
  auto dir = fmsim::test::write_temp("{}", "placeholder").parent_path();
  for (const char* file : {"gpus.json", "instances.json", "networks.json", "storage.json"}) {
    std::filesystem::copy_file(std::filesystem::path(FMSIM_TEST_CATALOG_DIR) / file, dir / file);
  }
  auto doc = fmsim::config::load_json_file(dir / "gpus.json").root;
  doc["gpus"]["H100-SXM"]["hbm_capacity"]["source"] = "";
  std::ofstream(dir / "gpus.json") << doc.dump();
  CHECK_THROWS_WITH(fmsim::hardware::Catalog::load(dir),
                    Contains("/gpus/H100-SXM/hbm_capacity/source") && Contains("non-empty citation"));
}
