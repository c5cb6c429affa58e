#pragma once
// Batch shapes shared by the serving unit tests.
#include "fmsim/inference/replica_model.hpp"

namespace fmsim::test {

/// `sequences` sequences decoding one token each, `context` KV tokens each.
inline inference::BatchShape decode_batch(int sequences, double context) {
  inference::BatchShape b;
  b.decode_tokens = sequences;
  b.decode_context_tokens = context * sequences;
  b.sampled_rows = sequences;
  return b;
}

/// One prompt of `tokens` tokens computed whole (causal pairs), sampling its first token.
inline inference::BatchShape prefill_batch(int tokens) {
  inference::BatchShape b;
  b.prefill_tokens = tokens;
  b.prefill_attention_pairs = static_cast<double>(tokens) * tokens / 2;
  b.prefill_sequences = 1;
  b.sampled_rows = 1;
  return b;
}

}  // namespace fmsim::test
