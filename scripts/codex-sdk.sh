#!/usr/bin/env bash
# Install the official openai-codex Python SDK for the app-server tests, without its
# 142 MB bundled `codex` binary (the tests launch `rein app-server`, never codex): the SDK
# itself with --no-deps, then the two small packages it imports. Best effort: without it
# the app-server tests skip and say why.
#
#   bash scripts/codex-sdk.sh [path/to/python]
set -uo pipefail
PY="${1:-.venv/bin/python}"
"$PY" -c 'import openai_codex' 2>/dev/null && exit 0
"$PY" -m pip install --quiet --no-deps "openai-codex==0.163.0" &&
  "$PY" -m pip install --quiet "pydantic>=2.12" "packaging>=26.2" ||
  echo "codex-sdk.sh: could not install openai-codex; the app-server tests will skip" >&2
exit 0
