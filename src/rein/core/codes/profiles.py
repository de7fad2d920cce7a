"""Codes about OAP profiles: validating them, resolving them, writing state back, memory.

OAP 1.0 defines rules, not codes; each OAP code's message ends with the rule it breaks in
brackets (``[L1-P3]``, ``[§7.3]``) so it can be looked up in the spec. The first hundred are
document findings (``rein profile validate``), the 2xx are raised while a profile is used.
"""

from __future__ import annotations

from rein.core.codes.model import Code, Kind
from rein.errors import Severity

VALIDATE = "Profiles: validation"
USE = "Profiles: resolution, write-back and proposals"
WORKER = "Profiles as workers and memory"


def _c(area: str, code: str, kind: Kind, meaning: str, hint: str,
       severity: Severity = "error") -> Code:
    return Code(code=code, area=area, severity=severity, kind=kind, meaning=meaning, hint=hint)


def _f(code: str, meaning: str, hint: str, severity: Severity = "error") -> Code:
    return _c(VALIDATE, code, "finding", meaning, hint, severity)


def _u(code: str, kind: Kind, meaning: str, hint: str) -> Code:
    return _c(USE, code, kind, meaning, hint)


CODES = (
    _c(VALIDATE, "OAP000", "error", "the OAP schema for a kind is not available to this "
       "install", "install rein's dependencies (the open-agent-profile "
       "package)"),
    _f("OAP001", "the file could not be read or parsed [L1-P1]",
       "fix the syntax at the location, or the path"),
    _f("OAP002", "a Markdown profile has instructions in both frontmatter and body [L3-G1]",
       "keep the instructions in one place"),
    _f("OAP003", "oap is missing, malformed, or a major version other than 1 [L1-P3]",
       'set oap: "1.0"'),
    _f("OAP004", "oap names a minor version newer than rein implements [L1-P4]",
       'set oap: "1.0"; newer minors fail closed'),
    _f("OAP005", "unknown kind [L1-P5]", "use AgentProfile or AgentStateDelta"),
    _f("OAP006", "the document violates the OAP JSON Schema [L1-P2]",
       "fix the value at the pointer the finding names"),
    _f("OAP007", "an MCP server's env or headers hold a literal value [L1-I6]",
       "write a ${VARIABLE} reference and set the variable outside the file"),
    _f("OAP008", "a path escapes the workspace [L1-I5]", "use a path inside the workspace"),
    _f("OAP009", "${{ vars.KEY }} names no declared variable [§3.6]",
       "declare the variable under vars, or fix its name"),
    _f("OAP010", "two state entries have the same id [§A.4]", "give each entry its own id"),
    _f("OAP011", "history is out of order, or ahead of metadata.revision [L2-A11]",
       "order history oldest first, at or below the revision"),
    _f("OAP012", "a delta operation is outside /state [L2-A2]",
       "change only /state through operations; propose other changes"),
    _f("OAP013", "a string is shaped like a credential [§7.3]",
       "remove the secret and reference it through the environment"),
    _f("OAP014", "a value has no RFC 8785 form, so no digest can be computed [§2.2]",
       "use finite numbers and JSON values only"),
    _f("OAP101", "metadata.trust is in the file; it is recomputed and ignored [L1-I4]",
       "remove metadata.trust", "warning"),
    _f("OAP102", "metadata.name differs from the file name; the name wins [L1-D4]",
       "rename the file or the profile", "warning"),
    _f("OAP103", "a ${{ vars }} template inside state is never substituted [L2-S5]",
       "write the literal value into state", "warning"),
    _f("OAP104", "tool policy fields have no effect under this policy [§3.4]",
       "remove them, or change tools.policy", "warning"),
    _f("OAP105", "a binding names a tool the profile does not grant [§3.4]",
       "grant the tool, or remove the binding", "warning"),
    _f("OAP106", "a proposal declares a lower risk than rein computes [L2-A8]",
       "declare the risk rein reports", "warning"),
    _u("OAP200", "error", "a profile cannot be resolved or instantiated",
       "see the findings listed with it"),
    _u("OAP201", "error", "a profile is defined twice in one discovery root [L1-D2]",
       "keep one definition per root"),
    _u("OAP202", "error", "no profile has that name in any discovery root",
       "check the name, or pass the path of the profile file"),
    _u("OAP203", "error", "the file is another OAP kind than the command needs",
       "pass an AgentProfile (or the delta the command asks for)"),
    _u("OAP210", "error", "extends forms a cycle [L3-E1]", "break the extends chain"),
    _u("OAP211", "error", "extends is nested too deep [L3-E1]", "flatten the extends chain"),
    _u("OAP212", "error", "extends pins a revision the base is not at [L3-G2]",
       "update the pinned revision after reviewing the base"),
    _u("OAP213", "error", "extends pins a spec digest the base does not have [L3-G2]",
       "update the pinned digest after reviewing the base"),
    _u("OAP214", "error", "extends names a remote profile; only local paths are accepted",
       "copy the base into a discovery root"),
    _u("OAP215", "error", "extends names a profile no discovery root has",
       "add the base profile, or fix its name"),
    _u("OAP220", "finding", "a required skill is missing or does not match its digest [L1-I7]",
       "install the skill, or update its pinned digest"),
    _u("OAP221", "finding", "a required hook is not registered in rein.toml [L1-I7]",
       "register the hook in rein.toml (and trust the project file)"),
    _u("OAP222", "finding", "a required memory store is unavailable [L1-I7]",
       "fix the store's path, or mark it optional"),
    _c(USE, "OAP224", "notice", "a context file with mode: always cannot be read (missing, "
       "not a file, not UTF-8 text): the session starts without it, and its prompt says so "
       "[§3.6]", "create the file, correct the path, or make it mode: on_demand", "warning"),
    _u("OAP223", "error", "a skill cannot be loaded", "fix the skill file the message names"),
    _u("OAP230", "refused", "the profile may not delegate to that subagent [L3-B2]",
       "list it in spec.runtime.subagents.allow"),
    _u("OAP231", "refused", "delegation would pass the subagent depth limit [L3-B2]",
       "raise spec.runtime.subagents.max_depth, or delegate less deeply"),
    _u("OAP232", "refused", "delegation would pass the subagent concurrency limit [L3-B2]",
       "raise spec.runtime.subagents.max_concurrent, or wait for one to finish"),
    _u("OAP240", "error", "a delta operation cannot be applied; the profile is unchanged",
       "fix the operation the message names"),
    _u("OAP241", "error", "the delta targets another profile", "apply it to the profile it "
       "names"),
    _u("OAP242", "refused", "the delta targets another revision; nothing was written [L2-A3]",
       "regenerate the delta against the current revision"),
    _u("OAP243", "refused", "the delta pins another profile digest [L2-A4]",
       "regenerate the delta against the current profile"),
    _u("OAP244", "refused", "lifecycle.writeback is off; the delta is discarded [L2-A6]",
       "set lifecycle.writeback to propose or auto to keep deltas"),
    _u("OAP245", "refused", "lifecycle.writeback is propose; the delta needs approval [L2-A6]",
       "review the delta, then re-run with --approve"),
    _u("OAP246", "error", "an operation's path is outside /state [L2-A2]",
       "change only /state through operations"),
    _u("OAP247", "error", "an operation's path uses a non-numeric array index",
       "use a number (or -) for array positions"),
    _u("OAP248", "error", "an operation's path names no entry, or an index out of range",
       "point the operation at an existing entry"),
    _u("OAP250", "error", "the updated profile would not parse; nothing was written",
       "report it: the write would have damaged the file"),
    _u("OAP251", "error", "the updated profile does not survive a write and re-read",
       "report it: nothing was written"),
    _u("OAP252", "error", "the updated profile would be invalid; nothing was written",
       "fix the delta so the result validates"),
    _u("OAP253", "refused", "the profile is locked by another rein process",
       "wait for the other process, then retry"),
    _u("OAP260", "error", "the proposal queue is unreadable", "restore or delete the file"),
    _u("OAP261", "error", "the proposal queue has another format version",
       "use the rein that wrote it, or delete the queue"),
    _u("OAP262", "usage", "no proposal has that id", "see `rein profile proposals list`"),
    _u("OAP263", "refused", "the proposal was already accepted or declined",
       "see `rein profile proposals list`"),
    _u("OAP264", "refused", "the proposal was made against an older spec digest; it is stale",
       "decline it and ask for a fresh proposal"),
    _u("OAP265", "error", "the proposal cannot be applied at its path",
       "decline it, or fix the profile so the path exists"),
    _u("OAP266", "refused", "the proposal was changed in the queue since it was queued (its "
       "content no longer gives its id); nothing was written",
       "decline it; a fresh proposal is queued anew"),
    _u("OAP270", "error", "the generated delta would be invalid",
       "shorten or correct the finding named by the pointer"),
    _u("OAP271", "error", "a thread has a status OAP does not define",
       "use one of the statuses the message lists"),
    _u("OAP272", "error", "a proposal's path is not under /metadata or /spec [L2-G4]",
       "change state through operations; propose only /metadata or /spec"),
    _u("OAP273", "error", "a proposal has no rationale [L2-G4]", "say why in its rationale"),
    _u("OAP274", "error", "the findings file could not be read",
       "fix the syntax or the path the message names"),
    _u("OAP275", "error", "the findings file does not match its schema",
       "fix the value at the pointer the message names"),
    _u("OAP276", "error", "a findings change writes state directly",
       "give state through learned, threads, forget or working_context"),
    _u("OAP277", "error", "the generated delta would not apply to the profile",
       "regenerate it against the current profile"),
    _c(WORKER, "PROFILE001", "diagnostic", "a node's x-rein-profile does not resolve",
       "fix the profile; the message carries its own code"),
    _c(WORKER, "PROFILE002", "diagnostic", "the node's profile does not grant a tool the node "
       "needs", "grant the tool in the profile, or mark the requirement optional"),
    _c(WORKER, "PROFILE003", "diagnostic", "the node's profile lacks an MCP server the node "
       "needs", "declare the server in the profile (and set its variables)"),
    _c(WORKER, "MEM001", "refused", "the memory store's mode forbids this read or write "
       "[L3-Y1]", "grant read_write to the session, or do not write"),
    _c(WORKER, "MEM002", "refused", "the memory scope is not granted [L3-Y1]",
       "use a granted scope, or grant it in the profile"),
    _c(WORKER, "MEM003", "refused", "a memory text is empty or too long",
       "remember 1 to the maximum number of characters"),
    _c(WORKER, "MEM004", "refused", "a memory text looks like a credential; credentials are "
       "never remembered", "remember where the credential comes from, not its value"),
    _c(WORKER, "MEM010", "error", "the memory file is unreadable", "restore or delete it"),
    _c(WORKER, "MEM011", "error", "the memory file has another format version",
       "use the rein that wrote it, or move it aside"),
    _c(WORKER, "MEM012", "error", "a memory store's path cannot be used",
       "fix the store's path in the profile"),
)

__all__ = ["CODES"]
