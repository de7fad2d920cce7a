#!/usr/bin/env bash
# Install the real agent CLIs that drive rein in the tests (tests/agents): the Codex CLI
# and Claude Code, from npm, pinned, into a project-local prefix. Each runs offline against
# a scripted model server on 127.0.0.1. Also Claude Code's sandbox runtime (srt), which
# tests/cli/test_approvals_confined.py runs an answer in. Best effort: without Node >= 20
# and npm, or without the packages, those tests skip and say why.
#
#   bash scripts/agent-clis.sh [prefix]        # default .venv/agents
set -uo pipefail
PREFIX="${1:-.venv/agents}"
CODEX=0.171.0
CLAUDE=2.1.197
SRT=0.0.83
have() { [ -x "$PREFIX/node_modules/.bin/$1" ] && "$PREFIX/node_modules/.bin/$1" --version 2>/dev/null | grep -q "$2"; }
have codex "$CODEX" && have claude "$CLAUDE" && [ -x "$PREFIX/node_modules/.bin/srt" ] &&
  grep -q "\"version\": \"$SRT\"" "$PREFIX/node_modules/@anthropic-ai/sandbox-runtime/package.json" 2>/dev/null &&
  exit 0
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "agent-clis.sh: node or npm is missing; the real-agent tests will skip" >&2; exit 0
fi
major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ "$major" -lt 20 ]; then
  echo "agent-clis.sh: Node $major is older than 20; the real-agent tests will skip" >&2; exit 0
fi
mkdir -p "$PREFIX"
# Claude Code's install script only links its platform binary into place; the tests run
# that binary directly when the script did not run.
npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error \
  "@openai/codex@$CODEX" "@anthropic-ai/claude-code@$CLAUDE" \
  "@anthropic-ai/sandbox-runtime@$SRT" >/dev/null 2>&1 ||
  echo "agent-clis.sh: could not install the agent CLIs; the real-agent tests will skip" >&2
exit 0
