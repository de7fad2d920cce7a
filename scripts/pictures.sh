#!/usr/bin/env bash
# Draw the pictures the docs show, from the example graphs and a real run, into docs/images/
# (`make pictures`). Needs Graphviz's dot (scripts/system-deps.sh installs it where it can).
set -euo pipefail
cd "$(dirname "$0")/.."
REIN=${REIN:-.venv/bin/rein}
OUT=docs/images
mkdir -p "$OUT"
command -v dot >/dev/null 2>&1 || {
  echo "pictures need Graphviz's dot: apt-get install graphviz (or brew install graphviz)" >&2
  exit 4
}

echo "plan of examples/release-train.agraph.yaml, coloured by kind -> $OUT/release-train-plan.svg"
"$REIN" graph plan --format svg examples/release-train.agraph.yaml > "$OUT/release-train-plan.svg"

# A real run in a scratch workspace (no model needed), drawn with each node's final state.
RUN_WS=$(mktemp -d)
trap 'rm -rf "$RUN_WS"' EXIT
GRAPH="$RUN_WS/no-worker.agraph.yaml"
cp examples/no-worker.agraph.yaml "$GRAPH"
"$REIN" run "$GRAPH" --workspace "$RUN_WS" --approve "$("$REIN" graph digest "$GRAPH")" \
  >/dev/null 2>&1
RUN_ID=$("$REIN" runs list --workspace "$RUN_WS" --json \
  | "$(dirname "$REIN")/python" -c 'import json, sys; print(json.load(sys.stdin)["runs"][0]["run_id"])')
echo "run $RUN_ID of examples/no-worker.agraph.yaml, coloured by state -> $OUT/no-worker-run.svg"
"$REIN" runs show "$RUN_ID" --workspace "$RUN_WS" --format svg > "$OUT/no-worker-run.svg"
