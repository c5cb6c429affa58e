#pragma once
// Names of collective operations, algorithms and protocols, as users write them (NCCL's vocabulary).
#include <string>
#include <vector>

namespace fmsim::collectives {

enum class Op { all_reduce, all_gather, reduce_scatter, alltoall, broadcast, reduce, sendrecv };
enum class Algorithm { ring, tree, nvls, nvls_tree, hierarchical, pairwise };
enum class Protocol { ll, ll128, simple };

Op parse_op(const std::string& name);                ///< throws InputError listing the known ones
Algorithm parse_algorithm(const std::string& name);  ///< likewise
std::string to_string(Op op);
std::string to_string(Algorithm algorithm);
std::string to_string(Protocol protocol);
std::vector<Algorithm> all_algorithms();

/// nccl-tests bus bandwidth factor: busbw = algbw x factor (doc/PERFORMANCE.md in nccl-tests).
double busbw_factor(Op op, int ranks);

/// nccl-tests "redop" column: "sum" for reductions, "none" otherwise.
std::string redop_of(Op op);

}  // namespace fmsim::collectives
