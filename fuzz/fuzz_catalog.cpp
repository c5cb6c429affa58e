// Fuzz target: the hardware catalog (topologies/catalog/*.json, or $FMSIM_CATALOG_DIR). The first byte
// picks which of the four files the rest replaces; the other three are the shipped ones.
#include <array>

#include "fuzz_support.hpp"

namespace {
const std::array<const char*, 4> kFiles = {"gpus.json", "instances.json", "networks.json", "storage.json"};

/// scratch/catalog-N: the shipped catalog with file N left for the input.
std::filesystem::path catalog_dir(std::size_t replaced) {
  namespace fs = std::filesystem;
  const fs::path dir = fmsim::fuzz::scratch_dir() / ("catalog-" + std::to_string(replaced));
  if (!fs::exists(dir)) {
    fs::create_directory(dir);
    for (std::size_t i = 0; i < kFiles.size(); ++i) {
      if (i != replaced) fs::create_symlink(fmsim::fuzz::source_dir() / "topologies" / "catalog" / kFiles[i], dir / kFiles[i]);
    }
  }
  return dir;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t replaced = data[0] % kFiles.size();
  const auto dir = catalog_dir(replaced);
  const auto input = fmsim::fuzz::write_input(data + 1, size - 1, kFiles[replaced]);
  std::filesystem::copy_file(input, dir / kFiles[replaced], std::filesystem::copy_options::overwrite_existing);
  fmsim::fuzz::expect_input_error_only([&] { (void)fmsim::hardware::Catalog::load(dir); });
  return 0;
}
