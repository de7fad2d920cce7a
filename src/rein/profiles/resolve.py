"""Resolving a profile (OAP §5.2): from a name or a file to a :class:`ResolvedProfile`.

Steps, all free of side effects (no installs, no network, no file created, L1-I11):

1. find the file (a path, or a name through :mod:`rein.profiles.discovery`), parse, validate;
2. apply ``extends`` (bases found by name, revision and spec-digest pins verified, cycles and
   depth > 8 refused);
3. assign trust from the discovery root, discarding the file's value;
4. substitute ``${{ vars.KEY }}`` in instructions, objectives and constraints (never state);
5. check MCP ``${VAR}`` references against the environment (a server whose variable is unset
   is dropped and recorded; values are never read into the profile);
6. check skills (found or missing, digest verified), hooks (registered in ``rein.toml``) and
   memory stores; a required one that is unavailable fails resolution;
7. reject workspace paths that escape after resolving symlinks.

Everything dropped, narrowed or substituted is an :class:`Adjustment`.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.config import Config
from rein.core.frozen import Frozen, Record, field
from rein.errors import Finding, Location
from rein.formats.canonical import oap_digest
from rein.formats.oap.digest import profile_digest, spec_digest
from rein.formats.oap.document import PROFILE_SUFFIXES, OapDocument
from rein.formats.oap.validate import VAR_REF, profile_paths, validate_file
from rein.profiles import context_files
from rein.profiles.context_files import ContextFile
from rein.profiles.discovery import Catalog, Trust, discover, discovery_roots, trust_for
from rein.profiles.memory import store_problem
from rein.profiles.merge import merge_chain
from rein.profiles.records import Adjustment, ProfileError

MAX_EXTENDS_DEPTH = 8


class HookBinding(Frozen):
    """A lifecycle hook the profile names, bound to the command ``rein.toml`` registers."""

    event: str  # on_start | on_end
    name: str
    required: bool
    params: Mapping[str, str]
    command: tuple[str, ...]


class ResolvedProfile(Frozen):
    """A profile after resolution: merged, trusted by root, substituted, checked.

    ``data`` is the resolved document; ``digest`` and ``spec_digest`` are those of the file
    as loaded (what deltas and pins refer to). Immutable for the session (L1-I10).
    """

    name: str
    revision: int
    digest: str
    spec_digest: str
    trust: Trust
    source: str
    encoding: str
    data: Mapping[str, Any]
    adjustments: tuple[Adjustment, ...] = ()
    warnings: tuple[str, ...] = ()
    extends: tuple[str, ...] = ()  # "base-reviewer@4", in merge order
    hooks: tuple[HookBinding, ...] = ()
    skills: tuple[Mapping[str, Any], ...] = ()
    mcp_servers: tuple[Mapping[str, Any], ...] = ()
    dropped_mcp_servers: tuple[str, ...] = ()
    memory_stores: tuple[Mapping[str, Any], ...] = ()
    context_files: tuple[ContextFile, ...] = ()  # spec.context.files, ``always`` ones read

    @property
    def spec(self) -> Mapping[str, Any]:
        return self.data.get("spec") or {}

    @property
    def state(self) -> Mapping[str, Any]:
        return self.data.get("state") or {}

    def section(self, *keys: str) -> Any:
        """``spec`` sub-section by keys, or {} when absent."""
        value: Any = self.spec
        for key in keys:
            value = value.get(key) if isinstance(value, Mapping) else None
        return value if value is not None else {}

    def record(self) -> dict[str, Any]:
        """What a run records about the profile (L1-I8, L1-I9)."""
        return {"name": self.name, "revision": self.revision, "spec_digest": self.spec_digest,
                "digest": self.digest, "trust": self.trust, "source": self.source,
                "extends": list(self.extends),
                "adjustments": [a.to_json() for a in self.adjustments]}


class _Work(Record):
    workspace: Path
    config: Config
    env: Mapping[str, str]
    catalog: Catalog | None = None
    findings: list[Finding] = field(default_factory=list)
    adjustments: list[Adjustment] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def fail(self, code: str, message: str, location: Location | None = None,
             hint: str | None = None) -> None:
        self.findings.append(Finding(code=code, severity="error", message=message,
                                     location=location or Location(), hint=hint))

    def get_catalog(self) -> Catalog:
        if self.catalog is None:
            self.catalog = discover(self.workspace, self.config, self.env)
        return self.catalog


def resolve_profile(path_or_name: str | Path, *, workspace: Path, config: Config,
                    env: Mapping[str, str] | None = None,
                    catalog: Catalog | None = None) -> ResolvedProfile:
    """Resolve a profile by file path or by ``metadata.name``. Raises :class:`ProfileError`."""
    work = _Work(workspace=Path(workspace).resolve(), config=config,
                 env=os.environ if env is None else env, catalog=catalog)
    path = _locate(path_or_name, work)
    doc = _load_valid(path, work)
    data, chain = _apply_extends(doc, work, seen=(), depth=0)
    trust = trust_for(path, work.workspace, discovery_roots(work.workspace, config, work.env))
    metadata = data.setdefault("metadata", {})
    if "trust" in doc.data.get("metadata", {}) and metadata.get("trust") != trust:
        work.adjustments.append(Adjustment(field="/metadata/trust",
                                           requested=metadata.get("trust"), granted=trust,
                                           reason="trust comes from the discovery root"))
    metadata["trust"] = trust
    _substitute(data, doc, work)
    servers, dropped = _mcp_servers(data, work)
    skills = _skills(data, path, work)
    hooks = _hooks(data, doc, work)
    stores = _memory(data, work)
    _real_paths(data, doc, work)
    files = () if work.findings else context_files.load(data, work.workspace)
    work.warnings.extend(f.warning for f in files if f.warning is not None)
    if work.findings:
        first = work.findings[0]
        raise ProfileError(f"profile {metadata.get('name')!r} cannot be instantiated: "
                           f"{first.message}", code=first.code, location=first.location,
                           hint=first.hint, findings=tuple(work.findings))
    revision = metadata.get("revision", 1)
    return ResolvedProfile(
        name=metadata["name"], revision=revision, digest=profile_digest(doc.data),
        spec_digest=spec_digest(doc.data), trust=trust, source=str(path),
        encoding=doc.encoding, data=data, adjustments=tuple(work.adjustments),
        warnings=tuple(work.warnings), extends=tuple(chain), hooks=tuple(hooks),
        skills=tuple(skills), mcp_servers=tuple(servers), dropped_mcp_servers=tuple(dropped),
        memory_stores=tuple(stores), context_files=files)


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
        return True
    except ValueError:
        return False


def _locate(path_or_name: str | Path, work: _Work) -> Path:
    text = str(path_or_name)
    candidate = Path(text)
    looks_like_path = "/" in text or text.lower().endswith(PROFILE_SUFFIXES)
    if looks_like_path or candidate.exists():
        if not candidate.is_absolute() and not candidate.exists():
            candidate = work.workspace / candidate
        return candidate
    catalog = work.get_catalog()
    if text in catalog.duplicates:
        raise ProfileError(f"profile {text!r} is defined twice in one discovery root [L1-D2]",
                           code="OAP201", hint="; ".join(catalog.errors))
    found = catalog.find(text)
    if found is None:
        from rein.core.suggest import with_suggestion

        searched = ", ".join(str(r.path) for r in catalog.roots)
        raise ProfileError(f"no profile named {text!r}", code="OAP202",
                           hint=with_suggestion(f"searched {searched}", text, catalog.winners))
    work.warnings.extend(r for r in catalog.reports if r.startswith(repr(text)))
    return found.path


def _load_valid(path: Path, work: _Work) -> OapDocument:
    report = validate_file(path, limits=work.config.limits)
    errors = tuple(f for f in report.findings if f.severity == "error")
    if errors or report.document is None:
        first = errors[0]
        raise ProfileError(f"{path} is not a valid profile: {first.message}", code=first.code,
                           location=first.location, hint=first.hint, findings=report.findings)
    if report.kind != "AgentProfile":
        raise ProfileError(f"{path} is a {report.kind}, not an AgentProfile", code="OAP203",
                           location=Location(file=str(path)))
    work.warnings.extend(f.message for f in report.findings)
    return report.document


def _apply_extends(doc: OapDocument, work: _Work, *, seen: tuple[str, ...],
                   depth: int) -> tuple[dict[str, Any], list[str]]:
    name = doc.data["metadata"]["name"]
    if name in seen:
        raise ProfileError(f"extends cycle: {' → '.join((*seen, name))} [L3-E1]", code="OAP210")
    if depth > MAX_EXTENDS_DEPTH:
        raise ProfileError(f"extends is nested deeper than {MAX_EXTENDS_DEPTH} [L3-E1]",
                           code="OAP211")
    bases: list[dict[str, Any]] = []
    chain: list[str] = []
    for i, ref in enumerate(doc.data.get("extends") or []):
        where = doc.locate(f"/extends/{i}")
        base_path = _base_path(ref, doc, work, where)
        base_doc = _load_valid(base_path, work)
        base_meta = base_doc.data["metadata"]
        if "revision" in ref and base_meta.get("revision", 1) != ref["revision"]:
            raise ProfileError(f"extends {ref['name']!r} pins revision {ref['revision']} but "
                               f"{base_path} is at revision {base_meta.get('revision', 1)} "
                               "[L3-G2]", code="OAP212", location=where)
        if "digest" in ref and spec_digest(base_doc.data) != ref["digest"]:
            raise ProfileError(f"extends {ref['name']!r} pins spec digest {ref['digest']} but "
                               f"{base_path} has {spec_digest(base_doc.data)} [L3-G2]",
                               code="OAP213", location=where)
        base_data, base_chain = _apply_extends(base_doc, work, seen=(*seen, name),
                                               depth=depth + 1)
        bases.append(base_data)
        chain.extend(base_chain)
        chain.append(f"{ref['name']}@{base_meta.get('revision', 1)}")
    if not bases:
        return _copy(doc.data), chain
    return merge_chain(bases, doc.data), chain


def _copy(data: dict[str, Any]) -> dict[str, Any]:
    import copy

    return copy.deepcopy(data)


def _base_path(ref: Mapping[str, Any], doc: OapDocument, work: _Work, where: Location) -> Path:
    uri = ref.get("uri")
    if uri:
        if ":" in uri.split("/")[0]:
            raise ProfileError(f"extends {ref['name']!r}: only local paths are accepted, not "
                               f"{uri!r}", code="OAP214", location=where,
                               hint="copy the base into a discovery root and pin its digest")
        return Path(doc.source).parent.joinpath(uri)
    found = work.get_catalog().find(ref["name"])
    if found is None:
        # A base next to the child is found too: examples keep bases side by side.
        for suffix in PROFILE_SUFFIXES:
            sibling = Path(doc.source).parent / f"{ref['name']}{suffix}"
            if sibling.is_file():
                return sibling
        raise ProfileError(f"extends {ref['name']!r}: no such profile in any discovery root",
                           code="OAP215", location=where)
    return found.path


def _substitute(data: dict[str, Any], doc: OapDocument, work: _Work) -> None:
    spec = data.get("spec") or {}
    # The schema holds variables to strings, and documents are validated before they resolve.
    variables: Mapping[str, str] = (spec.get("context") or {}).get("variables") or {}
    role = spec.get("role") or {}

    def sub(text: str, pointer: str) -> str:
        def one(m: re.Match[str]) -> str:
            key = m.group(1)
            if key not in variables:
                work.fail("OAP009", f"{pointer}: ${{{{ vars.{key} }}}} is not defined in "
                          "spec.context.variables [§3.6]", doc.locate(pointer))
                return m.group(0)
            return variables[key]

        out = VAR_REF.sub(one, text)
        if out != text:
            work.adjustments.append(Adjustment(field=pointer, requested=text, granted=out,
                                               reason="${{ vars }} substituted"))
        return out

    if isinstance(role.get("instructions"), str):
        role["instructions"] = sub(role["instructions"], "/spec/role/instructions")
    for key in ("objectives", "constraints"):
        if isinstance(role.get(key), list):
            role[key] = [sub(t, f"/spec/role/{key}/{i}") for i, t in enumerate(role[key])]


def _env_name(ref: str) -> str:
    return ref.removeprefix("Bearer ").removeprefix("${").removesuffix("}")


def _mcp_servers(data: dict[str, Any], work: _Work) -> tuple[list[Any], list[str]]:
    kept, dropped = [], []
    for i, server in enumerate(((data.get("spec") or {}).get("tools") or {})
                               .get("mcp_servers") or []):
        refs = [*(server.get("env") or {}).values(), *(server.get("headers") or {}).values()]
        missing = [n for n in map(_env_name, refs)
                   if n not in work.env and f"REIN_SECRET_{n}" not in work.env]
        if missing:
            dropped.append(server["name"])
            work.adjustments.append(Adjustment(
                field=f"/spec/tools/mcp_servers/{i}", requested=server["name"], granted=None,
                reason=f"environment variable(s) {', '.join(missing)} not set; server dropped"))
        else:
            kept.append(server)
    return kept, dropped


def skill_digest(directory: Path) -> str:
    """rein's digest of a skill directory (OAP defines none, J-7): ``sha256:`` over the
    canonical JSON of ``{relative path: sha256 hex of the file}`` for every file in it."""
    files = {str(p.relative_to(directory).as_posix()): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(directory.rglob("*")) if p.is_file()}
    return oap_digest(files)


def _skills(data: dict[str, Any], path: Path, work: _Work) -> list[Any]:
    kept = []
    home = Path(work.env.get("HOME") or Path.home())
    for i, skill in enumerate(((data.get("spec") or {}).get("tools") or {}).get("skills") or []):
        name, source = skill["name"], skill.get("source")
        places = [work.workspace / source, path.parent / source] if source else []
        places += [work.workspace / ".agents" / "skills" / name,
                   work.workspace / ".rein" / "skills" / name, home / ".agentprofiles" / "skills"
                   / name]
        found = next((p for p in places if p.is_dir()), None)
        problem = None
        if found is None:
            problem = "not found (rein never installs skills while loading a profile)"
        elif skill.get("digest") and skill_digest(found) != skill["digest"]:
            problem = f"digest mismatch: pinned {skill['digest']}, found {skill_digest(found)}"
        if problem and skill.get("required"):
            work.fail("OAP220", f"required skill {name!r}: {problem} [L1-I7]",
                      hint="install the skill where rein looks for it, or fix the pin")
        elif problem:
            work.adjustments.append(Adjustment(field=f"/spec/tools/skills/{i}", requested=name,
                                               granted=None, reason=f"skill {problem}; dropped"))
        else:
            kept.append({**skill, "path": str(found)})
    return kept


def _hooks(data: dict[str, Any], doc: OapDocument, work: _Work) -> list[HookBinding]:
    registered = work.config.hooks
    out = []
    lifecycle = (data.get("spec") or {}).get("lifecycle") or {}
    for event in ("on_start", "on_end"):
        for i, ref in enumerate(lifecycle.get(event) or []):
            name, required = ref["hook"], bool(ref.get("required"))
            pointer = f"/spec/lifecycle/{event}/{i}/hook"
            if name not in registered:
                untrusted = _untrusted_hook(work.config, name)
                if required:
                    work.fail("OAP221", f"required hook {name!r} is not registered in rein.toml "
                              "[§3.8]" + (f"; {untrusted}" if untrusted else ""),
                              doc.locate(pointer),
                              hint=f"review and trust it: rein config trust --workspace "
                                   f"{work.workspace}" if untrusted else
                                   f'add [hooks.{name}] with command = ["..."] to rein.toml')
                else:
                    work.adjustments.append(Adjustment(
                        field=pointer, requested=name, granted=None,
                        reason=f"hook {untrusted or 'not registered'}; skipped"))
                continue
            out.append(HookBinding(event=event, name=name, required=required,
                                   params=dict(ref.get("with") or {}),
                                   command=registered[name].command))
    return out


def _untrusted_hook(config: Config, name: str) -> str | None:
    """Why a hook the project rein.toml defines is not registered, if that is the reason."""
    trust = config.project_trust
    if trust is None or trust.honoured or f"hooks.{name}" not in {i.key for i in trust.items}:
        return None
    return f"defined in {trust.path}, which is {trust.state.value}"


def _memory(data: dict[str, Any], work: _Work) -> list[Any]:
    kept = []
    for i, store in enumerate(((data.get("spec") or {}).get("memory") or {})
                              .get("stores") or []):
        problem = store_problem(store, work.workspace, work.env)
        if problem and store.get("required"):
            work.fail("OAP222", f"required memory store {store['name']!r}: {problem} [L1-I7]")
        elif problem:
            work.adjustments.append(Adjustment(field=f"/spec/memory/stores/{i}",
                                               requested=store["name"], granted=None,
                                               reason=f"{problem}; dropped"))
        else:
            kept.append(store)
    return kept


def _real_paths(data: dict[str, Any], doc: OapDocument, work: _Work) -> None:
    """Symlinks resolved, then containment (T6): a lexically clean path can still escape."""
    for pointer, raw in profile_paths(data):
        real = (work.workspace / raw).resolve()
        if real != work.workspace and not _inside(real, work.workspace):
            work.fail("OAP008", f"{pointer}: {raw!r} resolves to {real}, outside the workspace "
                      "[L1-I5]", doc.locate(pointer),
                      hint="remove the symlink or the path; profiles stay inside the workspace")
