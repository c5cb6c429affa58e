// Fuzz target: the hardware catalog (topologies/catalog/*.json). The first byte picks which of the four
// files the rest replaces; the other three are the shipped ones, read once (Catalog::from_files), so that
// each input costs the parse of its own file and the catalog's checks, not four parses.
#include <array>

#include "fmsim/config/json_file.hpp"
#include "fuzz_support.hpp"

namespace {
// The order of the first byte's choice (kept: the corpus and fuzz/regressions/catalog use it).
const std::array<const char*, 4> kFiles = {"gpus.json", "instances.json", "networks.json", "storage.json"};

/// The shipped catalog files, parsed once.
const std::array<fmsim::config::JsonFile, 4>& shipped_files() {
  static const std::array<fmsim::config::JsonFile, 4> files = [] {
    std::array<fmsim::config::JsonFile, 4> parsed;
    for (std::size_t i = 0; i < kFiles.size(); ++i) {
      parsed[i] = fmsim::config::load_json_file(fmsim::fuzz::source_dir() / "topologies" / "catalog" / kFiles[i]);
    }
    return parsed;
  }();
  return files;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t replaced = data[0] % kFiles.size();
  const auto& shipped = shipped_files();
  const auto input = fmsim::fuzz::write_input(data + 1, size - 1, kFiles[replaced]);
  fmsim::fuzz::expect_input_error_only([&] {
    const fmsim::config::JsonFile file = fmsim::config::load_json_file(input);
    auto pick = [&](std::size_t i) -> const fmsim::config::JsonFile& { return i == replaced ? file : shipped[i]; };
    (void)fmsim::hardware::Catalog::from_files(pick(0), pick(2), pick(1), pick(3));  // gpus, networks, instances, storage
  });
  return 0;
}
