#!/usr/bin/env bash
# Install axe-core (the accessibility checker, from npm, with its own licence file) into a
# project-local prefix for the console's accessibility tests. Pinned so that a new rule
# release does not change the suite's verdict unannounced. Best effort: without npm the
# accessibility tests skip and say why.
#
#   bash scripts/axe.sh [prefix]        # default .venv/axe
set -uo pipefail
PREFIX="${1:-.venv/axe}"
VERSION=4.10.3
have="$PREFIX/node_modules/axe-core/package.json"
[ -f "$have" ] && grep -q "\"version\": \"$VERSION\"" "$have" && exit 0
if ! command -v npm >/dev/null; then
  echo "axe.sh: npm is missing; the console's accessibility tests will skip" >&2; exit 0
fi
mkdir -p "$PREFIX"
npm install --prefix "$PREFIX" --no-audit --no-fund --ignore-scripts --loglevel=error \
  "axe-core@$VERSION" >/dev/null ||
  echo "axe.sh: could not install axe-core@$VERSION; the accessibility tests will skip" >&2
exit 0
