#include "fmsim/collectives/algorithm.hpp"

namespace fmsim::collectives {

const std::vector<std::unique_ptr<AlgorithmModel>>& algorithm_registry() {
  static const std::vector<std::unique_ptr<AlgorithmModel>> registry = [] {
    std::vector<std::unique_ptr<AlgorithmModel>> models;
    models.push_back(make_tree());
    models.push_back(make_ring());
    models.push_back(make_nvls());
    models.push_back(make_nvls_tree());
    models.push_back(make_hierarchical());
    models.push_back(make_pairwise());
    return models;
  }();
  return registry;
}

const AlgorithmModel& algorithm_model(Algorithm algorithm) {
  for (const auto& model : algorithm_registry()) {
    if (model->id() == algorithm) return *model;
  }
  throw std::logic_error("algorithm missing from the registry");
}

}  // namespace fmsim::collectives
