#include "fmsim/collectives/collective.hpp"

#include "fmsim/common/error.hpp"

namespace fmsim::collectives {
namespace {

const std::vector<std::pair<Op, std::string>>& op_names() {
  static const std::vector<std::pair<Op, std::string>> names = {
      {Op::all_reduce, "all_reduce"}, {Op::all_gather, "all_gather"}, {Op::reduce_scatter, "reduce_scatter"},
      {Op::alltoall, "alltoall"},     {Op::broadcast, "broadcast"},   {Op::reduce, "reduce"},
      {Op::sendrecv, "sendrecv"}};
  return names;
}

const std::vector<std::pair<Algorithm, std::string>>& algorithm_names() {
  static const std::vector<std::pair<Algorithm, std::string>> names = {
      {Algorithm::ring, "ring"},           {Algorithm::tree, "tree"},
      {Algorithm::nvls, "nvls"},           {Algorithm::nvls_tree, "nvls_tree"},
      {Algorithm::hierarchical, "hierarchical"}, {Algorithm::pairwise, "pairwise"}};
  return names;
}

template <typename Enum>
Enum parse(const std::vector<std::pair<Enum, std::string>>& names, const std::string& name, const char* what) {
  std::string known;
  for (const auto& [value, text] : names) {
    if (text == name) return value;
    known += (known.empty() ? "" : ", ") + text;
  }
  throw InputError("unknown " + std::string(what) + " '" + name + "' (known: " + known + ")");
}

template <typename Enum>
std::string name_of(const std::vector<std::pair<Enum, std::string>>& names, Enum value) {
  for (const auto& [candidate, text] : names) {
    if (candidate == value) return text;
  }
  return "unknown";
}

}  // namespace

Op parse_op(const std::string& name) { return parse(op_names(), name, "collective operation"); }
Algorithm parse_algorithm(const std::string& name) { return parse(algorithm_names(), name, "algorithm"); }
std::string to_string(Op op) { return name_of(op_names(), op); }
std::string to_string(Algorithm algorithm) { return name_of(algorithm_names(), algorithm); }

std::string to_string(Protocol protocol) {
  switch (protocol) {
    case Protocol::ll: return "LL";
    case Protocol::ll128: return "LL128";
    case Protocol::simple: return "Simple";
  }
  return "unknown";
}

std::vector<Algorithm> all_algorithms() {
  std::vector<Algorithm> algorithms;
  for (const auto& [value, text] : algorithm_names()) algorithms.push_back(value);
  return algorithms;
}

double busbw_factor(Op op, int ranks) {
  const double n = ranks;
  switch (op) {
    case Op::all_reduce: return 2.0 * (n - 1) / n;
    case Op::all_gather: case Op::reduce_scatter: case Op::alltoall: return (n - 1) / n;
    case Op::broadcast: case Op::reduce: case Op::sendrecv: return 1.0;
  }
  return 1.0;
}

std::string redop_of(Op op) {
  return (op == Op::all_reduce || op == Op::reduce_scatter || op == Op::reduce) ? "sum" : "none";
}

}  // namespace fmsim::collectives
