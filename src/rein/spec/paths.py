"""Where the specification flow keeps its files: the bundle in ``specs/active/`` (in the
repository, beside the briefs), rein's own state in ``.rein/spec/``."""

ACTIVE = "specs/active"
# The bundle's documents, in the order they are written; each depends on those before it.
DOCUMENTS = (
    ("charter", f"{ACTIVE}/10-charter.json", "charter"),
    ("requirements", f"{ACTIVE}/20-requirements.json", "requirements"),
    ("design", f"{ACTIVE}/25-design.json", "design"),
    ("acceptance", f"{ACTIVE}/30-acceptance.json", "acceptance checks"),
    ("readiness", f"{ACTIVE}/35-readiness.json", "readiness review"),
)
NAMES = tuple(name for name, _path, _title in DOCUMENTS)
PATHS = {name: path for name, path, _title in DOCUMENTS}
TITLES = {name: title for name, _path, title in DOCUMENTS}
PLAN_PATH = f"{ACTIVE}/40-development-plan.json"  # what READY publishes; `rein dev` imports it
GRAPH_PATH = ".rein/spec/spec.agraph.yaml"
GRAPH_ID = "rein/spec/bundle"
FLOW_FILE = ".rein/spec/flow.json"
PLAN_FORMAT = "rein.spec.plan/1"
