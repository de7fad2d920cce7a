#!/usr/bin/env bash
# The main job on the embedded defaults (`make run`): validate every example graph, then
# plan one so a reviewer sees what it would do before anything runs.
set -euo pipefail
cd "$(dirname "$0")/.."
REIN=${REIN:-.venv/bin/rein}
GRAPH=examples/release-train.agraph.yaml
# The runs below happen in scratch workspaces, one folder for both, named at the end: kept
# so that the commands printed there work, and removed with one rm -rf.
DEMO_DIR=$(mktemp -d "${TMPDIR:-/tmp}/rein-demo.XXXXXX")

say() { printf '\n== %s\n\n' "$*"; }

say "1. Validate the example graphs (errors and warnings both fail under --strict)"
"$REIN" graph validate --strict examples/

say "2. Plan $GRAPH: order, parallel steps, people, budgets, worst case"
"$REIN" graph plan "$GRAPH"

say "3. The digest an approval binds to"
"$REIN" graph digest "$GRAPH"

say "4. Run examples/no-worker.agraph.yaml to completion (no model, no worker needed)"
# A scratch workspace keeps the checkout clean; rein's state lives in <workspace>/.rein/.
# `rein run` prints the plan's summary before it starts (step 2 showed the whole plan).
RUN_WS=$DEMO_DIR/no-worker
mkdir "$RUN_WS"
RUN_GRAPH=examples/no-worker.agraph.yaml
status=0
"$REIN" run "$RUN_GRAPH" --workspace "$RUN_WS" \
  --approve "$("$REIN" graph digest "$RUN_GRAPH")" || status=$?
"$REIN" runs list --workspace "$RUN_WS"
RUN_ID=$("$REIN" runs list --workspace "$RUN_WS" --json \
  | "$(dirname "$REIN")/python" -c 'import json, sys; print(json.load(sys.stdin)["runs"][0]["run_id"])')
if [ "$status" -eq 3 ]; then
  echo "The run is waiting. See what it needs and answer:"
  echo "  rein approvals list --workspace $RUN_WS"
  echo "  rein approvals accept APPROVAL_ID --workspace $RUN_WS"
elif [ "$status" -ne 0 ]; then
  exit "$status"
fi

say "5. Run examples/driver-demo.agraph.yaml to its first pause: it waits for an IDE agent"
DRIVE_WS=$DEMO_DIR/driver-demo
mkdir "$DRIVE_WS"
DRIVE_GRAPH=$PWD/examples/driver-demo.agraph.yaml
git -C "$DRIVE_WS" init -q 2>/dev/null || true   # the driver's writes are checked with git
drive=0
"$REIN" run "$DRIVE_GRAPH" --workspace "$DRIVE_WS" \
  --approve "$("$REIN" graph digest "$DRIVE_GRAPH")" || drive=$?
if [ "$drive" -eq 3 ]; then
  echo
  echo "The run waits for its driver. This is the instruction an agent reads (rein next):"
  echo
  "$REIN" next --workspace "$DRIVE_WS" || true
  echo
  echo "To drive it yourself: cd $DRIVE_WS, do the work, write the envelope to"
  echo ".rein/inbox.json, then run \`rein submit\` (see docs/worked-example.md)."
fi

say "Next"
cat <<EOF
  . .venv/bin/activate   # puts rein on your PATH
  rein runs record $RUN_ID --workspace $RUN_WS   # the AGS run record of that run
  rein runs events $RUN_ID --workspace $RUN_WS   # its trace, event by event
  rein graph plan --format mermaid $GRAPH    # a picture for a pull request
  rein graph plan --format svg $GRAPH > plan.svg   # drawn by Graphviz, if installed
  rein runs show $RUN_ID --workspace $RUN_WS --format mermaid   # the run, coloured by state
  rein graph plan --json examples/no-worker.agraph.yaml   # the plan as data
  rein graph validate --strict path/to/your.agraph.yaml    # check your own graph

The demo's two workspaces are kept in $DEMO_DIR for the commands above;
remove them with: rm -rf $DEMO_DIR
EOF
