#!/usr/bin/env bash
# The main job on the embedded defaults (`make run`): validate every example graph, then
# plan one so a reviewer sees what it would do before anything runs.
set -euo pipefail
cd "$(dirname "$0")/.."
REIN=.venv/bin/rein
GRAPH=examples/release-train.agraph.yaml

say() { printf '\n== %s\n\n' "$*"; }

say "1. Validate the example graphs (errors and warnings both fail under --strict)"
"$REIN" graph validate --strict examples/

say "2. Plan $GRAPH: order, parallel steps, people, budgets, worst case"
"$REIN" graph plan "$GRAPH"

say "3. The digest an approval binds to"
"$REIN" graph digest "$GRAPH"

say "Next"
cat <<EOF
  rein graph plan --format mermaid $GRAPH    # a picture for a pull request
  rein graph plan --format dot $GRAPH | dot -Tsvg > plan.svg
  rein graph plan --json examples/no-worker.agraph.yaml   # the plan as data
  rein graph validate --strict path/to/your.agraph.yaml    # check your own graph
EOF
