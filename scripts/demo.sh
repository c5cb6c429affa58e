#!/usr/bin/env bash
# The demo `make demo` runs: what fmsim can tell about shipped clusters.
set -euo pipefail
fmsim=${1:-build/fmsim}
cd "$(dirname "$0")/.."
out=$(mktemp -d)
echo "== fmsim topo topologies/p6e-gb200-4x72.json"
"$fmsim" topo topologies/p6e-gb200-4x72.json --dot "$out/gb200.dot" --json "$out/gb200.json"
echo
echo "== fmsim topo topologies/p5-16node.json"
"$fmsim" topo topologies/p5-16node.json
echo
echo "(JSON and DOT written to $out)"
