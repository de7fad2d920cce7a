#!/usr/bin/env bash
# Install acpx 0.19.1 (an independent ACP client, from npm) for the `rein acp` tests, into
# a project-local prefix; and the official ACP TypeScript SDK 2.4.0 beside it (in
# <prefix>/../acp-ts), which tests/acp_agent/test_ts_sdk.py drives `rein acp` with.
# Pinned: on Node 20 a bare `npm install acpx` resolves to 0.1.15, the newest release
# whose `engines` accepts Node 20. Best effort: without Node >= 20 or
# npm the acpx tests skip and say why.
#
#   bash scripts/acpx.sh [prefix]        # default .venv/acpx
set -uo pipefail
PREFIX="${1:-.venv/acpx}"
VERSION=0.19.1
TS_PREFIX="$(dirname "$PREFIX")/acp-ts"
TS_VERSION=2.4.0
ts_sdk() {  # the TypeScript SDK, pinned, in a prefix of its own (acpx pins an older one)
  grep -q "\"version\": \"$TS_VERSION\"" \
    "$TS_PREFIX/node_modules/@agentclientprotocol/sdk/package.json" 2>/dev/null && return 0
  mkdir -p "$TS_PREFIX"
  npm install --prefix "$TS_PREFIX" --no-audit --no-fund --ignore-scripts --loglevel=error \
    "@agentclientprotocol/sdk@$TS_VERSION" >/dev/null ||
    echo "acpx.sh: could not install @agentclientprotocol/sdk@$TS_VERSION; its tests will skip" >&2
}
[ -x "$PREFIX/node_modules/.bin/acpx" ] &&
  [ "$("$PREFIX/node_modules/.bin/acpx" --version 2>/dev/null)" = "$VERSION" ] &&
  command -v npm >/dev/null && { ts_sdk; exit 0; }
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "acpx.sh: node or npm is missing; the acpx tests will skip" >&2; exit 0
fi
major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ "$major" -lt 20 ]; then
  echo "acpx.sh: Node $major is older than 20; the acpx tests will skip" >&2; exit 0
fi
mkdir -p "$PREFIX"
# acpx needs no install scripts; its engines field asks for Node 22, and it runs on 20.
npm install --prefix "$PREFIX" --no-audit --no-fund --ignore-scripts --loglevel=error \
  "acpx@$VERSION" >/dev/null ||
  echo "acpx.sh: could not install acpx@$VERSION; the acpx tests will skip" >&2
ts_sdk
exit 0
