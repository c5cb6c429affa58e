#!/usr/bin/env bash
# Installs the Debian packages fmsim builds with, idempotently: packages already present are skipped.
# Works as root or through sudo. Safe to run on every `make demo` / `make test`.
# With --test it also installs what the test suite needs beyond the build: Chromium (renders the HTML
# report), and Debian's Python packages for the schema, report and notebook tests, and clang with its
# libFuzzer runtime for the fuzz targets (scripts/fuzz.sh; --fuzz installs only those beside the build).
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libsimgrid-dev libboost-graph-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  catch2 libcli11-dev python3
)
fuzz_packages=(clang libclang-rt-dev)  # bookworm: clang 14; libclang-rt-dev holds libFuzzer and the sanitizers
if [ "${1:-}" = "--test" ]; then
  packages+=(chromium python3-jsonschema python3-pil python3-pandas python3-matplotlib
             python3-nbformat python3-nbclient python3-ipykernel jupyter-nbconvert "${fuzz_packages[@]}")
elif [ "${1:-}" = "--fuzz" ]; then
  packages+=("${fuzz_packages[@]}")
fi

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
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
