#!/usr/bin/env bash
# The README's two commands, for a machine that may have nothing but bash (a bare Debian bookworm):
#   bash scripts/bootstrap.sh demo   installs the missing build packages (make included), builds fmsim, runs the demo
#   bash scripts/bootstrap.sh test   installs the missing build and test packages, builds everything, runs every test
# Packages come from scripts/install-deps.sh (idempotent, apt's progress shown, root or sudo); then this
# runs `make demo` or `make test`, which people who already have make can run directly.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  demo) bash scripts/install-deps.sh ;;
  test) bash scripts/install-deps.sh --test ;;
  *) echo "usage: bash scripts/bootstrap.sh demo|test" >&2; exit 2 ;;
esac
exec make "$1"
