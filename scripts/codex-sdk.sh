#!/usr/bin/env bash
# Install the official openai-codex Python SDK for the app-server tests: the SDK itself
# with --no-deps, then the two small packages it imports; and the real `codex` of the same
# version (the openai-codex-cli-bin wheel), which the schema and differential tests drive
# beside `rein app-server`. Best effort: without them those tests skip and say why.
#
#   bash scripts/codex-sdk.sh [path/to/python]
set -uo pipefail
PY="${1:-.venv/bin/python}"
if ! "$PY" -c 'import openai_codex' 2>/dev/null; then
  "$PY" -m pip install --quiet --no-deps "openai-codex==0.163.0" &&
    "$PY" -m pip install --quiet "pydantic>=2.12" "packaging>=26.2" ||
    echo "codex-sdk.sh: could not install openai-codex; the app-server tests will skip" >&2
fi
if ! "$PY" -c 'import codex_cli_bin' 2>/dev/null; then
  "$PY" -m pip install --quiet --no-deps "openai-codex-cli-bin==0.163.0" ||
    echo "codex-sdk.sh: could not install openai-codex-cli-bin; the differential test will skip" >&2
fi
exit 0
