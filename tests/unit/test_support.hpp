#pragma once
// Helpers shared by the unit tests: the shipped catalog, and clusters written to temporary files.
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>
#include <unistd.h>

#include "fmsim/hardware/catalog.hpp"
#include "fmsim/topology/cluster_graph.hpp"

namespace fmsim::test {

inline const hardware::Catalog& catalog() {
  static const hardware::Catalog loaded = hardware::Catalog::load(FMSIM_TEST_CATALOG_DIR);
  return loaded;
}

inline std::filesystem::path source_dir() { return FMSIM_SOURCE_DIR; }

/// The temporary directories this process made, removed when it exits.
struct TempDirs {
  std::vector<std::filesystem::path> made;
  ~TempDirs() {
    std::error_code ignored;
    for (const auto& dir : made) std::filesystem::remove_all(dir, ignored);
  }
};

/// Writes `json` to a fresh temporary file and returns its path. Its directory is named by the process id
/// and a counter; one left by an earlier process with the same id (a run that was killed) is emptied first,
/// so a test that copies files into it never meets a stale one.
inline std::filesystem::path write_temp(const std::string& json, const std::string& name = "cluster.json") {
  static int counter = 0;
  static TempDirs dirs;
  auto dir = std::filesystem::temp_directory_path() /
             ("fmsim-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  dirs.made.push_back(dir);
  auto path = dir / name;
  std::ofstream(path) << json;
  return path;
}

inline topology::ClusterGraph cluster_from_json(const std::string& json) {
  return topology::build_cluster_graph(topology::load_cluster(write_temp(json), catalog()));
}

inline topology::ClusterGraph shipped_cluster(const std::string& file) {
  return topology::build_cluster_graph(topology::load_cluster(source_dir() / "topologies" / file, catalog()));
}

}  // namespace fmsim::test
