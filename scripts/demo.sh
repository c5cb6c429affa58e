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
echo "== fmsim collective topologies/p5-2node.json --op all_reduce -b 8 -e 16G -f 4"
"$fmsim" collective topologies/p5-2node.json --op all_reduce -b 8 -e 16G -f 4
echo
echo "== fmsim collective topologies/p6e-gb200-4x72.json --op alltoall -b 1M -e 4G -f 8"
"$fmsim" collective topologies/p6e-gb200-4x72.json --op alltoall -b 1M -e 4G -f 8
echo
echo
echo "== fmsim run configs/training/llama3-70b-p5.json"
"$fmsim" run configs/training/llama3-70b-p5.json --json "$out/llama3-70b.json" --timeline "$out/llama3-70b-timeline.json"
echo
echo "== fmsim checkpoint configs/training/llama3.1-405b-p5-2048.json"
"$fmsim" checkpoint configs/training/llama3.1-405b-p5-2048.json --json "$out/llama3.1-405b-checkpoint.json"
echo
echo "== fmsim serve configs/serving/llama3.3-70b-p5en.json"
"$fmsim" serve configs/serving/llama3.3-70b-p5en.json --json "$out/llama3.3-70b-serve.json"
echo
echo "== fmsim serve configs/serving/llama3.3-70b-p5en-disaggregated.json"
"$fmsim" serve configs/serving/llama3.3-70b-p5en-disaggregated.json --timeline "$out/llama3.3-70b-serve-timeline.json"
echo
echo "== fmsim report: HTML pages and Prometheus metrics of the results above"
"$fmsim" report "$out/llama3-70b.json" --html "$out/llama3-70b.html" --prometheus "$out/llama3-70b.prom"
"$fmsim" report "$out/llama3.3-70b-serve.json" --html "$out/llama3.3-70b-serve.html"
echo "$out/llama3-70b.html, $out/llama3.3-70b-serve.html: open in a browser"
echo
echo "(JSON, DOT, Perfetto time lines, HTML and Prometheus files written to $out)"
