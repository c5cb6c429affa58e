#!/usr/bin/env bash
# Installs the Debian packages fmsim builds with, idempotently: packages already present are skipped, and
# when none is missing nothing is run (no apt-get, no network). Works as root or through sudo; apt's own
# progress is shown. Needs only bash and dpkg, so it runs on a bare Debian (make is one of the packages).
# Without an argument: what the `fmsim` binary needs (compiler, make, CMake, Ninja, ccache, SimGrid 3.32,
# Boost.Graph, nlohmann/json, spdlog, CLI11, protobuf for Chakra traces, yaml-cpp for Kueue YAML). With
# --test also what only the test suite needs: Catch2 (unit tests), python3 (end-to-end tests), Chromium (renders the HTML report),
# Prometheus (promtool and the server the --metrics tests load series into), Debian's Python packages for
# the schema, report, notebook and Chakra tests, and clang with its libFuzzer runtime for the fuzz targets
# (scripts/fuzz.sh). With --fuzz only those beside the build.
set -euo pipefail

packages=(
  build-essential make cmake ninja-build ccache pkg-config
  libsimgrid-dev libboost-graph-dev nlohmann-json3-dev libspdlog-dev libfmt-dev libcli11-dev
  protobuf-compiler libprotobuf-dev libyaml-cpp-dev
)
fuzz_packages=(clang libclang-rt-dev)  # bookworm: clang 14; libclang-rt-dev holds libFuzzer and the sanitizers
case "${1:-}" in
  "") ;;
  --test)
    packages+=(catch2 python3 chromium python3-jsonschema python3-pil python3-pandas python3-matplotlib
               python3-nbformat python3-nbclient python3-ipykernel jupyter-nbconvert prometheus python3-protobuf "${fuzz_packages[@]}") ;;
  --fuzz) packages+=("${fuzz_packages[@]}") ;;
  *) echo "usage: scripts/install-deps.sh [--test|--fuzz]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 2; }
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update
"${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
