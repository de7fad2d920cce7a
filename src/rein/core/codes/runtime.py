"""Codes a run reports: the spec's RT codes and rein's own for runs, approvals and drivers."""

from __future__ import annotations

from typing import Final

from rein.core.codes.model import Code, Kind, Source
from rein.errors import Severity

SPEC: Final[Source] = "AGS 1.0 §18.2"


def _rt(code: str, meaning: str, hint: str, severity: Severity = "error") -> Code:
    return Code(code=code, area="Runtime (AGS)", severity=severity, kind="diagnostic",
                meaning=meaning, hint=hint, source=SPEC)


def _own(area: str, code: str, kind: Kind, meaning: str, hint: str, *,
         severity: Severity = "error", legacy: bool = False,
         aliases: tuple[str, ...] = ()) -> Code:
    return Code(code=code, area=area, severity=severity, kind=kind, meaning=meaning, hint=hint,
                legacy_name=legacy, aliases=aliases)


SPEC_CODES = (
    _rt("RT011", "no worker or model can serve the node's tier, and no downgrade is allowed",
        "configure a worker for the tier in rein.toml, or allow a downgrade"),
    _rt("RT012", "a required tool or MCP server is not available to the node",
        "provide the tool or server, list an alternative, or mark it optional"),
    _rt("RT013", "determinism: strict cannot be honoured by the node's worker",
        "use a worker that supports seeds, or relax determinism"),
    _rt("RT014", "the isolation the node asks for cannot be provided",
        "lower requirements.isolation, or run where that isolation exists"),
    _rt("RT015", "a required human checkpoint, criterion or escalation cannot be presented",
        "run with a channel for people (an approver), or make the checkpoint optional"),
    _rt("RT021", "a loop reached max_iterations without meeting its exit condition",
        "raise max_iterations, or fix the body so the condition can hold"),
    _rt("RT022", "a decision's label is outside its branches; the default branch was used",
        "make the evaluator answer one of the branch labels", "warning"),
    _rt("RT025", "map.over did not evaluate to an array", "make map.over yield an array"),
    _rt("RT026", "a map's collection has more items than max_items (truncated with "
        "on_over_limit: truncate)", "raise max_items, or shrink the collection"),
    _rt("RT031", "an output does not have its declared type",
        "produce a value of the declared type, or correct the declaration"),
    _rt("RT032", "an output does not satisfy its declared schema",
        "produce a value the schema accepts, or correct the schema"),
    _rt("RT033", "a required input or output is missing",
        "bind the input, or make the node produce the output"),
    _rt("RT041", "a required graph output is unbound when the run ends",
        "bind the output from a node that succeeds on every path"),
    _rt("RT042", "a node ended succeed_degraded", "see the node's failure feedback",
        "warning"),
    _rt("RT051", "a subgraph reference does not match its integrity digest (or is remote)",
        "update ref.integrity after reviewing the child, or restore the child file"),
    _rt("RT052", "a subgraph reference's child has another id than expected_id",
        "point the ref at the intended child, or correct expected_id"),
    _rt("RT053", "resume refused: the graph or a child changed since the run started",
        "start a new run, or restore the documents the run was approved with"),
    _rt("RT061", "a global constraint (budget, node executions, depth) would be exceeded",
        "raise the constraint, or make the graph cheaper"),
    _rt("RT062", "an expression could not be evaluated",
        "fix the expression; with policy.on_expression_error: false it counts as false"),
)

RUN = "Runs"
APPROVAL = "Approvals"
DRIVER = "Driver"
PLAN = "Planning and preflight"
CRIT = "Success criteria"

RUN_CODES = (
    _own(RUN, "RUN000", "diagnostic", "a run step failed where AGS defines no code: a loop "
         "iteration, map items, or a compensation",
         "read the diagnostic's message and the node's failure feedback", aliases=("RT000",)),
    _own(RUN, "RUN404", "error", "no run has that id", "see `rein runs list`"),
    _own(RUN, "RUN010", "refused", "the run belongs to another workspace: advancing it, "
         "answering its driver or handing out its instructions here would run its checks "
         "in the wrong directory", "run the command in the run's own workspace (`rein runs "
         "list` says which); reading it works anywhere"),
    _own(RUN, "RUN_CANCELLED", "diagnostic", "the run was cancelled", "start or resume it again",
         severity="info", legacy=True),
    _own(RUN, "RUN_CHILD", "refused", "the run is a subgraph's child run; it is controlled "
         "through its parent", "cancel or resume the top-level run", legacy=True),
    _own(RUN, "RUN_ENDED", "refused", "the run has already ended", "nothing to cancel",
         legacy=True),
    _own(RUN, "RUN_LOCKED", "refused", "another rein process is running this run",
         "wait for it to finish or pause, then retry", legacy=True),
    _own(RUN, "LADDER001", "diagnostic", "a disposition says escalate, but the node declares "
         "no escalation", "add failure.escalation, or choose another disposition",
         severity="warning"),
    _own(RUN, "RECORD001", "error", "the file is not a valid AGS run record",
         "give a record from `rein runs record RUN`, or a run id"),
    _own(RUN, "PARAM001", "usage", "a --param is not NAME=VALUE", "write --param name=value"),
    _own(RUN, "PARAM002", "usage", "a params file does not hold one mapping of name to value",
         "write the params file as one YAML or JSON object"),
)

APPROVAL_CODES = (
    _own(APPROVAL, "APPROVAL404", "error", "no approval has that id",
         "see `rein approvals list`"),
    _own(APPROVAL, "APPROVAL001", "refused", "an answer gives a value the approval neither "
         "collects nor has as an output", "name one of the values the hint lists"),
    _own(APPROVAL, "APPROVAL002", "refused", "an input gate is accepted without a value it "
         "requires, or with one of the wrong type", "give each value with --value NAME=VALUE "
         "(or the fields of its card)"),
    _own(APPROVAL, "APPROVAL003", "refused", "the answering process is confined the way an "
         "agent's sandbox confines (no-new-privileges): approvals are a person's to answer",
         "a person answers it outside any agent's sandbox"),
    _own(APPROVAL, "APPROVAL004", "refused", "answers here are signed with the approver's SSH "
         "key, and this one's signature is missing, or does not verify for this answer",
         "the approver answers it in their own terminal, where their key signs it"),
    _own(APPROVAL, "APPROVAL005", "refused", "where approvals are signed, an answer or a run's "
         "approval found in the store does not verify (no signature, another key, another "
         "answer's signature, or edited since it was signed): it is not acted on, and the "
         "approval waits for a person again", "the approver answers it in their own "
         "terminal, where their key signs it; a run's approval is signed again with `rein "
         "resume RUN --force`"),
    _own(APPROVAL, "APPROVAL006", "usage", "an answer's decision is not a word of the one "
         "vocabulary of answers (accept, decline, cancel)", "answer accept, decline or "
         "cancel"),
    _own(APPROVAL, "APPROVAL007", "error", "a gate's material changed while it waited, and "
         "the work it presents no longer passes the checks of the node that made it: the "
         "gate failed without asking anyone", "fix the work so that it passes its checks "
         "(the run's flow gives it back to the worker with the reasons), then run it again"),
    _own(APPROVAL, "APPROVAL008", "notice", "`rein graph plan` drew a file that a pending "
         "approval shows, and the approval binds other content than the bytes drawn: what "
         "is drawn is not what an accept approves", "read what the approval binds with "
         "`rein approvals show ID` (drawn from the copy it keeps), and decide on that",
         severity="warning"),
    _own(APPROVAL, "APPROVAL009", "error", "the approval keeps no copy of that file that is "
         "the content it binds (it does not show the file; a directory, a file too large "
         "or not text; or a copy edited in the run store)", "compare the file's digest "
         "(`sha256sum FILE`) with the one `rein approvals show ID` prints"),
    _own(APPROVAL, "APPROVAL_ACTOR", "refused", "--actor names someone other than the approver "
         "rein knows here", "--actor only checks who answers: leave it out, or let the "
         "person it names answer", legacy=True),
    _own(APPROVAL, "APPROVAL_ANSWERED", "refused", "the approval was already answered",
         "an answer cannot be changed; start a new run to decide differently", legacy=True),
    _own(APPROVAL, "APPROVAL_MISSING", "refused", "the graph was not approved before the run",
         "review the plan, then run with --approve DIGEST", legacy=True),
    _own(APPROVAL, "APPROVAL_ROLE", "refused", "the approver lacks the role the approval asks "
         "for", "a person who holds the role answers it", legacy=True),
    _own(APPROVAL, "APPROVAL_STALE", "refused", "what was approved changed since it was "
         "presented (the digest no longer matches)", "look at the approval again with `rein approvals "
         "list --json`", legacy=True),
)

DRIVER_CODES = (
    _own(DRIVER, "DRIVER001", "refused", "REIN_USAGE_JSON, the usage an adapter reports for "
         "the agent, is not a usage report", "fix or unset it, or put usage in the envelope "
         "(docs/driver.md, \"Usage\")"),
    _own(DRIVER, "DRIVER404", "error", "no driver instruction has that token",
         "see `rein next` for the current instruction"),
    _own(DRIVER, "DRIVER_ANSWERED", "refused", "the instruction was already answered",
         "see `rein next`", legacy=True),
    _own(DRIVER, "DRIVER_ENVELOPE", "refused", "the envelope answers nothing pending, or not "
         "in the shape asked for", "answer the instruction `rein next` printed, in its "
         "shape", legacy=True),
    _own(DRIVER, "DRIVER_ENVELOPE_LIMIT", "refused", "the envelope is larger or deeper than "
         "rein reads", "write large outputs to files in the workspace and "
         "name them", legacy=True),
    _own(DRIVER, "DRIVER_NOT_CURRENT", "refused", "another instruction was handed out first",
         "answer the instruction `rein next` shows", legacy=True),
    _own(DRIVER, "DRIVER_NO_ENVELOPE", "refused", "no envelope could be read (missing file, "
         "or no JSON object)", "pass the envelope file, or pipe it on stdin", legacy=True),
    _own(DRIVER, "DRIVER_STALE", "refused", "the instruction is no longer pending",
         "see `rein next`", legacy=True),
    _own(DRIVER, "DRIVER_WRITES_OUTSIDE", "refused", "the envelope claims files outside what "
         "the node may write", "undo those writes, then submit again", legacy=True),
    _own(DRIVER, "DRIVER_WRONG_RUN", "refused", "the envelope is for another run",
         "send it without --run, or answer the run's own "
         "instruction", legacy=True),
    _own(DRIVER, "DRIVERCFG001", "usage", "[driver] tiers names an unknown tier",
         "use the tiers the hint lists"),
    _own(DRIVER, "DRIVERCFG002", "usage", "[driver] clean_context_at is not in (0, 1]",
         "for example 0.7"),
    _own(DRIVER, "DRIVERCFG003", "usage", "[driver] max_write_refusals is not a whole number from 0",
         "for example 2"),
    _own(DRIVER, "INIT001", "error", "the command `rein init` wrote for the agent "
         "(.rein/bin/rein) does not answer in a login shell",
         "check that the workspace allows running programs and that the interpreter runs"),
    _own(DRIVER, "INIT002", "usage", "`rein init --example` names no example shipped with rein",
         "`rein init --list-examples` names them"),
    _own(DRIVER, "INIT003", "error", "an instruction file has rein's start marker but no "
         "end marker after it", "put the end marker back where rein's section ends, or "
         "remove the section"),
)

PLAN_CODES = (
    _own(PLAN, "PLAN001", "notice", "the worst case exceeds constraints.max_node_executions",
         "raise the limit, or bound loops and retries", severity="warning"),
    _own(PLAN, "PLAN002", "notice", "the graph uses a feature above its requires_conformance",
         "raise requires_conformance, or drop the feature", severity="warning"),
    _own(PLAN, "PLAN003", "notice", "the projected cost exceeds constraints.max_cost_usd",
         "raise the limit, or lower estimates and tiers", severity="warning"),
    _own(PLAN, "PLAN004", "notice", "the projected tokens exceed constraints.max_total_tokens",
         "raise the limit, or lower estimates", severity="warning"),
    _own(PLAN, "PLAN005", "notice", "nesting is deeper than constraints.max_subgraph_depth",
         "raise the limit, or flatten the graph", severity="warning"),
    _own(PLAN, "PLAN006", "notice", "a referenced child could not be planned; counts are a "
         "lower bound", "fix the child document", severity="warning"),
    _own(PLAN, "PLAN007", "notice", "a referenced child does not match its integrity or id",
         "review the child and update ref.integrity or expected_id", severity="warning"),
    _own(PLAN, "PLAN008", "notice", "a fragment or document contains itself; the plan cuts it",
         "break the recursion", severity="warning"),
    _own(PLAN, "PLAN009", "notice", "requirements.environment hands a provider key to a "
         "worker", "remove the key from requirements.environment", severity="warning"),
    _own(PLAN, "SECRET001", "finding", "a required secret is not set in the environment",
         "export REIN_SECRET_<NAME> before running, or mark it required: false"),
    _own(PLAN, "PERM002", "diagnostic", "a node asks for a permission outside the harness "
         "policy", "widen the policy in rein.toml, or narrow the node's permissions"),
)

CRIT_CODES = (
    _own(CRIT, "CRIT001", "diagnostic", "a criterion could not be evaluated",
         "fix the criterion the message names"),
    _own(CRIT, "CRIT002", "diagnostic", "a criterion's path is not a workspace path",
         "use a relative path inside the workspace, without NUL bytes"),
    _own(CRIT, "CRIT004", "diagnostic", "the criterion names an unknown checker",
         "install the package that registers it under rein.checkers, or fix the name"),
    _own(CRIT, "CRIT005", "diagnostic", "the checker or judge itself failed or gave no score",
         "fix the checker, or the judge worker's answer"),
    _own(CRIT, "CRIT006", "diagnostic", "the criterion timed out",
         "raise its timeout, or make the check faster"),
    _own(CRIT, "CRIT008", "diagnostic", "a criterion's regular expression needs "
         "backtracking (a backreference, lookaround, an atomic group, a possessive "
         "quantifier, a conditional) or is too large: rein matches in linear time only",
         "rewrite the pattern without those constructs (RE2 syntax)"),
    _own(CRIT, "CRIT007", "error", "an external checker could not run for a reason of "
         "rein's own, not the work's: the attempt stays in flight, uncounted",
         "fix the cause named, then continue the run (`rein resume`)"),
)

CODES = (*SPEC_CODES, *RUN_CODES, *APPROVAL_CODES, *DRIVER_CODES, *PLAN_CODES, *CRIT_CODES)

__all__ = ["CODES", "SPEC"]
