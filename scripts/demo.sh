#!/usr/bin/env bash
# The main job on the embedded defaults: validate and plan the examples.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/rein graph validate --strict examples/
