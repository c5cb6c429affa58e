#pragma once
// Helpers shared by the unit tests: the shipped catalog, and clusters written to temporary files.
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "fmsim/hardware/catalog.hpp"
#include "fmsim/topology/cluster_graph.hpp"

namespace fmsim::test {

inline const hardware::Catalog& catalog() {
  static const hardware::Catalog loaded = hardware::Catalog::load(FMSIM_TEST_CATALOG_DIR);
  return loaded;
}

inline std::filesystem::path source_dir() { return FMSIM_SOURCE_DIR; }

/// Writes `json` to a fresh temporary file and returns its path.
inline std::filesystem::path write_temp(const std::string& json, const std::string& name = "cluster.json") {
  static int counter = 0;
  auto dir = std::filesystem::temp_directory_path() /
             ("fmsim-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::create_directories(dir);
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
