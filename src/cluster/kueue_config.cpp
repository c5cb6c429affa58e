// Kueue YAML reading (kueue.hpp): ClusterQueue (spec.cohort, spec.resourceGroups[].flavors[].resources[]
// {name: nvidia.com/gpu, nominalQuota, borrowingLimit}, spec.preemption {withinClusterQueue,
// reclaimWithinCohort}), LocalQueue (spec.clusterQueue) and ResourceFlavor (its name only). Other kinds are
// refused; other resources (cpu, memory) are read past: fmsim places whole GPU nodes.
#include <cmath>
#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "fmsim/cluster/kueue.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"
#include "fmsim/config/yaml_guard.hpp"

namespace fmsim::cluster {

namespace {

constexpr const char* kGpu = "nvidia.com/gpu";

/// A Kubernetes quantity of GPUs: an integer (or a string holding one).
double gpu_quantity(const YAML::Node& node, const std::string& where) {
  std::string text;
  try {
    text = node.as<std::string>();
  } catch (const YAML::Exception&) {
    throw InputError(where + ": expected a GPU count");
  }
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v < 0 || v > 1e7 || v != std::floor(v)) {
    throw InputError(where + ": '" + text + "': expected a whole number of GPUs from 0 to 10,000,000");
  }
  return v;
}

std::string text_of(const YAML::Node& node, const std::string& where) {
  if (!node || !node.IsScalar()) throw InputError(where + ": expected a string");
  return node.as<std::string>();
}

void read_document(const YAML::Node& doc, const std::string& where, KueueConfig& k,
                   std::vector<std::pair<std::string, std::string>>& local_queues);

}  // namespace

KueueConfig read_kueue(const std::filesystem::path& path) {
  config::require_regular_file(path, "the Kueue configuration");
  KueueConfig k;
  k.file = path.string();
  std::vector<YAML::Node> docs;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw InputError(path.string() + ": cannot be read");
  const std::string yaml = config::normalize_yaml_line_breaks(text.str());
  config::refuse_misplaced_yaml_comma(yaml, path.string());  // yaml-cpp 0.7 hangs on some
  try {
    docs = YAML::LoadAll(yaml);
  } catch (const YAML::Exception& e) {
    throw InputError(path.string() + ":" + std::to_string(e.mark.line + 1) + ": malformed YAML: " + e.msg);
  }
  std::vector<std::pair<std::string, std::string>> local_queues;  // (name, cluster queue)
  for (std::size_t d = 0; d < docs.size(); ++d) {
    try {
      read_document(docs[d], path.string() + ": document " + std::to_string(d + 1), k, local_queues);
    } catch (const YAML::Exception& e) {
      // yaml-cpp throws where a key is looked up in a scalar or list (metadata: 3, spec: [...]).
      throw InputError(path.string() + ": document " + std::to_string(d + 1) + ": not a Kueue object of the expected shape (" + e.msg + ")");
    }
  }
  if (k.cluster_queues.empty()) throw InputError(path.string() + ": no ClusterQueue");
  for (std::size_t f = 0; f < k.tas_flavors.size(); ++f) {
    if (!k.topologies.count(k.flavor_topology[f])) {
      throw InputError(path.string() + ": ResourceFlavor " + k.tas_flavors[f] + ": spec.topologyName " + k.flavor_topology[f] +
                       " is not a Topology of the file");
    }
  }
  for (const auto& [name, cq] : local_queues) {
    auto it = k.queue_index.find(cq);
    if (it == k.queue_index.end()) throw InputError(path.string() + ": LocalQueue " + name + ": spec.clusterQueue " + cq + " is not defined in the file");
    k.queue_index[name] = it->second;
  }
  return k;
}

namespace {

void read_document(const YAML::Node& doc, const std::string& where, KueueConfig& k,
                   std::vector<std::pair<std::string, std::string>>& local_queues) {
  {
    if (!doc || doc.IsNull()) return;
    if (!doc.IsMap()) throw InputError(where + ": expected a Kubernetes object (a map with kind and metadata)");
    const std::string kind = text_of(doc["kind"], where + " /kind");
    const std::string name = text_of(doc["metadata"]["name"], where + " (" + kind + ") /metadata/name");
    const std::string at = where + " (" + kind + " " + name + ")";
    if (kind == "ResourceFlavor") {  // its topologyName turns on topology-aware scheduling (TAS)
      if (doc["spec"] && doc["spec"]["topologyName"]) {
        k.tas_flavors.push_back(name);
        k.flavor_topology.push_back(text_of(doc["spec"]["topologyName"], at + " /spec/topologyName"));
      }
      return;
    }
    if (kind == "Topology") {
      const YAML::Node levels = doc["spec"]["levels"];
      if (!levels || !levels.IsSequence() || levels.size() == 0) throw InputError(at + " /spec/levels: expected a list of {nodeLabel: ...}");
      std::vector<std::string> labels;
      for (std::size_t l = 0; l < levels.size(); ++l) labels.push_back(text_of(levels[l]["nodeLabel"], at + " /spec/levels/" + std::to_string(l) + "/nodeLabel"));
      k.topologies[name] = labels;
      return;
    }
    if (kind == "LocalQueue") {
      local_queues.push_back({name, text_of(doc["spec"]["clusterQueue"], at + " /spec/clusterQueue")});
      return;
    }
    if (kind != "ClusterQueue") throw InputError(at + " /kind: expected ClusterQueue, LocalQueue, ResourceFlavor or Topology");
    ClusterQueueSpec q;
    q.name = name;
    const YAML::Node spec = doc["spec"];
    if (spec["cohort"]) q.cohort = text_of(spec["cohort"], at + " /spec/cohort");
    bool gpu_seen = false;
    const YAML::Node groups = spec["resourceGroups"];
    if (!groups || !groups.IsSequence()) throw InputError(at + " /spec/resourceGroups: expected a list");
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const YAML::Node flavors = groups[g]["flavors"];
      if (!flavors || !flavors.IsSequence()) throw InputError(at + " /spec/resourceGroups/" + std::to_string(g) + "/flavors: expected a list");
      for (std::size_t f = 0; f < flavors.size(); ++f) {
        const YAML::Node resources = flavors[f]["resources"];
        const std::string fwhere = at + " /spec/resourceGroups/" + std::to_string(g) + "/flavors/" + std::to_string(f);
        if (!resources || !resources.IsSequence()) throw InputError(fwhere + "/resources: expected a list");
        for (std::size_t r = 0; r < resources.size(); ++r) {
          const std::string rwhere = fwhere + "/resources/" + std::to_string(r);
          if (text_of(resources[r]["name"], rwhere + "/name") != kGpu) continue;
          gpu_seen = true;
          if (!resources[r]["nominalQuota"]) throw InputError(rwhere + "/nominalQuota: missing");
          q.nominal_gpus += gpu_quantity(resources[r]["nominalQuota"], rwhere + "/nominalQuota");
          if (resources[r]["borrowingLimit"]) {
            q.borrowing_limit_gpus = std::max(0.0, q.borrowing_limit_gpus) + gpu_quantity(resources[r]["borrowingLimit"], rwhere + "/borrowingLimit");
          }
        }
      }
    }
    if (!gpu_seen) throw InputError(at + " /spec/resourceGroups: no " + std::string(kGpu) + " resource (fmsim admits jobs by their GPUs)");
    if (spec["preemption"]) {
      const YAML::Node p = spec["preemption"];
      if (p["withinClusterQueue"]) {
        const std::string v = text_of(p["withinClusterQueue"], at + " /spec/preemption/withinClusterQueue");
        if (v == "Never") q.within = PreemptWithin::never;
        else if (v == "LowerPriority") q.within = PreemptWithin::lower_priority;
        else throw InputError(at + " /spec/preemption/withinClusterQueue: '" + v + "': expected Never or LowerPriority");
      }
      if (p["reclaimWithinCohort"]) {
        const std::string v = text_of(p["reclaimWithinCohort"], at + " /spec/preemption/reclaimWithinCohort");
        if (v == "Never") q.reclaim = Reclaim::never;
        else if (v == "LowerPriority") q.reclaim = Reclaim::lower_priority;
        else if (v == "Any") q.reclaim = Reclaim::any;
        else throw InputError(at + " /spec/preemption/reclaimWithinCohort: '" + v + "': expected Never, LowerPriority or Any");
      }
    }
    if (k.queue_index.count(name)) throw InputError(at + ": a second ClusterQueue of this name");
    k.queue_index[name] = static_cast<int>(k.cluster_queues.size());
    k.cluster_queues.push_back(q);
  }
}

}  // namespace

}  // namespace fmsim::cluster
