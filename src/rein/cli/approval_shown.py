"""What a person reads to decide an approval is the content the approval binds.

An approval binds the files it shows by content digest, and keeps a copy of each text file
(``contents`` of its request, :func:`rein.engine.service.kept_copy`). A person who
reads the file itself, as it is when they look, may read other content than the answer
binds: whoever can write the workspace can change the file while they read and put the
bound content back before they answer. So:

* ``rein approvals show ID`` draws a graph file the approval shows from its copy (the plan
  as ``rein graph plan`` draws it), and says of each file whether it still holds that
  content (:func:`file_lines`); ``--file NAME`` prints the copy itself (:func:`copy_of`);
* ``rein graph plan FILE`` names each pending approval that binds the file it drew, and
  warns (APPROVAL008) when that approval binds other content than the bytes it drew
  (:func:`bindings`, :func:`binding_text`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rein.core.frozen import Frozen
from rein.errors import ReinError

GRAPH_SUFFIXES = (".agraph.yaml", ".agraph.yml", ".agraph.json")
WARNING = "APPROVAL008"
NO_COPY = "APPROVAL009"


def is_graph_file(name: str) -> bool:
    return name.lower().endswith(GRAPH_SUFFIXES)


# -- `rein approvals show` -----------------------------------------------------------------

def file_views(row: Any, workspace: Path, *, key_variables: tuple[str, ...] = ()
               ) -> list[dict[str, Any]]:
    """Each file the approval shows: its bound digest, its digest now (None: gone or
    unreadable), whether it changed, the state of the copy kept (``intact``, ``none``,
    ``altered``), the copy's text when intact and, for a graph file, the plan drawn from
    that copy."""
    from rein.engine.service import kept_copy, shown_files

    files = row.request.get("files")
    if not isinstance(files, Mapping):
        return []
    now = shown_files(workspace, list(files))
    out = []
    for name, digest in files.items():
        state, text = kept_copy(row, str(name))
        view: dict[str, Any] = {"file": str(name), "digest": digest,
                                "now": now.get(str(name)),
                                "changed": now.get(str(name)) != digest, "copy": state}
        if text is not None:
            view["text"] = text
            if is_graph_file(str(name)):
                view["plan"] = _plan_of(workspace, str(name), text, key_variables)
        out.append(view)
    return out


def file_lines(views: Iterable[Mapping[str, Any]], *, pending: bool = True) -> list[str]:
    """The ``files`` lines of ``rein approvals show``: each file, its bound digest, and
    whether it still holds that content."""
    views = list(views)
    if not views:
        return []
    out = [("files    (bound by content: an accept approves exactly this content, and is "
           "refused while a file differs)")]
    width = max(len(str(v["file"])) for v in views)
    for v in views:
        if not v["changed"]:
            state = "unchanged since it was presented"
        elif not pending:
            state = f"changed since (now {v['now'] or 'gone'})"
        elif v["now"] is None:
            state = "GONE since it was presented: an accept is refused (APPROVAL_STALE)"
        else:
            state = (f"CHANGED since it was presented (now {v['now']}): what the file holds "
                     "is not what an accept approves, and an accept is refused while it "
                     "differs (APPROVAL_STALE)")
        out.append(f"         {v['file']!s:<{width}}  {v['digest']}  {state}")
    return out


def shown_blocks(approval_id: str, views: Iterable[Mapping[str, Any]]) -> list[str]:
    """What the person reads to decide, from the approval's copies: each graph file's plan;
    where to read the other files as presented; a copy that is not the bound content."""
    out: list[str] = []
    for v in views:
        name = v["file"]
        if v["copy"] == "altered":
            out += ["", (f"warning {NO_COPY}: the copy of {name} this approval keeps is not "
                        f"the content it binds ({v['digest']}): it was edited in the run "
                        "store, or a secret's value was redacted from it; compare the "
                        "file's digest with the one above before you answer")]
        elif v["copy"] == "none":
            continue  # a directory, a large or binary file: bound by its digest above
        elif "plan" in v:
            plan = v["plan"]
            out += ["", (f"{name} as it was presented ({v['digest']}), the plan an accept "
                        "approves:"), ""]
            out += plan["text"].rstrip("\n").split("\n") if "text" in plan else \
                [f"  (not a valid graph: {e})" for e in plan.get("errors", [])]
        else:
            out += ["", (f"{name} as it was presented ({v['digest']}): `rein approvals show "
                        f"{approval_id} --file {name}` prints it")]
    return out


def copy_of(row: Any, name: str) -> str:
    """The text the approval keeps of the file ``name``, when it is the content bound;
    APPROVAL009 otherwise."""
    from rein.engine.service import kept_copy

    files = row.request.get("files")
    if not isinstance(files, Mapping) or name not in files:
        shows = ", ".join(map(str, files)) if isinstance(files, Mapping) and files else None
        raise ReinError(f"approval {row.approval_id} does not show a file {name!r}",
                        code=NO_COPY, hint=f"it shows {shows}" if shows else
                        "it shows no file: `rein approvals show ID` prints what it shows")
    state, text = kept_copy(row, name)
    if text is None:
        why = ("it keeps no copy of it (a directory, a file larger than the copies kept or "
               "not text, or asked before copies were kept)" if state == "none" else
               "its copy is not the content it binds (edited in the run store, or a "
               "secret's value redacted from it)")
        raise ReinError(f"approval {row.approval_id} binds {name} as {files[name]}, and "
                        f"{why}", code=NO_COPY,
                        hint=f"compare the digest of the file (`sha256sum {name}`) with "
                             f"{files[name]} before you answer")
    return text


def _plan_of(workspace: Path, name: str, text: str,
             key_variables: tuple[str, ...]) -> dict[str, Any]:
    """The plan drawn from the copy (``text``, ``digest``, ``plan``), or its ``errors``."""
    from rein.formats.ags import validate_path
    from rein.formats.ags.plan import build_plan
    from rein.formats.ags.render import render_text

    # Named as the workspace file, so that a child document it names is read beside it.
    report = validate_path(workspace / name, raw=text.encode("utf-8"))
    if report.errors or report.document is None:
        return {"errors": [f.message for f in report.errors]}
    result = build_plan(report.document.data, source=name, digest=report.digest,
                        key_variables=key_variables)
    return {"digest": report.digest, "text": render_text(result), "plan": result.to_json()}


def turn_plan(harness: Any, row: Any) -> Mapping[str, Any] | None:
    """A graph turn's question: the plan its turn recorded when it asked (drawn from the
    graph whose digest it asks about), None when that record is not the digest's."""
    thread, turn = row.request.get("thread"), row.request.get("turn")
    try:
        turns = harness.store.thread_turns(str(thread))
    except ReinError:
        return None
    for t in turns:
        plan = t.input.get("plan") if t.turn_id == turn else None
        if isinstance(plan, Mapping) and plan.get("digest") == row.digest and \
                isinstance(plan.get("plan"), str):
            return plan
    return None


# -- `rein graph plan` ---------------------------------------------------------------------

class Binding(Frozen):
    """A pending approval that binds the graph file ``rein graph plan`` drew."""

    approval_id: str
    what: str  # "content": a file it shows (sha256: of its bytes); "graph": a turn's digest
    binds: str  # the digest the approval binds
    drawn: str  # the same digest of what was drawn

    @property
    def same(self) -> bool:
        return self.binds == self.drawn

    def to_json(self) -> dict[str, Any]:
        return {"approval_id": self.approval_id, "binds": self.what, "digest": self.binds,
                "drawn": self.drawn, "same": self.same,
                **({} if self.same else {"code": WARNING})}


def bindings(rows: Iterable[Any], workspace: Path, path: Path, *, content: str,
             graph: str | None) -> list[Binding]:
    """The pending approvals among ``rows`` that bind the file at ``path``: a gate (or
    checkpoint, criterion…) that shows it, bound to ``content`` (``sha256:`` of the bytes
    drawn), or a graph turn's question about it, bound to ``graph`` (its graph digest)."""
    target = path.resolve()
    root = workspace.resolve()
    out = []
    for row in rows:
        files = row.request.get("files")
        for name, digest in (files.items() if isinstance(files, Mapping) else ()):
            if _same_path(root / str(name), target):
                out.append(Binding(approval_id=row.approval_id, what="content",
                                   binds=str(digest), drawn=content))
        asked = row.request.get("graph") if row.kind.value == "graph" else None
        if isinstance(asked, str) and _same_path(Path(asked), target):
            out.append(Binding(approval_id=row.approval_id, what="graph",
                               binds=str(row.digest), drawn=str(graph)))
    return out


def binding_text(binding: Binding, path: str) -> str:
    """What ``rein graph plan`` says (on stderr) of one approval that binds the file."""
    kind = "content" if binding.what == "content" else "graph digest"
    if binding.same:
        return (f"approval {binding.approval_id} asks you to accept exactly what is drawn "
                f"here ({kind} {binding.drawn}); an accept is refused if {path} changes "
                "before it")
    return (f"{path}: warning {WARNING}: this is not what approval {binding.approval_id} "
            f"asks you to accept: its {kind} is {binding.binds}, and the file drawn here is "
            f"{binding.drawn}\n    hint: read what it asks you to accept with `rein "
            f"approvals show {binding.approval_id}`, and decide on that")


def _same_path(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b
    except (OSError, ValueError):
        return False


__all__ = ["GRAPH_SUFFIXES", "NO_COPY", "WARNING", "Binding", "binding_text", "bindings",
           "copy_of", "file_lines", "file_views", "is_graph_file", "shown_blocks",
           "turn_plan"]
