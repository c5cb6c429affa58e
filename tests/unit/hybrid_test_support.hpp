#pragma once
// The tiny hybrid model the hybrid-model tests count by hand: h 64, pattern M * - E; attention 4 heads x 16,
// 2 KV heads; Mamba 8 heads x 8 (d_inner 64, not 2h), state 8, 2 groups, conv 4; MLP 128 (squared ReLU);
// 4 experts of 32, top-2, shared 64; vocab 1000.
#include <nlohmann/json.hpp>

namespace fmsim::test {

inline nlohmann::json tiny_hybrid_config() {
  return {{"model_type", "nemotron_h"}, {"hidden_size", 64}, {"num_hidden_layers", 4},
          {"hybrid_override_pattern", "M*-E"}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
          {"head_dim", 16}, {"mamba_num_heads", 8}, {"mamba_head_dim", 8}, {"ssm_state_size", 8},
          {"n_groups", 2}, {"conv_kernel", 4}, {"chunk_size", 16}, {"intermediate_size", 128},
          {"mlp_hidden_act", "relu2"}, {"n_routed_experts", 4}, {"num_experts_per_tok", 2},
          {"moe_intermediate_size", 32}, {"moe_shared_expert_intermediate_size", 64}, {"n_shared_experts", 1},
          {"vocab_size", 1000}, {"tie_word_embeddings", false}};
}

}  // namespace fmsim::test
