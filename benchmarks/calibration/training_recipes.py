"""The names the calibration rows use, and the published recipes (configs/recipes/) each row runs under.

The recipe settings themselves (pipeline layouts, recompute modules, dispatcher and its backend, EP overlap,
BF16 layers of the low-precision recipes, precision presets, SFT packing, LoRA) are data in configs/recipes/,
each file with its source; a row's scenario names its recipe in `training.recipe` and fmsim merges the
variant for the row's GPU, precision and layout under the row's own settings (docs/formats.md, "Recipe
files"). Only how the tables name things stays here."""
import functools
import json
import os

# Calibration row model names -> presets in configs/models/.
MODELS = {"LLAMA3_8B": "llama3-8b", "LLAMA3-8B": "llama3-8b", "LLAMA3_70B": "llama3-70b", "LLAMA3-70B": "llama3-70b",
          "LLAMA2-7B": "llama2-7b", "LLAMA2-13B": "llama2-13b", "LLAMA2-70B": "llama2-70b",
          "Nemotron-340B": "nemotron-4-340b", "DeepSeekV3": "deepseek-v3", "LLAMA3.1_405B": "llama3.1-405b",
          "GPT OSS 120B": "gpt-oss-120b", "Qwen3_30B_a3B": "qwen3-30b-a3b", "Qwen3_235B_a22B": "qwen3-235b-a22b",
          "GPT3-175B": "gpt3-175b", "Kimi_K2": "kimi-k2", "Nemotron_3_Nano": "nemotron-3-nano",
          "Nemotron_3_Super": "nemotron-3-super", "Nemotron_3_Ultra": "nemotron-3-ultra"}
# Models whose architecture no public config describes (the row is listed with this reason).
UNPUBLISHED = {"DeepSeekV4 Flash": "DeepSeek-V4 Flash: no public model configuration to build a preset from",
               "Nemotron_3_5_Lightning": "Nemotron 3.5 Lightning: no public model configuration to build a preset from"}
# GPT-3 5B of the NeMo 24.07 table (NeMo's gpt3 5B config: 24 layers, hidden 4096, 32 heads, ffn 16384).
GPT3_5B = {"model_type": "gpt3", "hidden_size": 4096, "intermediate_size": 16384, "num_hidden_layers": 24,
           "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 50257, "hidden_act": "gelu",
           "position_embedding_type": "learned_absolute", "max_position_embeddings": 2048, "add_bias_linear": True,
           "tie_word_embeddings": True}

RECIPES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "configs", "recipes")


def load_presets(stack):
    """Precision name of the tables -> training settings, from configs/recipes/STACK/precision.presets.json
    (with its aliases: the 26.x tables' plain "FP8" is FP8-CS, "FP8-MX" is MXFP8)."""
    with open(os.path.join(RECIPES_DIR, stack, "precision.presets.json")) as f:
        doc = json.load(f)
    presets = dict(doc["presets"])
    presets.update({alias: doc["presets"][name] for alias, name in doc.get("aliases", {}).items()})
    return presets


MBRIDGE_PRECISION = load_presets("megatron-bridge")
NEMO2407_PRECISION = load_presets("nemo")


@functools.lru_cache(maxsize=None)
def load_recipe(name):
    """The recipe file configs/recipes/NAME.json ("STACK/MODEL"), read once; None when there is no such file."""
    path = os.path.join(RECIPES_DIR, name + ".json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def recipe_reference(name, release=None):
    """"STACK/MODEL@RELEASE" for a recipe file of configs/recipes/ (without @ when the file does not list the
    release: then fmsim uses the file's last release), or None when there is no such file."""
    recipe = load_recipe(name)
    if recipe is None:
        return None
    releases = [r["release"] for r in recipe["releases"]]
    return f"{name}@{release}" if release in releases else name


def recipe_sets(reference, key):
    """Whether the recipe file of a "STACK/MODEL[@RELEASE]" reference sets training `key` in its common settings."""
    return key in load_recipe(reference.split("@")[0]).get("common", {}).get("training", {})


def fine_tuning_settings(workload, flops_per_row=False):
    """The table's FLOP count of an SFT or LoRA row (the packing and LoRA settings come from the recipe)."""
    if workload == "pretrain":
        return {}
    return {"packing": {"flops_attention": "per_row" if flops_per_row else "per_sequence"}}
