#pragma once
// A serving scenario for the serving tests: `model` served as `serving` says on `nodes` nodes of the
// topology file `topology`, with a one-request offline workload (the tests read the plan, not a run).
#include <string>

#include "fmsim/inference/serve_scenario.hpp"
#include "test_support.hpp"

namespace fmsim::test {

inline inference::ServeScenario serve_scenario(const std::string& topology, int nodes, const std::string& model, const std::string& serving) {
  const std::string json = R"({"cluster": {"base": ")" + (source_dir() / "topologies" / topology).string() + R"(", "nodes": )" +
                           std::to_string(nodes) + R"(}, "model": ")" + model + R"(", "serving": )" + serving +
                           R"(, "workload": {"arrival": "offline", "requests": 1, "input_tokens": 8, "output_tokens": 8}})";
  return inference::load_serve_scenario(write_temp(json, "serve.json"), {}, catalog());
}

}  // namespace fmsim::test
