#include "fmsim/hardware/catalog.hpp"

#include <cstdlib>

#include "fmsim/common/error.hpp"

#ifndef FMSIM_DEFAULT_CATALOG_DIR
#define FMSIM_DEFAULT_CATALOG_DIR "topologies/catalog"
#endif

namespace fmsim::hardware {
namespace {

template <typename Map>
const typename Map::mapped_type& find_or_throw(const Map& map, const std::string& name, const char* what) {
  auto it = map.find(name);
  if (it == map.end()) {
    throw InputError("unknown " + std::string(what) + " '" + name + "' (known: " + join_keys(map) + ")");
  }
  return it->second;
}

template <typename Map>
std::vector<std::string> names_of(const Map& map) {
  std::vector<std::string> names;
  for (const auto& entry : map) names.push_back(entry.first);
  return names;
}

}  // namespace

std::filesystem::path Catalog::default_directory() {
  if (const char* env = std::getenv("FMSIM_CATALOG_DIR"); env != nullptr && *env != '\0') return env;
  return FMSIM_DEFAULT_CATALOG_DIR;
}

const GpuSpec& Catalog::gpu(const std::string& name) const { return find_or_throw(gpus_, name, "GPU"); }
const InterconnectSpec& Catalog::interconnect(const std::string& name) const {
  return find_or_throw(interconnects_, name, "interconnect");
}
const InstanceSpec& Catalog::instance(const std::string& name) const {
  return find_or_throw(instances_, name, "instance type");
}
const UltraServerSpec& Catalog::ultraserver(const std::string& name) const {
  return find_or_throw(ultraservers_, name, "UltraServer type");
}
const FsxDeploymentSpec& Catalog::fsx_deployment(const std::string& name) const {
  return find_or_throw(fsx_, name, "FSx for Lustre deployment type");
}
std::vector<std::string> Catalog::instance_names() const { return names_of(instances_); }
std::vector<std::string> Catalog::ultraserver_names() const { return names_of(ultraservers_); }
std::vector<std::string> Catalog::fsx_deployment_names() const { return names_of(fsx_); }

}  // namespace fmsim::hardware
