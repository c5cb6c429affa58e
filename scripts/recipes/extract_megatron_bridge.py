#!/usr/bin/env python3
"""Step 1 of transcribing configs/recipes/megatron-bridge/: the performance configurations of each release.

For each release tag of a Megatron-Bridge clone, writes scripts/performance/**.py of that tag under WORK/TAG/
and WORK/TAG.json: every WorkloadBaseConfig of configs/*/*_workload_base_configs.py with its resolved fields
(the file is executed with the tag's own utils.utils.WorkloadBaseConfig).
Usage: extract_megatron_bridge.py MEGATRON_BRIDGE_GIT_DIR WORK_DIR   (then transcribe_recipes.py WORK_DIR OUT)"""
import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
import types

TAGS = ["r0.1.0", "v0.2.0", "v0.3.0", "v0.3.1", "v0.4.0", "v0.4.1", "v0.5.0", "v0.5.1", "v0.6.0"]
# Tags whose performance settings are WorkloadBaseConfig files (r0.1.0 has YAML files, v0.6.0 perf_recipes/).
WORKLOAD_BASE_TAGS = TAGS[1:-1]


def checkout(repo, tag, work):
    files = subprocess.run(["git", "-C", repo, "ls-tree", "-r", "--name-only", tag, "scripts/performance"],
                           capture_output=True, text=True, check=True).stdout.split()
    for f in files:
        if not f.endswith(".py"):
            continue
        path = os.path.join(work, tag, f)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as out:
            out.write(subprocess.run(["git", "-C", repo, "show", f"{tag}:{f}"], capture_output=True, check=True).stdout)


def dump(work, tag):
    root = os.path.join(work, tag, "scripts", "performance")
    utils_path = os.path.join(root, "utils", "utils.py")
    if tag not in WORKLOAD_BASE_TAGS:
        return None
    module, package = types.ModuleType("utils.utils"), types.ModuleType("utils")
    package.__path__ = []
    sys.modules["utils"], sys.modules["utils.utils"] = package, module
    exec(compile(open(utils_path).read(), utils_path, "exec"), module.__dict__)
    out = {}
    configs = os.path.join(root, "configs")
    for family in sorted(os.listdir(configs)):
        for name in sorted(os.listdir(os.path.join(configs, family))) if os.path.isdir(os.path.join(configs, family)) else []:
            if not name.endswith("workload_base_configs.py"):
                continue
            spec = importlib.util.spec_from_file_location(f"wbc_{tag}_{family}_{name[:-3]}", os.path.join(configs, family, name))
            m = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(m)
            for key, value in vars(m).items():
                if key.isupper() and dataclasses.is_dataclass(value):
                    out[key] = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    return out


def main():
    repo, work = sys.argv[1], sys.argv[2]
    for tag in TAGS:
        checkout(repo, tag, work)
        configs = dump(work, tag)
        if configs is not None:
            with open(os.path.join(work, f"{tag}.json"), "w") as f:
                json.dump(configs, f, indent=0, default=str)
        print(tag, "configurations:", "n/a" if configs is None else len(configs))


if __name__ == "__main__":
    main()
