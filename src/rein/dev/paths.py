"""Where the development flow keeps its files (a module of constants: `rein dev` reads
some of them on every turn, and importing the graph builder for a name would cost more)."""

PLANNING_PATH = ".rein/dev/planning.agraph.yaml"
PLAN_JSON = ".rein/dev/plan.json"
FEATURES_PATH = "specs/plan.agraph.yaml"  # in the repository, beside the briefs
FLOW_FILE = ".rein/dev/flow.json"  # which runs are the flow's
PLANNING_ID = "rein/dev/planning"
FEATURES_ID = "rein/dev/features"
