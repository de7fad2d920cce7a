"""Validating OAP documents: version and kind gates, the JSON Schema, and the rules beyond it.

Every finding's code is stable and its message ends with the rule it breaks, in brackets
(``[L1-P3]``, ``[§7.3]``), so a reader can look it up in the spec. Codes:

=======  ========  ==============================================================
code     rule      meaning
=======  ========  ==============================================================
OAP001   L1-P1     the file could not be read or parsed
OAP002   L3-G1     Markdown with instructions in both frontmatter and body
OAP003   L1-P3     ``oap`` missing, malformed, or a major version other than 1
OAP004   L1-P4     a minor version newer than 1.0 (fail closed)
OAP005   L1-P5     unknown ``kind``
OAP006   L1-P2     JSON Schema violation (pointer in the location)
OAP007   L1-I6     a literal value in an MCP server's ``env`` or ``headers``
OAP008   L1-I5     a path that escapes the workspace
OAP009   §3.6      ``${{ vars.KEY }}`` with no such variable
OAP010   §A.4      two state entries with the same id
OAP011   L2-A11    history out of order, or ahead of ``metadata.revision``
OAP012   L2-A2     a delta operation outside ``/state``
OAP013   §7.3      a string shaped like a credential
OAP014   §2.2      a value RFC 8785 cannot represent (digest impossible)
OAP101   L1-I4     ``metadata.trust`` in the file (it is recomputed and ignored)
OAP102   L1-D4     ``metadata.name`` differs from the file name
OAP103   L2-S5     a ``${{ vars }}`` template inside state (never substituted)
OAP104   §3.4      tool policy fields that have no effect
OAP105   §3.4      a binding for a tool the profile does not grant
OAP106   L2-A8     a proposal declares a lower risk than rein computes
=======  ========  ==============================================================
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rein.core.frozen import Frozen, Record, field
from rein.errors import DocumentError, Finding, LoadError, Location, Severity
from rein.formats.loader import DEFAULT_LIMITS, LoadLimits
from rein.formats.oap.digest import profile_digest, spec_digest
from rein.formats.oap.document import OapDocument, load_oap
from rein.formats.oap.risk import RISKS, proposal_risk
from rein.formats.oap.schema import schema_errors
from rein.formats.shapes import mapping_of

KINDS = ("AgentProfile", "AgentStateDelta")
SUPPORTED_MINOR = 0

SECRET_SHAPES = (
    (re.compile(r"\bsk-(?:ant-)?[A-Za-z0-9_-]{16,}"), "an API key (sk-...)"),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), "a GitHub token"),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), "an AWS access key id"),
    (re.compile(r"\bxox[baprs]-[A-Za-z0-9-]{10,}"), "a Slack token"),
    (re.compile(r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----"), "a private key"),
    (re.compile(r"\bey[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"), "a JWT"),
)
ENV_REF = re.compile(r"\$\{[A-Z][A-Z0-9_]{0,63}\}\Z")
HEADER_REF = re.compile(r"(?:Bearer )?\$\{[A-Z][A-Z0-9_]{0,63}\}\Z")
VAR_REF = re.compile(r"\$\{\{\s*vars\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


class OapReport(Frozen):
    """What validating one file found. ``document`` is None when it could not be read."""

    path: str
    kind: str | None
    findings: tuple[Finding, ...]
    document: OapDocument | None = None
    digest: str | None = None
    spec_digest: str | None = None

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        """The shape of ``rein profile validate --json`` (one entry of ``documents``)."""
        return {
            "path": self.path, "kind": self.kind, "digest": self.digest,
            "spec_digest": self.spec_digest,
            "findings": [f.to_json() for f in self.findings],
        }


class _Out(Record):
    doc: OapDocument
    findings: list[Finding] = field(default_factory=list)

    def add(self, code: str, rule: str, message: str, pointer: str = "",
            severity: Severity = "error", hint: str | None = None) -> None:
        self.findings.append(Finding(code=code, severity=severity, message=f"{message} [{rule}]",
                                     location=self.doc.locate(pointer), hint=hint))


def validate_file(path: str | Path, *, limits: LoadLimits = DEFAULT_LIMITS) -> OapReport:
    """Load and validate one profile or delta file. Never raises for bad input."""
    try:
        doc = load_oap(path, limits=limits)
    except LoadError as exc:
        code, rule = ("OAP002", "L3-G1") if exc.kind == "double_instructions" else ("OAP001",
                                                                                    "L1-P1")
        message = exc.message if exc.message.endswith("]") else f"{exc.message} [{rule}]"
        finding = Finding(code=code, severity="error", message=message,
                          location=exc.location or Location(file=str(path)), hint=exc.hint)
        return OapReport(path=str(path), kind=None, findings=(finding,))
    return validate_document(doc)


def validate_document(doc: OapDocument) -> OapReport:
    """Every finding for a loaded document, plus its digests when it is a profile."""
    out = _Out(doc=doc)
    kind = _gates(doc.data, out)
    digest = spec = None
    if kind is not None:
        for error in schema_errors(kind, doc.data):
            where = error.pointer or "<root>"
            out.add("OAP006", "L1-P2", f"{where}: {error.message}", error.pointer,
                    hint=error.hint)
        _secrets(doc.data, out)
        if kind == "AgentProfile":
            _profile_rules(doc, out)
            try:
                digest, spec = profile_digest(doc.data), spec_digest(doc.data)
            except DocumentError as exc:
                out.add("OAP014", "§2.2", exc.message, hint=exc.hint)
        else:
            _delta_rules(doc.data, out)
    return OapReport(path=doc.source, kind=kind, findings=tuple(out.findings), document=doc,
                     digest=digest, spec_digest=spec)


# ---------------------------------------------------------------------------- gates


def _gates(data: dict[str, Any], out: _Out) -> str | None:
    version = data.get("oap")
    m = re.fullmatch(r"(\d+)\.(\d+)", version) if isinstance(version, str) else None
    if m is None:
        out.add("OAP003", "L1-P3", f"oap must be a version string like \"1.0\", got {version!r}",
                "/oap", hint='quote it: oap: "1.0" (unquoted 1.0 is a number)')
        return None
    major, minor = int(m.group(1)), int(m.group(2))
    if major != 1:
        out.add("OAP003", "L1-P3", f"OAP major version {major} is not supported "
                f"(oap: \"{version}\"; rein implements 1.0)", "/oap",
                hint="use a rein release that implements this major version")
        return None
    if minor > SUPPORTED_MINOR:
        out.add("OAP004", "L1-P4", f"OAP {version} is newer than 1.{SUPPORTED_MINOR}, the "
                "newest version rein implements; refusing rather than guessing", "/oap",
                hint="upgrade rein, or write the profile as oap: \"1.0\"")
        return None
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        out.add("OAP005", "L1-P5", f"kind {kind!r} is not an OAP 1.x kind "
                f"(expected {' or '.join(KINDS)})", "/kind")
        return None
    return kind


# ---------------------------------------------------------------------------- shared rules


def walk_strings(value: Any, pointer: str = "") -> Iterator[tuple[str, str]]:
    """Every string in a JSON value with its pointer."""
    if isinstance(value, str):
        yield pointer, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from walk_strings(v, f"{pointer}/{str(k).replace('~', '~0').replace('/', '~1')}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from walk_strings(v, f"{pointer}/{i}")


def secret_shape(text: str) -> str | None:
    """What credential ``text`` looks like, or None."""
    for pattern, label in SECRET_SHAPES:
        if pattern.search(text):
            return label
    return None


def _secrets(data: dict[str, Any], out: _Out) -> None:
    for pointer, text in walk_strings(data):
        label = secret_shape(text)
        if label:
            out.add("OAP013", "§7.3", f"{pointer}: the value looks like {label}", pointer,
                    hint="never put credentials in a profile: reference ${VARIABLE}s from the "
                         "environment")


def path_problem(raw: str) -> str | None:
    """Why a workspace-relative path is refused (lexically), or None if it is acceptable."""
    text = raw.replace("\\", "/")
    if text.startswith("/") or re.match(r"[A-Za-z]:", text):  # also covers UNC "//"
        return "is absolute"
    if text.startswith("~"):
        return "starts with ~ (a home directory)"
    if _SCHEME.match(text) and not re.match(r"[A-Za-z]:", text):
        return "is a URI, not a workspace path"
    if re.search(r"%[0-9A-Fa-f]{2}", text):
        return "contains percent-encoding"
    depth = 0
    for part in text.split("/"):
        if part in ("", "."):
            continue
        depth += -1 if part == ".." else 1
        if depth < 0:
            return "resolves outside the workspace"
    return None


def profile_paths(data: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """``(pointer, path)`` of every workspace path a profile names (T6)."""
    spec = mapping_of(data.get("spec"))
    context = mapping_of(spec.get("context"))
    for i, entry in enumerate(context.get("files") or []):
        if isinstance(entry, dict) and isinstance(entry.get("path"), str):
            yield f"/spec/context/files/{i}/path", entry["path"]
    if isinstance(context.get("working_directory"), str):
        yield "/spec/context/working_directory", context["working_directory"]
    perms = mapping_of(spec.get("permissions"))
    fs = mapping_of(perms.get("filesystem"))
    for key in ("read_roots", "write_roots", "deny_paths"):
        for i, p in enumerate(fs.get(key) or []):
            if isinstance(p, str):
                yield f"/spec/permissions/filesystem/{key}/{i}", p


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


# ---------------------------------------------------------------------------- profiles


def _profile_rules(doc: OapDocument, out: _Out) -> None:
    data = doc.data
    for i, server in enumerate(_get(data, "spec", "tools", "mcp_servers") or []):
        if not isinstance(server, dict):
            continue
        for field_name, pattern, shape in (("env", ENV_REF, "${VARIABLE}"),
                                           ("headers", HEADER_REF, "${VARIABLE} or Bearer ${VARIABLE}")):
            for key, value in (server.get(field_name) or {}).items():
                if not (isinstance(value, str) and pattern.match(value)):
                    pointer = f"/spec/tools/mcp_servers/{i}/{field_name}/{key}"
                    out.add("OAP007", "L1-I6", f"{pointer}: MCP {field_name} values must be "
                            f"{shape} references, never literals", pointer,
                            hint=f"write {key}: ${{{key}}} and set {key} in the environment")
    for pointer, p in profile_paths(data):
        problem = path_problem(p)
        if problem:
            out.add("OAP008", "L1-I5", f"{pointer}: {p!r} {problem}", pointer,
                    hint="paths are relative to the workspace and must stay inside it")
    variables = _get(data, "spec", "context", "variables") or {}
    role = _get(data, "spec", "role") or {}
    if not data.get("extends"):  # a base may define the variable: checked after the merge
        for pointer, text in _role_texts(role):
            for name in VAR_REF.findall(text):
                if name not in variables:
                    out.add("OAP009", "§3.6", f"{pointer}: ${{{{ vars.{name} }}}} is not defined "
                            "in spec.context.variables", pointer)
    for pointer, text in walk_strings(data.get("state"), "/state"):
        if VAR_REF.search(text):
            out.add("OAP103", "L2-S5", f"{pointer}: a ${{{{ vars }}}} template in state is never "
                    "substituted", pointer, severity="warning")
    _state_ids(data, out)
    _history(data, out)
    _hygiene(doc, out)
    _tool_policy(data, out)


def _role_texts(role: dict[str, Any]) -> Iterator[tuple[str, str]]:
    if isinstance(role.get("instructions"), str):
        yield "/spec/role/instructions", role["instructions"]
    for key in ("objectives", "constraints"):
        for i, text in enumerate(role.get(key) or []):
            if isinstance(text, str):
                yield f"/spec/role/{key}/{i}", text


def _state_ids(data: dict[str, Any], out: _Out) -> None:
    for collection in ("facts", "preferences", "open_threads"):
        seen: set[object] = set()  # ids as written: the schema judges their type
        for i, entry in enumerate(_get(data, "state", collection) or []):
            entry_id = entry.get("id") if isinstance(entry, dict) else None
            if entry_id is None:
                continue  # a missing id is the schema's finding, not a duplicate of None
            if entry_id in seen:
                pointer = f"/state/{collection}/{i}/id"
                out.add("OAP010", "§A.4", f"{pointer}: duplicate id {entry_id!r}", pointer)
            seen.add(entry_id)


def _history(data: dict[str, Any], out: _Out) -> None:
    history = [h for h in data.get("history") or [] if isinstance(h, dict)]
    revisions = [r for h in history if isinstance(r := h.get("revision"), int)]
    if revisions != sorted(revisions):
        out.add("OAP011", "L2-A11", "history entries must be ordered oldest first", "/history")
    current = _get(data, "metadata", "revision")
    current = current if isinstance(current, int) else 1
    if revisions and max(revisions) > current:
        out.add("OAP011", "L2-A11", f"history records revision {max(revisions)} but "
                f"metadata.revision is {current}", "/metadata/revision")


def _hygiene(doc: OapDocument, out: _Out) -> None:
    meta = mapping_of(doc.data.get("metadata"))
    if "trust" in meta:
        out.add("OAP101", "L1-I4", "metadata.trust is ignored: trust comes from where the "
                "profile is found", "/metadata/trust", severity="warning")
    name, stem = meta.get("name"), Path(doc.source).name.split(".")[0]
    if isinstance(name, str) and doc.source != "<input>" and stem != name:
        out.add("OAP102", "L1-D4", f"metadata.name {name!r} differs from the file name "
                f"{stem!r}; the name wins", "/metadata/name", severity="warning")


def _tool_policy(data: dict[str, Any], out: _Out) -> None:
    tools = _get(data, "spec", "tools")
    if not isinstance(tools, dict):
        return
    policy = tools.get("policy", "allowlist")
    if policy == "inherit" and (tools.get("allow") or tools.get("deny")):
        out.add("OAP104", "§3.4", "tools.allow and tools.deny have no effect under "
                "policy: inherit", "/spec/tools/policy", severity="warning")
    if policy == "allowlist" and not tools.get("allow") and (
            tools.get("bindings") or tools.get("mcp_servers")):
        out.add("OAP104", "§3.4", "policy: allowlist with no allow list grants no tools",
                "/spec/tools", severity="warning")
    from rein.formats.globs import match_any

    allow = [a for a in tools.get("allow") or [] if isinstance(a, str)]
    for i, binding in enumerate(tools.get("bindings") or []):
        name = binding.get("name") if isinstance(binding, dict) else None
        if policy == "allowlist" and isinstance(name, str) and not match_any(allow, name):
            out.add("OAP105", "§3.4", f"binding for {name!r}, which the profile does not allow, "
                    "has no effect", f"/spec/tools/bindings/{i}", severity="warning")


# ---------------------------------------------------------------------------- deltas


def _delta_rules(data: dict[str, Any], out: _Out) -> None:
    for i, op in enumerate(data.get("operations") or []):
        path = op.get("path") if isinstance(op, dict) else None
        if isinstance(path, str) and not (path == "/state" or path.startswith("/state/")):
            out.add("OAP012", "L2-A2", f"/operations/{i}/path: {path!r} is outside /state; "
                    "changes to metadata or spec go in proposals", f"/operations/{i}/path")
    for i, proposal in enumerate(data.get("proposals") or []):
        if not isinstance(proposal, dict) or not isinstance(proposal.get("path"), str):
            continue
        computed, declared = proposal_risk(proposal["path"]), proposal.get("risk")
        if declared not in RISKS or RISKS.index(declared) < RISKS.index(computed):
            out.add("OAP106", "L2-A8", f"/proposals/{i}: declared risk {declared!r}, rein "
                    f"classes it {computed!r} (rein's value is the one used)",
                    f"/proposals/{i}/risk", severity="warning")
