// Fine-tuning workloads (SFT on packed sequences, LoRA), multi-token prediction, Megatron pipeline
// layouts and sliding-window attention: closed forms worked by hand, and the bad inputs Megatron rejects.
#include <catch2/catch.hpp>

#include <map>

#include "fmsim/common/error.hpp"
#include "fmsim/workload/memory.hpp"
#include "fmsim/workload/pipeline_layout.hpp"
#include "fmsim/workload/trace_builder.hpp"
#include "test_support.hpp"

using namespace fmsim;
using namespace fmsim::workload;
using Catch::Matchers::Contains;

namespace {

ModelSpec preset(const std::string& name) { return load_model(name, test::source_dir() / "configs" / "models"); }

Scenario make(const nlohmann::json& parallelism, const nlohmann::json& training, const nlohmann::json& model, int nodes = 1) {
  nlohmann::json doc = {{"cluster", {{"instance_type", "p5.48xlarge"}, {"nodes", nodes}}},
                        {"model", model},
                        {"parallelism", parallelism},
                        {"training", training}};
  return scenario_from_json(doc, "test.json", test::source_dir(), test::catalog());
}

Trace trace_of(const Scenario& s) {
  std::vector<int> rank_gpu(s.parallelism.world());
  for (int i = 0; i < s.parallelism.world(); ++i) rank_gpu[i] = i;
  return build_trace(s, rank_gpu, false);
}

/// Per node name on rank 0: count and summed FLOPs.
std::map<std::string, std::pair<int, double>> nodes_of(const Trace& t, int rank = 0) {
  std::map<std::string, std::pair<int, double>> out;
  for (const auto& n : t.nodes) {
    if (n.rank != rank) continue;
    ++out[n.name].first;
    out[n.name].second += n.flops;
  }
  return out;
}

const nlohmann::json kLora = {{"rank", 16}, {"alpha", 32}, {"target_modules", {"linear_qkv"}}};

}  // namespace

TEST_CASE("LoRA adapter parameters are r (in + out) per target module", "[finetune]") {
  const ModelSpec m = preset("llama3-70b");  // h 8192, 64 heads x 128, 8 KV heads, ffn 28672, SwiGLU
  FineTuning f;
  f.workload = Workload::lora;
  f.lora.rank = 16;
  f.lora.target_modules = {"linear_qkv"};
  CHECK(lora_parameters_per_layer(f, m) == 16.0 * (8192 + 8192 + 2 * 1024));
  f.lora.rank = 32;
  f.lora.target_modules = {"linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"};
  const double by_hand = 32.0 * ((8192 + 10240) + (8192 + 8192) + (8192 + 2 * 28672) + (28672 + 8192));
  CHECK(lora_parameters_per_layer(f, m) == by_hand);
  f.workload = Workload::sft;
  CHECK(lora_parameters_per_layer(f, m) == 0);
}

TEST_CASE("LoRA memory: frozen base weights, gradients and Adam state for the adapters only", "[finetune]") {
  // Llama-3-70B, TP2 PP4 VP20 on 8 GPUs: each pipeline rank holds 20 layers; DP 1.
  const nlohmann::json par{{"tensor_model_parallel_size", 2}, {"pipeline_model_parallel_size", 4},
                           {"virtual_pipeline_model_parallel_size", 20}, {"global_batch_size", 8}};
  const Scenario lora = make(par, {{"seq_length", 4096}, {"workload", "lora"}, {"lora", kLora}}, "llama3-70b");
  const Scenario full = make(par, {{"seq_length", 4096}}, "llama3-70b");
  const MemoryReport l = estimate_memory(lora), p = estimate_memory(full);
  const double adapters = 20 * 16.0 * (8192 + 8192 + 2048) / 2;  // layers x r (in + out) / TP
  const auto& l0 = l.by_pipeline_rank[0];
  const auto& p0 = p.by_pipeline_rank[0];
  CHECK(l0.gradients_bytes == Approx(2.0 * adapters));    // BF16 gradients of the adapters
  CHECK(l0.optimizer_bytes == Approx(12.0 * adapters));   // FP32 master weights and two moments, DP 1
  CHECK(l0.weights_bytes == Approx(p0.weights_bytes + 2.0 * adapters));
  CHECK(l0.parameters_local == Approx(p0.parameters_local + adapters));
  CHECK(l0.parameters_unique == Approx(adapters));  // a PEFT checkpoint saves only the adapters
  // No base weight gradients: FC1's and FC2's inputs are not kept (no adapter on them), QKV's is.
  const double tokens = 4096, h = 8192, ffn = 28672 / 2.0;  // per TP rank; SP shards the LN output
  const double dropped = tokens * h / 2 * 2 /* FC1 input, BF16, SP */ + tokens * ffn * 2 /* FC2 input */;
  const double added = tokens * 16 * 2;                        // the adapter's rank-16 intermediate
  CHECK(activation_bytes_per_layer(full, 3) - activation_bytes_per_layer(lora, 3) == Approx(dropped - added));
}

TEST_CASE("LoRA trace: no base weight gradients, adapter GEMMs with their gradients", "[finetune]") {
  const nlohmann::json par{{"tensor_model_parallel_size", 2}, {"global_batch_size", 4}};
  const nlohmann::json model{{"base", "llama3-8b"}, {"num_hidden_layers", 2}};
  const Scenario s = make(par, {{"seq_length", 2048}, {"workload", "lora"}, {"lora", kLora}}, model);
  const auto nodes = nodes_of(trace_of(s));
  for (const char* frozen : {"qkv.wgrad", "proj.wgrad", "fc1.wgrad", "fc2.wgrad", "logits.wgrad"}) CHECK(nodes.count(frozen) == 0);
  for (const char* kept : {"qkv.dgrad", "proj.dgrad", "fc1.dgrad", "fc2.dgrad", "logits.dgrad"}) CHECK(nodes.count(kept) == 1);
  const int passes = 2 * 4 / 4;  // layers x micro-batches per replica (DP 4)
  const double t = 2048, r = 16, in = 4096, out = 4096 + 2 * 1024, tp = 2;
  CHECK(nodes.at("lora.qkv.a").first == passes);
  CHECK(nodes.at("lora.qkv.a").second == Approx(passes * 2 * t * r * in / tp));
  CHECK(nodes.at("lora.qkv.b").second == Approx(passes * 2 * t * out / tp * r));
  CHECK(nodes.at("lora.qkv.a.wgrad").second == Approx(passes * 2 * r * in / tp * t));
  CHECK(nodes.at("lora.qkv.b.wgrad").second == Approx(passes * 2 * out / tp * r * t));
  CHECK(nodes.count("lora.proj.a") == 0);
  // Only the adapters' gradients are reduced over DP and updated by Adam.
  const Trace trace = trace_of(s);
  double reduced = 0;
  for (const auto& n : trace.nodes) {
    if (n.rank == 0 && n.name.rfind("grad.rs", 0) == 0) reduced += n.comm_bytes;
  }
  CHECK(reduced == Approx(2.0 * 2 * r * (in + out) / tp).epsilon(1e-6));  // 2 layers, BF16
  // Around the adapter GEMMs, in BF16 reads and writes per element: forward, the scale (2) and the add to
  // the base output (3) over QKV's 1/tp of the output columns on every row; backward, the scale's gradient
  // (2) over the same and the input gradient added to the base module's (3) over the rank's rows of the norm
  // output (its sequence-parallel part).
  const double rows_sp = s.parallelism.sequence_parallel ? t / tp : t;
  double scale_add = 0, grad_add = 0;
  for (const auto& n : trace.nodes) {
    if (n.rank != 0) continue;
    if (n.name == "lora.qkv.scale_add") scale_add += n.bytes;
    if (n.name == "lora.qkv.scale_grad_add") grad_add += n.bytes;
  }
  CHECK(scale_add == Approx(passes * 5 * t * out / tp * 2));
  CHECK(grad_add == Approx(passes * (2 * t * out / tp + 3 * rows_sp * in) * 2));
}

TEST_CASE("SFT on packed sequences: attention per sequence, FLOPs as Megatron counts THD", "[finetune]") {
  const ModelSpec m = preset("llama3-8b");  // 32 layers, 32 heads x 128
  FineTuning f;
  f.workload = Workload::sft;
  f.packing.enabled = true;
  f.packing.mean_sequence_length = 256;
  f.packing.packing_efficiency = 1.0;
  const int seq = 4096, vocab = padded_vocab(m.vocab, 1);
  // 16 sequences of 256: sum s_i^2 / 2 causal pairs per row.
  CHECK(attention_pairs_per_row(f, seq, 0) == 16 * 256.0 * 256 / 2);
  f.packing.sequence_length_std = 64;  // E[s^2] = mean^2 + std^2
  CHECK(attention_pairs_per_row(f, seq, 0) == Approx(16 * (256.0 * 256 + 64 * 64) / 2));
  f.packing.sequence_length_std = 0;
  const FlopsPerToken whole = training_flops_per_token(m, seq, vocab);
  const double attention = 32 * 12.0 * 4096 * (16 * 256.0 * 256 / 2);  // layers x 12 q x pairs
  CHECK(model_flops_per_row(m, f, seq, vocab) == Approx((whole.dense_matmul + whole.logits) * seq + attention));
  f.packing.flops_per_row = true;  // the Megatron-Bridge 26.06 SFT table
  CHECK(model_flops_per_row(m, f, seq, vocab) == Approx(whole.total() * seq));
  // LoRA (Megatron-Bridge PEFT formula): 2/3 of the GEMMs over the real tokens plus 12 h sum s^2 per layer.
  f.workload = Workload::lora;
  f.packing.flops_per_row = false;
  f.packing.packing_efficiency = 0.75;
  const double real = 0.75 * 4096, sequences = real / 256;
  CHECK(model_flops_per_row(m, f, seq, vocab) ==
        Approx(2.0 / 3.0 * (whole.dense_matmul + whole.logits) * real + 32 * 12.0 * 4096 * sequences * 256 * 256));

  // The trace's attention kernels: per-row FLOPs of the sequences' pairs, keys per query of one sequence.
  const nlohmann::json model{{"base", "llama3-8b"}, {"num_hidden_layers", 1}};
  const nlohmann::json packing{{"mean_sequence_length", 256}};
  const Scenario sft = make({{"global_batch_size", 8}}, {{"seq_length", 4096}, {"workload", "sft"}, {"packing", packing}}, model);
  const Scenario pre = make({{"global_batch_size", 8}}, {{"seq_length", 4096}}, model);
  const auto a = nodes_of(trace_of(sft)), b = nodes_of(trace_of(pre));
  CHECK(a.at("attn.fwd").second == Approx(b.at("attn.fwd").second * 256 / 4096));
  for (const auto& n : trace_of(sft).nodes) {
    if (n.rank == 0 && n.name == "attn.fwd") CHECK(n.attention_span == Approx(128));
  }
  CHECK(step_totals(sft).tokens == 8 * 4096.0);  // the tables count whole packed rows
}

TEST_CASE("multi-token prediction: parameters, FLOPs as Megatron counts them, placement", "[finetune]") {
  const ModelSpec m = preset("deepseek-v3");
  REQUIRE(m.mtp_layers == 1);
  const ParameterCounts c = count_parameters(m);
  const double h = 7168;
  CHECK(c.mtp == Approx(layer_parameters(m, c, 60) + 2 * h * h + 3 * h));
  CHECK(c.mtp == Approx(11.7e9).epsilon(0.03));  // an MoE layer (11.5B) + eh_proj; DeepSeek's 14B adds copies of embedding and head
  CHECK(c.total == Approx(671e9).epsilon(0.005));  // the published size excludes the MTP module
  // MLM training.py transformer_flops: one more (MoE) layer, 6 (3h + 2h^2), one more logits.
  ModelSpec without = m;
  without.mtp_layers = 0;
  const int seq = 4096, vocab = 129280;
  const double with_mtp = training_flops_per_token(m, seq, vocab).total();
  const double base = training_flops_per_token(without, seq, vocab).total();
  const double n = 128, qk = 128, pe = 64, v = 128, ql = 1536, kvl = 512;
  const double projections = 6 * (ql * (h + n * (qk + pe) + 1) + kvl * (h + n * (qk + v) + 1) + h * pe + n * v * h);
  const double core = 6 * (n * (qk + pe) / 2 + n * v / 2) * seq;
  const double moe = 6 * h * 3 * (2048.0 * 8 + 2048);
  CHECK(with_mtp - base == Approx(projections + core + moe + 6 * (3 * h + 2 * h * h) + 6 * h * vocab));
  // Published Megatron-Bridge DeepSeek-V3 rows (with MTP): 1,292 TFLOP/s at 4,969 tokens/s per GPU.
  CHECK(with_mtp == Approx(1292e12 / 4969).epsilon(0.002));

  // On the last stage by default; its eh_proj runs only there.
  const nlohmann::json model{{"base", "deepseek-v3"}, {"num_hidden_layers", 4}, {"first_k_dense_replace", 4}};
  const Scenario s = make({{"pipeline_model_parallel_size", 2}, {"global_batch_size", 8}}, {{"seq_length", 1024}}, model);
  const Trace t = trace_of(s);
  CHECK(nodes_of(t, 0).count("mtp0.eh_proj") == 0);
  CHECK(nodes_of(t, 4).at("mtp0.eh_proj").first == 2);  // rank 4 = pipeline stage 1, 2 micro-batches (DP 4)
  CHECK(estimate_memory(s).by_pipeline_rank[1].parameters_local > estimate_memory(s).by_pipeline_rank[0].parameters_local);
  // training.mtp_num_layers overrides the model's.
  const Scenario off = make({{"pipeline_model_parallel_size", 2}, {"global_batch_size", 8}},
                            {{"seq_length", 1024}, {"mtp_num_layers", 0}}, model);
  CHECK(off.model.mtp_layers == 0);
  CHECK(nodes_of(trace_of(off), 4).count("mtp0.eh_proj") == 0);
}

TEST_CASE("pipeline layouts as Megatron accepts and rejects them", "[finetune]") {
  Parallelism p;
  p.pp = 16;
  p.vp = 2;
  // MLM's docstring example: "Ettt|(tt|)*29,m|L" (DeepSeek-V3, 61 layers, MTP standalone, loss alone).
  p.layout = "Ettt|(tt|)*29,m|L";
  auto stages = pipeline_stages(61, 1, p, "s.json");
  REQUIRE(stages.size() == 32);
  CHECK(stages[0].embedding);
  CHECK(stages[0].layers() == 3);
  CHECK(stages[30].mtp == 1);
  CHECK(stages[30].layers() == 0);
  CHECK(stages[31].loss);
  CHECK(stages[31].layers() == 0);
  CHECK_THROWS_WITH(pipeline_stages(61, 0, p, "s.json"), Contains("holds 1 MTP layers"));
  // Embedding alone on the first stage, loss alone on the last.
  p.pp = 4;
  p.vp = 1;
  p.layout = "E|t*4|t*4|L";
  stages = pipeline_stages(8, 0, p, "s.json");
  CHECK((stages[0].layers() == 0 && stages[0].embedding && stages[3].layers() == 0 && stages[3].loss));
  // Megatron's rules.
  const std::map<std::string, std::string> bad = {
      {"tE|t*3|t*4|L", "'E' must appear exactly once, as the first"},
      {"Et|t*3|t*4|LL", "'L' must appear exactly once"},
      {"Et*8m|||L", "cannot be on the first pipeline rank"},
      {"Et|t*3m|t*4|L", "decoder layers 't' must come before"},
      {"Et|t*3|t*4|Lx", "unknown symbol 'x'"},
      {"Et|t*3|t*4|L|", "has 5 stages"},  // a trailing '|' is one more (empty) stage, as in Megatron
  };
  for (const auto& [layout, why] : bad) {
    p.layout = layout;
    CHECK_THROWS_WITH(pipeline_stages(8, layout.find('m') != std::string::npos ? 1 : 0, p, "s.json"), Contains(why));
  }
  p.pp = 2;
  p.vp = 2;
  p.layout = "Et|t*7m||L";
  CHECK_THROWS_WITH(pipeline_stages(8, 1, p, "s.json"), Contains("last virtual stage"));
  // Uneven split: num_layers_in_first/last_pipeline_stage.
  p.layout.clear();
  p.pp = 4;
  p.vp = 1;
  p.first_stage_layers = 17;
  p.last_stage_layers = 15;
  stages = pipeline_stages(80, 0, p, "s.json");
  CHECK((stages[0].layers() == 17 && stages[1].layers() == 24 && stages[2].layers() == 24 && stages[3].layers() == 15));
  p.first_stage_layers = 18;
  CHECK_THROWS_WITH(pipeline_stages(80, 0, p, "s.json"), Contains("middle pipeline ranks"));
  // The virtual stages come from the layout when not given; a layout excludes account_for_*.
  const nlohmann::json model{{"base", "llama3-8b"}};
  const Scenario s = make({{"pipeline_model_parallel_size", 4}, {"global_batch_size", 8},
                           {"pipeline_model_parallel_layout", "Et*3|(t*4|)*6,t*5L"}}, {{"seq_length", 1024}}, model, 1);
  CHECK(s.parallelism.vp == 2);
  CHECK_THROWS_WITH(make({{"pipeline_model_parallel_size", 4}, {"global_batch_size", 8}, {"account_for_loss_in_pipeline_split", true},
                          {"pipeline_model_parallel_layout", "Et*3|(t*4|)*6,t*5L"}}, {{"seq_length", 1024}}, model, 1),
                    Contains("pipeline_model_parallel_layout"));
  // DeepSeek-V3 with its MTP layer needs an 'm' in its layout.
  CHECK_THROWS_WITH(make({{"pipeline_model_parallel_size", 8}, {"virtual_pipeline_model_parallel_size", 4},
                          {"expert_model_parallel_size", 8}, {"pipeline_model_parallel_layout", "Et|(tt|)*30L"}, {"global_batch_size", 64}},
                         {{"seq_length", 1024}}, "deepseek-v3", 8),
                    Contains("holds 0 MTP layers ('m') but the model has 1"));
}

TEST_CASE("sliding-window attention: the window in FLOPs and kernels, per-layer patterns", "[finetune]") {
  // Query i sees min(i + 1, w) keys: mean w - w (w - 1) / (2 s) (Megatron-Bridge calculate_swa_context).
  CHECK(attended_span(4096, 128) == Approx(128 - 128.0 * 127 / (2 * 4096)));
  CHECK(attended_span(4096, 8192) == 2048);  // a window longer than the sequence: full causal attention
  CHECK(attended_span(4096, 0) == 2048);
  // GPT-OSS-120B: 18 sliding (128) and 18 full layers, 64 heads x 64.
  const ModelSpec m = preset("gpt-oss-120b");
  const double q = 64 * 64;
  const double by_hand = 18 * 12 * q * attended_span(4096, 128) + 18 * 12 * q * 2048;
  CHECK(training_flops_per_token(m, 4096, padded_vocab(m.vocab, 1)).attention == Approx(by_hand));
  CHECK(m.attention_sinks);
  ModelSpec no_sinks = m;
  no_sinks.attention_sinks = false;
  CHECK(count_parameters(m).total - count_parameters(no_sinks).total == 36 * 64);  // one logit per head and layer
  // The kernel of a sliding layer loops over the window.
  const Scenario s = make({{"expert_model_parallel_size", 8}, {"global_batch_size", 8}}, {{"seq_length", 4096}},
                          {{"base", "gpt-oss-120b"}, {"num_hidden_layers", 2}, {"layer_types", {"sliding_attention", "full_attention"}}});
  std::vector<double> spans;
  for (const auto& n : trace_of(s).nodes) {
    if (n.rank == 0 && n.name == "attn.fwd" && spans.size() < 2) spans.push_back(n.attention_span);
  }
  REQUIRE(spans.size() == 2);
  CHECK(spans[0] == Approx(attended_span(4096, 128)));
  CHECK(spans[1] == Approx(2048));
  // Per-layer patterns from HF configs: Gemma 3 (every 6th layer full), Gemma 2 (alternating), Qwen2.
  nlohmann::json gemma3{{"model_type", "gemma3_text"}, {"hidden_size", 1024}, {"num_hidden_layers", 12}, {"num_attention_heads", 8},
                        {"vocab_size", 1000}, {"sliding_window", 512}, {"sliding_window_pattern", 6}};
  ModelSpec g3 = model_from_hf_config(gemma3, "g3.json");
  CHECK((g3.attention_window(0) == 512 && g3.attention_window(5) == 0 && g3.attention_window(6) == 512 && g3.attention_window(11) == 0));
  nlohmann::json gemma2 = gemma3;
  gemma2.erase("sliding_window_pattern");
  gemma2["model_type"] = "gemma2";
  ModelSpec g2 = model_from_hf_config(gemma2, "g2.json");
  CHECK((g2.attention_window(0) == 512 && g2.attention_window(1) == 0 && g2.attention_window(2) == 512));
  nlohmann::json qwen = gemma2;
  qwen["model_type"] = "qwen2";
  qwen["use_sliding_window"] = true;
  qwen["max_window_layers"] = 8;
  ModelSpec q2 = model_from_hf_config(qwen, "q.json");
  CHECK((q2.attention_window(7) == 0 && q2.attention_window(8) == 512));
  // A window of 0, a fraction or a string is an error naming the key.
  for (const nlohmann::json& window : {nlohmann::json(0), nlohmann::json(128.5), nlohmann::json("128")}) {
    nlohmann::json bad = gemma2;
    bad["sliding_window"] = window;
    CHECK_THROWS_WITH(model_from_hf_config(bad, "m.json"), Contains("sliding_window"));
  }
  nlohmann::json bad_types = gemma2;
  bad_types["layer_types"] = nlohmann::json::array();
  for (int i = 0; i < 12; ++i) bad_types["layer_types"].push_back(i == 3 ? "chunked_attention" : "full_attention");
  CHECK_THROWS_WITH(model_from_hf_config(bad_types, "m.json"), Contains("layer 3"));
}

TEST_CASE("fine-tuning inputs Megatron-Bridge would not run are refused with the reason", "[finetune]") {
  const nlohmann::json par{{"global_batch_size", 8}};
  const nlohmann::json model{{"base", "llama3-8b"}, {"num_hidden_layers", 2}};
  auto fails = [&](const nlohmann::json& training, const nlohmann::json& m, const std::string& why) {
    nlohmann::json t = training;
    t["seq_length"] = 4096;
    CHECK_THROWS_WITH(make(par, t, m), Contains(why));
  };
  fails({{"workload", "lora"}, {"lora", {{"rank", 0}}}}, model, "/training/lora/rank");
  fails({{"workload", "lora"}, {"lora", {{"target_modules", {"linear_q"}}}}}, model, "\"linear_q\" is not one");
  fails({{"workload", "lora"}, {"lora", {{"target_modules", {"linear_qkv"}}}}}, "deepseek-v3", "no linear_qkv");
  fails({{"workload", "lora"}, {"lora", {{"target_modules", {"linear_fc1"}}}}}, "mixtral-8x7b", "mixture-of-experts");
  fails({{"workload", "sft"}, {"packing", {{"mean_sequence_length", 200}, {"packing_efficiency", 1.5}}}}, model,
        "/training/packing/packing_efficiency");
  fails({{"workload", "sft"}, {"packing", {{"mean_sequence_length", 200}, {"packing_efficiency", 0}}}}, model, "(0, 1]");
  fails({{"workload", "sft"}, {"packing", {{"mean_sequence_length", 5000}}}}, model, "mean_sequence_length");
  fails({{"workload", "sft"}, {"packing", {{"mean_sequence_length", 200}, {"sequences_per_row", 30}}}}, model, "sequences_per_row");
  fails({{"packing", {{"mean_sequence_length", 200}}}}, model, "unless workload is");
  fails({{"workload", "sft"}, {"lora", {{"rank", 8}}}}, model, "unless workload is \"lora\"");
  fails({{"workload", "finetune"}}, model, "/training/workload");
}
