// Recipe files (configs/recipes/, recipe_loader.cpp): the merge order, the variant picked by GPU, precision
// and layout, the errors for a bad reference, and every shipped recipe loading as a scenario.
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>

#include "fmsim/common/error.hpp"
#include "fmsim/workload/recipe.hpp"
#include "fmsim/workload/scenario.hpp"
#include "test_support.hpp"

using namespace fmsim;
using namespace fmsim::workload;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

/// A recipe with two releases, a shared precision preset table, a layout table and three variants.
json test_recipe() {
  auto source = [](const char* ref) {
    return json{{"repository", "NVIDIA-NeMo/Megatron-Bridge"}, {"ref", ref}, {"files", {"scripts/x.py"}}};
  };
  return json{
      {"schema", "fmsim.recipe/1"},
      {"releases",
       {{{"release", "1.0"}, {"framework", "megatron-bridge@1.0"}, {"source", source("v1")}},
        {{"release", "2.0"}, {"framework", "megatron-bridge@2.0"}, {"source", source("v2")}}}},
      {"precisions",
       {{"presets",
         {{"BF16", {{"precision", "bf16"}}},
          {"FP8-CS", {{"precision", "fp8"}, {"fp8_recipe", "tensorwise"}, {"fp8_param_gather", true}}},
          {"MXFP8", {{"precision", "fp8"}, {"fp8_recipe", "mxfp8"}}}}}}},
      {"layouts", {{{"pipeline_model_parallel_size", 2}, {"virtual_pipeline_model_parallel_size", 2},
                    {"pipeline_model_parallel_layout", "Et*4|t*4|t*4|t*4L"}}}},
      {"common", {{"training", {{"seq_length", 2048}, {"overlap_grad_reduce", false}}}}},
      {"variants",
       {{{"name", "H100 FP8 PP2"},
         {"when", {{"release", {"2.0"}}, {"gpu", "H100"}, {"precision", {"FP8-CS"}}, {"pipeline_model_parallel_size", 2}}},
         {"parallelism", {{"micro_batch_size", 2}, {"global_batch_size", 64}}},
         {"training", {{"recompute_granularity", "selective"}, {"recompute_modules", {"mlp"}}, {"seq_length", 1024}}},
         {"not_modelled", {{"cuda_graph_scope", {"attn"}}}}},
        {{"name", "H100 BF16 or FP8, any layout"},
         {"when", {{"gpu", {"H100"}}, {"precision", {"BF16", "FP8-CS"}}}},
         {"training", {{"recompute_granularity", "full"}}}},
        {{"name", "B200 MXFP8"}, {"when", {{"gpu", "B200"}, {"precision", "MXFP8"}}}, {"parallelism", {{"global_batch_size", 32}}}}}}};
}

std::filesystem::path write_recipe(const json& recipe) { return test::write_temp(recipe.dump(), "recipe.json"); }

json scenario(const std::string& recipe_ref, const json& parallelism, const json& training) {
  json t = training;
  t["recipe"] = recipe_ref;
  return json{{"parallelism", parallelism}, {"training", t}};
}

/// Every shipped recipe file (not the presets files).
std::vector<std::filesystem::path> shipped_recipes() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(test::source_dir() / "configs" / "recipes")) {
    const auto& p = entry.path();
    if (p.extension() == ".json" && p.stem().extension() != ".presets") files.push_back(p);
  }
  std::sort(files.begin(), files.end());
  return files;
}

json read(const std::filesystem::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

}  // namespace

TEST_CASE("recipe: the scenario's keys win over the variant, the variant over common settings and the preset", "[recipe]") {
  const auto path = write_recipe(test_recipe());
  json doc = scenario(path.string() + "@2.0", {{"pipeline_model_parallel_size", 2}, {"global_batch_size", 128}},
                      {{"precision", "fp8"}, {"recompute_modules", {"core_attn"}}});
  auto choice = apply_recipe(doc, "s.json", path.parent_path(), "H100-SXM");
  REQUIRE(choice);
  CHECK(choice->variant == "H100 FP8 PP2");
  CHECK(choice->release == "2.0");
  CHECK(choice->framework == "megatron-bridge@2.0");
  CHECK(choice->not_modelled == json{{"cuda_graph_scope", {"attn"}}});
  const json& t = doc["training"];
  CHECK_FALSE(t.contains("recipe"));
  CHECK(t["fp8_recipe"] == "tensorwise");        // the preset the scenario's precision agrees with
  CHECK(t["fp8_param_gather"] == true);
  CHECK(t["overlap_grad_reduce"] == false);      // common
  CHECK(t["seq_length"] == 1024);                // the variant over common
  CHECK(t["recompute_granularity"] == "selective");
  CHECK(t["recompute_modules"] == json{"core_attn"});  // the scenario over the variant
  const json& p = doc["parallelism"];
  CHECK(p["micro_batch_size"] == 2);
  CHECK(p["global_batch_size"] == 128);          // the scenario's
  CHECK(p["pipeline_model_parallel_size"] == 2);
}

TEST_CASE("recipe: null in the scenario removes a recipe setting; the layout table fills PP x VP", "[recipe]") {
  const auto path = write_recipe(test_recipe());
  json doc = scenario(path.string() + "@2.0",
                      {{"pipeline_model_parallel_size", 2}, {"virtual_pipeline_model_parallel_size", 2}, {"global_batch_size", 8}},
                      {{"precision", "fp8"}, {"seq_length", nullptr}, {"recompute_modules", nullptr}, {"recompute_granularity", nullptr}});
  apply_recipe(doc, "s.json", path.parent_path(), "H100-SXM");
  CHECK_FALSE(doc["training"].contains("seq_length"));
  CHECK_FALSE(doc["training"].contains("recompute_modules"));
  CHECK(doc["parallelism"]["pipeline_model_parallel_layout"] == "Et*4|t*4|t*4|t*4L");
  // A layout of the scenario's own is kept.
  json own = scenario(path.string(), {{"pipeline_model_parallel_size", 2}, {"virtual_pipeline_model_parallel_size", 2},
                                      {"pipeline_model_parallel_layout", "Et*8|t*8L"}}, {});
  apply_recipe(own, "s.json", path.parent_path(), "H100-SXM");
  CHECK(own["parallelism"]["pipeline_model_parallel_layout"] == "Et*8|t*8L");
}

TEST_CASE("recipe: the variant is picked by release, GPU, precision and layout; the first that fits wins", "[recipe]") {
  const auto path = write_recipe(test_recipe());
  auto variant_for = [&](const std::string& ref, const std::string& gpu, const json& parallelism, const json& training) {
    json doc = scenario(path.string() + ref, parallelism, training);
    return apply_recipe(doc, "s.json", path.parent_path(), gpu)->variant;
  };
  // PP 4 does not fit the PP2 variant; release 1.0 has no PP2 variant; BF16 does not agree with FP8-CS.
  CHECK(variant_for("@2.0", "H100-SXM", {{"pipeline_model_parallel_size", 4}}, {{"precision", "fp8"}}) == "H100 BF16 or FP8, any layout");
  CHECK(variant_for("@1.0", "H100-SXM", {{"pipeline_model_parallel_size", 2}}, {{"precision", "fp8"}}) == "H100 BF16 or FP8, any layout");
  CHECK(variant_for("@2.0", "H100-SXM", {{"pipeline_model_parallel_size", 2}}, {{"precision", "bf16"}}) == "H100 BF16 or FP8, any layout");
  // Without precision or layout the first H100 variant of the release (the recipe's own configuration).
  CHECK(variant_for("@2.0", "H100-SXM", json::object(), json::object()) == "H100 FP8 PP2");
  // Without @release: the file's last release.
  CHECK(variant_for("", "H100-SXM", json::object(), json::object()) == "H100 FP8 PP2");
  // GPU names match the catalog name or its prefix before '-': B200 is not GB200.
  CHECK(variant_for("@1.0", "B200", json::object(), {{"precision", "fp8"}, {"fp8_recipe", "mxfp8"}}) == "B200 MXFP8");
  // A variant that asks for a global batch size fits only a scenario that gives it.
  json by_batch = test_recipe();
  by_batch["variants"].insert(by_batch["variants"].begin(),
                              json{{"name", "H100 GBS1280"}, {"when", {{"gpu", "H100"}, {"global_batch_size", 1280}}}});
  const auto batch_path = write_recipe(by_batch);
  auto batch_variant = [&](const json& parallelism) {
    json doc = scenario(batch_path.string() + "@2.0", parallelism, json::object());
    return apply_recipe(doc, "s.json", batch_path.parent_path(), "H100-SXM")->variant;
  };
  CHECK(batch_variant({{"global_batch_size", 1280}}) == "H100 GBS1280");
  CHECK(batch_variant({{"global_batch_size", 512}}) == "H100 FP8 PP2");
  CHECK(batch_variant(json::object()) == "H100 FP8 PP2");
  json doc = scenario(path.string() + "@1.0", json::object(), json::object());
  CHECK_THROWS_WITH(apply_recipe(doc, "s.json", path.parent_path(), "GB200"),
                    Contains("no variant of") && Contains("at release 1.0 fits GPU GB200") &&
                        Contains("'B200 MXFP8' (B200, MXFP8)") && Contains("'H100 BF16 or FP8, any layout'"));
}

TEST_CASE("recipe: bad references and malformed recipe files are input errors naming them", "[recipe]") {
  const auto path = write_recipe(test_recipe());
  auto fails = [&](json doc, const std::string& message, const std::string& gpu = "H100-SXM") {
    CHECK_THROWS_AS(apply_recipe(doc, "s.json", path.parent_path(), gpu), InputError);
    CHECK_THROWS_WITH(apply_recipe(doc, "s.json", path.parent_path(), gpu), Contains(message));
  };
  fails(scenario("megatron-bridge/no-such-model", {}, {}),
        "s.json: /training/recipe = 'megatron-bridge/no-such-model': no such recipe");
  fails(scenario("megatron-bridge/no-such-model", {}, {}), "known recipes: megatron-bridge/deepseek-v3");
  fails(scenario(path.string() + "@3.0", {}, {}), "has no release '3.0' (releases: 1.0, 2.0)");
  fails(json{{"training", {{"recipe", 5}}}}, "/training/recipe = 5: expected a recipe name");
  json no_source = test_recipe();
  no_source["releases"][1].erase("source");
  const auto bad = write_recipe(no_source);
  json doc = scenario(bad.string(), {}, {});
  CHECK_THROWS_WITH(apply_recipe(doc, "s.json", bad.parent_path(), "H100-SXM"), Contains("/releases/1") && Contains("source"));
  json bad_precision = test_recipe();
  bad_precision["variants"][0]["when"]["precision"] = "FP4";
  const auto bad2 = write_recipe(bad_precision);
  doc = scenario(bad2.string(), {}, {});
  CHECK_THROWS_WITH(apply_recipe(doc, "s.json", bad2.parent_path(), "H100-SXM"),
                    Contains("/variants/0/when/precision") && Contains("'FP4' is not one"));
  json layout_without_pp = test_recipe();
  layout_without_pp["variants"][1]["parallelism"] = {{"pipeline_model_parallel_layout", "Et|tL"}};
  const auto bad3 = write_recipe(layout_without_pp);
  doc = scenario(bad3.string(), {}, {});
  CHECK_THROWS_WITH(apply_recipe(doc, "s.json", bad3.parent_path(), "H100-SXM"), Contains("/variants/1/when"));
}

TEST_CASE("recipe: a scenario without training.recipe is left as it is", "[recipe]") {
  json doc = {{"parallelism", {{"global_batch_size", 8}}}, {"training", {{"precision", "bf16"}}}};
  const json before = doc;
  CHECK_FALSE(apply_recipe(doc, "s.json", ".", "H100-SXM"));
  CHECK(doc == before);
}

TEST_CASE("recipe: every shipped recipe names its sources and every variant loads as a scenario", "[recipe]") {
  const std::regex commit("^[0-9a-f]{40}$");
  int loaded = 0;
  for (const auto& file : shipped_recipes()) {
    INFO(file.string());
    const json recipe = read(file);
    REQUIRE(recipe.at("schema") == "fmsim.recipe/1");
    for (const auto& release : recipe.at("releases")) {
      const json& source = release.at("source");
      CHECK(source.at("repository").is_string());
      CHECK(!source.at("files").empty());
      CHECK((source.contains("commit") ? std::regex_match(source.at("commit").get<std::string>(), commit) : source.contains("ref")));
      CHECK(release.at("framework").get<std::string>().find('@') != std::string::npos);
    }
    for (const auto& variant : recipe.at("variants")) {
      if (variant.contains("training") || variant.contains("parallelism")) CHECK(variant.contains("source"));
    }
    // Each variant, at each of its releases and precisions, on a cluster of its GPU, merged under a
    // scenario that gives only what the recipe leaves open, is a valid scenario.
    const json presets = read(file.parent_path() / recipe.at("precisions").get<std::string>()).at("presets");
    for (const auto& variant : recipe.at("variants")) {
      const json when = variant.value("when", json::object());
      const bool blackwell_only = when.contains("precision") && (when["precision"].dump().find("MXFP8") != std::string::npos ||
                                                                  when["precision"].dump().find("NVFP4") != std::string::npos);
      const std::string gpu = when.contains("gpu") ? (when["gpu"].is_array() ? when["gpu"][0] : when["gpu"]).get<std::string>()
                              : blackwell_only   ? "B200"
                                                 : "H100";
      std::vector<std::string> releases;
      if (when.contains("release")) {
        for (const auto& r : when["release"]) releases.push_back(r);
      } else {
        releases.push_back(recipe["releases"].back()["release"]);
      }
      std::vector<std::string> precisions;
      if (when.contains("precision")) {
        for (const auto& p : (when["precision"].is_array() ? when["precision"] : json::array({when["precision"]}))) precisions.push_back(p);
      } else {
        precisions = {presets.begin().key()};  // the first preset (BF16 in the shipped files)
      }
      const json fragment = variant.value("parallelism", json::object());
      const int tp = fragment.value("tensor_model_parallel_size", 1), cp = fragment.value("context_parallel_size", 1);
      const bool dense = recipe.value("model", "llama").rfind("llama", 0) == 0;
      const int pp = when.value("pipeline_model_parallel_size", 1), ep = fragment.value("expert_model_parallel_size", dense ? 1 : 8);
      const int dp = std::max(1, ep * fragment.value("expert_tensor_parallel_size", 1) / (tp * cp));
      const int gpus = tp * pp * cp * dp;
      json cluster = gpu == "GB200" || gpu == "GB300"
                         ? json{{"ultraserver_type", gpu == "GB200" ? "dgx-gb200-nvl72" : "dgx-gb300-nvl72"}, {"ultraservers", (gpus + 71) / 72}}
                         : json{{"instance_type", gpu == "H100" ? "dgx-h100" : gpu == "B200" ? "dgx-b200" : "dgx-b300"}, {"nodes", (gpus + 7) / 8}};
      for (const auto& release : releases) {
        for (const auto& precision : precisions) {
          INFO(variant.at("name").get<std::string>() << " @" << release << " " << precision);
          json training = presets.at(precision);
          training["recipe"] = file.string() + "@" + release;
          const int mbs = fragment.value("micro_batch_size", 1);
          json parallelism = {{"data_parallel_size", dp}, {"global_batch_size", mbs * dp * pp * 4},
                              {"tensor_model_parallel_size", tp}, {"context_parallel_size", cp}, {"expert_model_parallel_size", ep},
                              {"micro_batch_size", mbs}};
          parallelism["pipeline_model_parallel_size"] = pp;
          parallelism["virtual_pipeline_model_parallel_size"] = when.value("virtual_pipeline_model_parallel_size", 1);
          json doc = {{"cluster", cluster}, {"model", recipe.value("model", "llama3-8b")}, {"parallelism", parallelism},
                      {"training", training}};
          Scenario s;
          REQUIRE_NOTHROW(s = scenario_from_json(doc, "variant.json", test::source_dir(), test::catalog()));
          CHECK(s.recipe->release == release);
          ++loaded;
        }
      }
    }
  }
  CHECK(loaded > 100);
}

TEST_CASE("recipe: the recipe's settings win over the named stack's defaults, the scenario's over both", "[recipe]") {
  // DeepSpeed 2021's stack defaults overlap_grad_reduce to false; the recipe's variant sets it true.
  json recipe = test_recipe();
  recipe["variants"][1]["training"]["overlap_grad_reduce"] = true;
  const auto path = write_recipe(recipe);
  auto doc_for = [&](const json& training) {
    json t = training;
    t["recipe"] = path.string() + "@2.0";
    t["framework"] = "deepspeed@2021";
    t["precision"] = "bf16";
    return json{{"cluster", {{"instance_type", "p5.48xlarge"}, {"nodes", 1}}},
                {"model", {{"base", "llama3-8b"}, {"num_hidden_layers", 2}}},
                {"parallelism", {{"global_batch_size", 16}}},
                {"training", t}};
  };
  const Scenario from_recipe = scenario_from_json(doc_for(json::object()), "s.json", test::source_dir(), test::catalog());
  CHECK(from_recipe.training.overlap_grad_reduce);  // the recipe, not the stack's default
  CHECK_FALSE(from_recipe.training.overlap_param_gather);  // a key only the stack sets keeps its default
  const Scenario own = scenario_from_json(doc_for({{"overlap_grad_reduce", false}}), "s.json", test::source_dir(), test::catalog());
  CHECK_FALSE(own.training.overlap_grad_reduce);  // the scenario's own value wins
}
