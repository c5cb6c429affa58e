#pragma once
// Shared by trace_builder.cpp (schedule, pipeline, data parallelism) and layer_ops.cpp (the kernels
// and tensor/context/expert-parallel collectives of one transformer layer).
#include <map>
#include <string>
#include <vector>

#include "fmsim/workload/trace_builder.hpp"

namespace fmsim::workload::detail {

struct Communicators {
  int tp = -1, cp = -1, dp_cp = -1, ep = -1, edp = -1, etp = -1;
};

class TraceWriter {
 public:
  TraceWriter(const Scenario& s, Trace& trace);

  const Scenario& s;
  Trace& trace;
  int tokens = 0;      ///< tokens of one micro-batch on one CP rank
  int tokens_sp = 0;   ///< the part a TP rank holds between TP regions (sequence parallel)
  int vocab_padded = 0;
  double act_bytes = 2;
  ParameterCounts counts;  ///< of the model, once

  /// The id of the communicator (kind, ranks), created on first use.
  int comm(const std::string& kind, std::vector<int> ranks);
  int add(TraceNode node);
  TraceNode compute(int rank, const std::string& name, Kernel kernel, Category category = Category::compute) const;
  /// A collective node (skipped, returning `after`, when the communicator has one rank).
  int collective(int rank, int comm, const std::string& stream, Category category, collectives::Op op, double bytes,
                 const std::string& name, std::vector<int> deps);
  int gemm(int rank, const std::string& name, double m, double n, double k, bool fp8, std::vector<int> deps,
           int repeat = 1, int sms_taken = 0);
  int memory(int rank, const std::string& name, double bytes, std::vector<int> deps);

 private:
  std::map<std::pair<std::string, std::vector<int>>, int> comm_ids_;
};

/// Emits the forward of one layer on one rank (one micro-batch); returns the node that ends it.
int emit_layer_forward(TraceWriter& w, int rank, const Communicators& c, int layer, int after);
/// Emits the backward of one layer; returns the node that ends it.
int emit_layer_backward(TraceWriter& w, int rank, const Communicators& c, int layer, int after);

}  // namespace fmsim::workload::detail
