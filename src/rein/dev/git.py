"""Git as the development flow uses it: read the work tree, commit a feature, run nothing.

A feature node may write anywhere in the repository, ``.git/config`` included, so rein's
git calls must not run anything that configuration names: clean and smudge filters, hooks
(files or ``hook.*`` entries), fsmonitor, diff, textconv and merge drivers, pagers, editors,
signing programs, credential helpers, ssh commands, automatic gc. Porcelain commands
(``add``, ``status``, ``commit``) run some of these whatever ``-c`` says, so rein uses none:

* the work tree is read by rein itself (:meth:`Repo.snapshot`): each file's bytes, its
  executable bit, a symlink's target; blob ids are computed here, and the blobs git does not
  have yet are written with ``hash-object --no-filters``, whose ids must be the ones rein
  computed (an object is named by its content, so the blob committed holds exactly the
  bytes rein read);
* trees are built in a throwaway index (``update-index --index-info``, ``write-tree``), the
  commit with ``commit-tree --no-gpg-sign`` and ``update-ref``, and the repository's index
  is set to the new tree with ``read-tree``: plumbing that converts nothing and runs no hook
  except ``reference-transaction``, which ``core.hooksPath=/dev/null`` and ``hook.<name>.
  enabled=false`` turn off.

Every call also gets ``--no-pager``, the work tree named explicitly (``core.worktree`` is
not followed), no system or global configuration, no lazy fetch, no replace refs, no
transport (``protocol.allow=never``), and an environment of ``PATH``, ``HOME``, ``TZ`` and
git's own switches only: no ``REIN_SECRET_*`` reaches git or anything it might start.

A lock file another git left behind (``index.lock``, a ref's ``.lock``) is removed only when
its writer is gone (:mod:`rein.dev.locks`); rein's own calls take rein's lock of the
repository first, so one rein never takes a lock from another.

**Commits an agent's sandbox keeps out of ``.git``.** rein's checks run in the process that
submits, inside the agent's sandbox, and the Codex CLI's default sandbox keeps ``.git``
read-only. There rein still builds each feature's commit, with its objects in
``.rein/dev/git/objects`` (git reading the repository's own objects beside them) and the
branch it would be on in ``.rein/dev/git/HEAD``, the next feature's commit on top of it
(:attr:`Repo.deferred`). The first ``rein dev`` that may write ``.git`` (outside the
sandbox) writes them in (:meth:`Repo.land`): each object checked against its name, each
commit one of this flow's that its handoff recorded in the run store by its full id (the
agent may write ``.rein/dev/git`` too), the branch moved only from where it was when the
first commit was kept back, the index set to the new tree.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import stat
import subprocess
import tempfile
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path

from rein.core.frozen import Frozen, field
from rein.dev import locks

PENDING = ".rein/dev/git"  # commits kept out of a read-only .git: objects/, HEAD
# Paths of the repository that are not the driver's work: rein's state, the briefs, and the
# file rein appends to itself. A feature whose change is only these is an empty change.
NOT_WORK = (".rein", "specs", "progress.txt")


def not_work(target: str) -> tuple[str, ...]:
    """:data:`NOT_WORK` for a flow building in ``target``, whose progress.txt rein appends
    to there."""
    place = target.strip("/").removeprefix("./")
    return NOT_WORK if place in ("", ".") else (*NOT_WORK, f"{place}/progress.txt")
RUN_SECONDS = 60.0  # one git call; a hung one is rein's own failure
_KEEP_ENV = ("PATH", "HOME", "XDG_CONFIG_HOME", "TZ", "SYSTEMROOT")
_CONFIG = ("core.hooksPath=" + os.devnull, "core.fsmonitor=false", "core.untrackedCache=false",
           "core.splitIndex=false", "credential.helper=", "protocol.allow=never",
           "commit.gpgSign=false", "log.showSignature=false", "gc.auto=0",
           "maintenance.auto=false", "index.threads=1")
_LOCKED = re.compile(r"Unable to create '([^']+\.lock)': File exists")
_EMPTY_TREE = {"sha1": "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
               "sha256": "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"}
GITLINK, SYMLINK, EXECUTABLE, REGULAR = "160000", "120000", "100755", "100644"


class GitFailed(Exception):
    """rein's own git work failed (git's message, a lock, the disk): not the agent's doing."""


class NotCommittable(Exception):
    """The work tree holds something rein does not commit as it is (an embedded repository,
    a file that changed while rein read it): the agent's to fix."""


class Snapshot(Frozen, kw_only=False):
    """The work tree as rein read it: ``path → (mode, blob id)``, and where each blob that
    may be new comes from (a path to hash again, or the bytes of a symlink's target)."""

    entries: Mapping[str, tuple[str, str]]
    sources: Mapping[str, str | bytes] = field(default_factory=dict)

    def changed(self, base: Mapping[str, tuple[str, str]],
                exclude: Sequence[str] = NOT_WORK) -> list[str]:
        """Paths whose content or mode differs from ``base``, outside ``exclude``."""
        paths = set(self.entries) | set(base)
        return sorted(p for p in paths if not excluded(p, exclude)
                      and self.entries.get(p) != base.get(p))


def _bytecode_cache(path: bytes) -> bool:
    """Whether an untracked ``path`` is in a Python bytecode cache (``__pycache__/``), which
    Python writes wherever the agent ran the code, in a new project before anything ignores
    it: never the work, so left out as if ignored (a tracked one stays what it is)."""
    return b"__pycache__/" in path and (path.startswith(b"__pycache__/")
                                        or b"/__pycache__/" in path)


def excluded(path: str, prefixes: Sequence[str]) -> bool:
    return any(path == p or path.startswith(p + "/") for p in prefixes)


class Repo:
    """One repository's work tree (its root is the flow's workspace) and rein's git calls."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()
        top = self._git(["rev-parse", "--absolute-git-dir", "--show-object-format"],
                        git_dir=False).decode().split()
        if len(top) < 1:
            raise GitFailed(f"{self.root} is not a git repository")
        self.git_dir = Path(top[0])
        self.algorithm = top[1] if len(top) > 1 and top[1] in _EMPTY_TREE else "sha1"
        self.pending = self.root / PENDING
        self.writable = _writable(self.git_dir / "objects") and _writable(self.git_dir)
        # Commits wait in .rein/dev/git while .git is read-only, and keep going there until
        # they are written in (land), so that each feature builds on the one before.
        self.deferred = not self.writable or (self.pending / "HEAD").exists()

    # -- calls -------------------------------------------------------------------------

    def _git(self, args: Sequence[str], *, data: bytes | None = None,
             env: Mapping[str, str] | None = None, git_dir: bool = True,
             config: Sequence[str] = (), global_config: bool = False,
             check: bool = True, literal: bool = True) -> bytes:
        """git's stdout; a failure raises :class:`GitFailed` (with ``check=False``, a
        failure that is not a lock gives ``b""``). ``literal``: paths are never patterns
        (``check-ignore`` takes only plain paths, and refuses the switch)."""
        argv = ["git", "--no-pager", f"--work-tree={self.root}"]
        if literal:
            argv.append("--literal-pathspecs")
        if git_dir:
            argv.append(f"--git-dir={self.git_dir}")
        for item in (*_CONFIG, *config):
            argv += ["-c", item]
        child = {k: os.environ[k] for k in _KEEP_ENV if k in os.environ}
        child.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
                      "GIT_OPTIONAL_LOCKS": "0", "GIT_NO_LAZY_FETCH": "1",
                      "GIT_NO_REPLACE_OBJECTS": "1", "GIT_ATTR_NOSYSTEM": "1", "LC_ALL": "C"})
        if not global_config:
            child["GIT_CONFIG_GLOBAL"] = os.devnull
        if getattr(self, "deferred", False):
            child.update(self._pending_env())
        child.update(env or {})
        for _ in range(locks.MAX_RECOVERIES + 1):
            try:
                done = subprocess.run([*argv, *args], cwd=self.root, env=child, input=data,
                                      capture_output=True, timeout=RUN_SECONDS, check=False)
            except subprocess.TimeoutExpired as exc:
                raise GitFailed(f"git {args[0]} took longer than {RUN_SECONDS:g} s") from exc
            except OSError as exc:
                raise GitFailed(f"git could not be started: {exc}") from exc
            if done.returncode == 0:
                return done.stdout
            said = (done.stderr or done.stdout).decode("utf-8", "replace").strip()
            held = _LOCKED.search(said)
            if held is None and not check:
                return b""
            if held is None or not locks.clear_stale(Path(held.group(1)), self.git_dir,
                                                      (self.root, self.git_dir)):
                break
        raise GitFailed(f"git {' '.join(args[:2])} failed ({done.returncode}): {said[:800]}")

    # -- reading -----------------------------------------------------------------------

    def head(self) -> str | None:
        """The commit HEAD names (the last one kept back, while commits wait to be written
        into ``.git``), or None in a repository without commits."""
        if self.deferred:
            kept = self._kept()
            if kept is not None:
                return kept[0]
        return self.real_head()

    def real_head(self) -> str | None:
        """The commit HEAD names in ``.git`` itself."""
        out = self._git(["rev-parse", "--verify", "-q", "HEAD^{commit}"], check=False)
        return out.decode().strip() or None

    def _kept(self) -> tuple[str, str | None] | None:
        """``(the last commit kept back, the HEAD it was kept back from)``, or None."""
        try:
            words = (self.pending / "HEAD").read_text(encoding="ascii").split()
        except (OSError, UnicodeDecodeError):
            return None
        hexes = [w for w in words if re.fullmatch(r"[0-9a-f]{40}([0-9a-f]{24})?", w)]
        if len(words) != 2 or len(hexes) != (2 if words[1] != "none" else 1):
            raise GitFailed(f"{PENDING}/HEAD is not as rein wrote it: {' '.join(words)[:200]}")
        return words[0], None if words[1] == "none" else words[1]

    def _pending_env(self) -> dict[str, str]:
        objects = self.pending / "objects"
        try:  # git refuses an object directory that does not exist
            objects.mkdir(parents=True, exist_ok=True)
        except OSError:
            return {}  # nothing can be kept back here either: git reads .git alone
        return {"GIT_OBJECT_DIRECTORY": str(objects),
                "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(self.git_dir / "objects")}

    def kept_back(self) -> int:
        """How many commits wait in :data:`PENDING` to be written into ``.git``."""
        kept = self._kept() if (self.pending / "HEAD").exists() else None
        if kept is None:
            return 0
        span = kept[0] if kept[1] is None else f"{kept[1]}..{kept[0]}"
        return len(self._git(["rev-list", span]).split())

    def tree_entries(self, treeish: str | None) -> dict[str, tuple[str, str]]:
        """``path → (mode, id)`` of every blob and gitlink of a commit or tree."""
        if treeish is None:
            return {}
        out = self._git(["ls-tree", "-r", "-z", "--full-tree", treeish])
        entries = {}
        for record in out.split(b"\0"):
            if record:
                meta, _, path = record.partition(b"\t")
                mode, _kind, oid = meta.decode().split()
                entries[os.fsdecode(path)] = (mode, oid)
        return entries

    def tree_of(self, commit: str) -> str:
        """The tree ``commit`` records."""
        return self._git(["rev-parse", "--verify", f"{commit}^{{tree}}"]).decode().strip()

    def empty_tree(self) -> str:
        return _EMPTY_TREE[self.algorithm]

    def snapshot(self, exclude: Sequence[str] = (".rein",)) -> Snapshot:
        """Every file git would see in the work tree (tracked, or untracked and not
        ignored), read by rein: no filter, attribute or fsmonitor is consulted."""
        head = self.tree_entries(self.head())
        index: dict[str, tuple[str, str]] = {}
        for record in self._git(["ls-files", "-z", "-s"]).split(b"\0"):
            if record:
                meta, _, name = record.partition(b"\t")
                mode, oid, _stage = meta.decode().split()
                index[os.fsdecode(name)] = (mode, oid)
        untracked = [os.fsdecode(p) for p in self._git(
            ["ls-files", "-z", "--others", "--exclude-standard"]).split(b"\0")
            if p and not _bytecode_cache(p)]
        nested = [p for p in untracked if p.endswith("/")]
        if nested:
            raise NotCommittable(f"{', '.join(nested[:5])} holds its own git repository: rein "
                                 "commits files, not embedded repositories; remove its .git, "
                                 "or make it a submodule")
        entries: dict[str, tuple[str, str]] = {}
        sources: dict[str, str | bytes] = {}
        reader = _Reader(self.root, self.algorithm)
        for rel in sorted(set(head) | set(index) | set(untracked)):
            if excluded(rel, exclude):
                continue
            link = index.get(rel) or head.get(rel)
            if link is not None and link[0] == GITLINK:
                if reader.directory(rel):  # a submodule: its pointer as it is recorded
                    entries[rel] = link
                continue
            found = reader.entry(rel)
            if found is not None:
                entries[rel], sources[rel] = (found[0], found[1]), found[2]
        return Snapshot(entries=entries, sources=sources)

    def with_file(self, snap: Snapshot, rel: str) -> Snapshot:
        """``snap`` with ``rel`` read again (the file rein itself just wrote)."""
        entries, sources = dict(snap.entries), dict(snap.sources)
        found = _Reader(self.root, self.algorithm).entry(rel)
        entries.pop(rel, None)
        sources.pop(rel, None)
        if found is not None:
            entries[rel], sources[rel] = (found[0], found[1]), found[2]
        return Snapshot(entries=entries, sources=sources)

    def ignored(self, rel: str) -> bool:
        """Whether ``rel`` is an untracked path the ignore files leave out."""
        return self._git(["check-ignore", "--", rel], check=False,
                         literal=False).strip() != b""

    def committed(self, plan_id: str, feature: str) -> str | None:
        """The commit that completed ``feature`` of plan ``plan_id``, if one exists."""
        return self._with_line(f"Rein-Dev-Feature: {plan_id}/{feature}")

    def defined(self, definition: str) -> str | None:
        """The last commit rein made of a feature with this definition digest (under any
        plan), if the current branch holds one."""
        return self._with_line(f"Rein-Dev-Definition: {definition}")

    def _with_line(self, mark: str) -> str | None:
        """The newest commit of HEAD's history whose last paragraph (the lines rein writes
        last, after the feature's title and verify command) has the line ``mark``: a title
        or an argument holding a line break never makes one."""
        if self.head() is None:
            return None
        out = self._git(["log", "--no-show-signature", "--no-color", "--format=%h%x09%B%x00",
                         str(self.head())]).decode("utf-8", "replace")
        for entry in out.split("\0"):
            sha, _, body = entry.strip().partition("\t")
            if mark in body.rpartition("\n\n")[2].split("\n"):
                return sha
        return None

    # -- writing -----------------------------------------------------------------------

    def write_tree(self, snap: Snapshot) -> str:
        """The tree of ``snap``, its new blobs written first (byte for byte as read)."""
        self._write_blobs(snap)
        with tempfile.TemporaryDirectory(prefix="rein-dev-index-") as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            records = b"".join(b"%s %s\t%s\0" % (mode.encode(), oid.encode(), os.fsencode(p))
                               for p, (mode, oid) in sorted(snap.entries.items()))
            self._git(["update-index", "-z", "--index-info"], data=records, env=env)
            return self._git(["write-tree"], env=env).decode().strip()

    def _write_blobs(self, snap: Snapshot) -> None:
        wanted = {oid: path for path, (mode, oid) in snap.entries.items() if mode != GITLINK}
        if not wanted:
            return
        report = self._git(["cat-file", "--batch-check"],
                           data="".join(f"{oid}\n" for oid in wanted).encode())
        missing = [line.split()[0] for line in report.decode().splitlines()
                   if line.endswith(" missing")]
        files = [(oid, wanted[oid]) for oid in missing
                 if isinstance(snap.sources.get(wanted[oid]), str)]
        if files:
            names = b"".join(_quoted(os.fsencode(p)) + b"\n" for _oid, p in files)
            written = self._git(["hash-object", "-w", "--no-filters", "--stdin-paths"],
                                data=names).decode().split()
            changed = [p for (oid, p), got in zip(files, written, strict=False) if got != oid]
            if changed or len(written) != len(files):
                raise NotCommittable(f"{', '.join(changed[:5]) or 'a file'} changed while "
                                     "rein read it; nothing was committed")
        for oid in missing:
            target = snap.sources.get(wanted[oid])
            if isinstance(target, bytes):  # a symlink: the blob is its target's name
                self._git(["hash-object", "-w", "--no-filters", "--stdin"], data=target)

    def commit(self, tree: str, message: str) -> str:
        """Set the index to ``tree``, then commit it on HEAD (no hook, no signing). The
        index goes first, as `git add` before `git commit`: a lock that stops it stops the
        commit before anything is recorded."""
        parent = self.head()
        self.sync_index(tree)
        args = ["commit-tree", tree, "--no-gpg-sign"] + (["-p", parent] if parent else [])
        sha = self._git(args, data=message.encode(), env=self.identity()).decode().strip()
        if self.deferred:  # .git is read-only here: the branch moves when it is written in
            kept = self._kept()
            base = kept[1] if kept is not None else self.real_head()
            _write_atomically(self.pending / "HEAD", f"{sha} {base or 'none'}\n")
            return sha
        zero = "0" * len(self.empty_tree())
        subject = message.splitlines()[0]
        self._git(["update-ref", "-m", f"rein dev: {subject}", "HEAD", sha, parent or zero],
                  config=self._config_hooks_off())
        return sha

    def sync_index(self, tree: str) -> None:
        """The repository's index holds ``tree`` (stat data kept where the blob is the
        same), so that `git status` agrees with the commit (once it is in ``.git``: a
        read-only index is set when the commits kept back are written in)."""
        if self.deferred:
            return
        self._git(["read-tree", "--reset", tree])

    def land(self, plan_id: str, *, made: Collection[str]) -> list[str]:
        """Write the commits kept back into ``.git`` (a no-op without any, or while
        ``.git`` is read-only); their short ids, oldest first. Each object is checked
        against its name, each commit must be one of flow ``plan_id``'s (its
        ``Rein-Dev-Feature`` line) and one rein recorded making (``made``: full ids, from
        the run store: a workspace file, ``.rein/dev/git`` included, is the agent's to
        write), and the branch moves only from the HEAD the first one was kept back from
        (else :class:`GitFailed`: nothing is written)."""
        kept = self._kept() if (self.pending / "HEAD").exists() else None
        if kept is None or not self.writable:
            return []
        tip, base = kept
        if self.real_head() != base:
            raise GitFailed(f"HEAD moved since rein kept feature commits out of the read-only "
                            f".git (it was {base or 'unborn'}, it is {self.real_head()}); "
                            f"they are in {PENDING} (the last is {tip})")
        objects = self.pending / "objects"
        found = _loose_objects(objects, self.algorithm)  # checks each against its name
        span = tip if base is None else f"{base}..{tip}"
        commits = self._git(["rev-list", "--reverse", span]).decode().split()
        mark = re.compile(rf"^Rein-Dev-Feature: {re.escape(plan_id)}/\S+$", re.MULTILINE)
        for sha in commits:
            body = self._git(["cat-file", "commit", sha]).decode("utf-8", "replace")
            if sha not in made or not mark.search(body):
                raise GitFailed(f"commit {sha} in {PENDING} is not one rein recorded making "
                                f"for this flow: nothing was written into .git (remove "
                                f"{PENDING} to drop the commits kept there)")
        for name, path in found:
            target = self.git_dir / "objects" / name[:2] / name[2:]
            if not target.exists():
                target.parent.mkdir(exist_ok=True)
                _copy_atomically(path, target)
        zero = "0" * len(self.empty_tree())
        self.deferred = False
        why = f"rein dev: {len(commits)} feature commit(s) kept back by a read-only .git"
        self._git(["update-ref", "-m", why, "HEAD", tip, base or zero],
                  config=self._config_hooks_off())
        self._git(["read-tree", "--reset", tip])
        import shutil

        shutil.rmtree(self.pending)
        return [sha[:12] for sha in commits]

    def full(self, sha: str) -> str:
        """The full id of commit ``sha``."""
        return self._git(["rev-parse", "--verify", f"{sha}^{{commit}}"]).decode().strip()

    def short(self, sha: str) -> str:
        return self._git(["rev-parse", "--short", sha]).decode().strip()

    def identity(self) -> dict[str, str]:
        """Author and committer: the configured identity (the person's global one included,
        read, never run), or ``rein dev`` in a repository that has none."""
        out = {}
        for key, variable, fallback in (("user.name", "NAME", "rein dev"),
                                        ("user.email", "EMAIL", "rein-dev@localhost")):
            value = self._git(["config", "--get", key], global_config=True,
                              check=False).decode().strip()
            for role in ("AUTHOR", "COMMITTER"):
                out[f"GIT_{role}_{variable}"] = value or fallback
        return out

    def _config_hooks_off(self) -> list[str]:
        """``hook.<name>.enabled=false`` for every hook the configuration defines (git ≥
        2.54 runs them besides the hooks directory), and for the one event rein causes."""
        out = self._git(["config", "--name-only", "-z", "--get-regexp", r"^hook\."],
                        check=False)  # none defined: git says so by failing
        names = {key.decode().split(".")[1] for key in out.split(b"\0") if key.count(b".") >= 2}
        return [f"hook.{n}.enabled=false" for n in sorted(names | {"reference-transaction"})]


def _writable(path: Path) -> bool:
    """Whether this process may create a file in ``path`` (tried: a read-only mount, as
    an agent's sandbox makes ``.git``, may still pass ``access``'s permission checks)."""
    try:
        fd, name = tempfile.mkstemp(prefix=".rein-probe-", dir=path)
    except OSError:
        return False
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(name)
    return True


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".new")
    temporary.write_text(text, encoding="ascii")
    os.replace(temporary, path)


def _copy_atomically(source: Path, target: Path) -> None:
    temporary = target.with_name(f".rein-{target.name}.tmp")
    temporary.write_bytes(source.read_bytes())
    os.chmod(temporary, 0o444)
    os.replace(temporary, target)


def _loose_objects(root: Path, algorithm: str) -> list[tuple[str, Path]]:
    """Every object file under ``root`` as ``(id, path)``, each decompressed and hashed:
    a file whose content does not hash to its name raises :class:`GitFailed`."""
    import zlib

    out = []
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        if folder.name in ("info", "pack") and not any(folder.iterdir()):
            continue
        if not re.fullmatch(r"[0-9a-f]{2}", folder.name) or not folder.is_dir():
            raise GitFailed(f"{folder} is not where rein keeps objects: nothing was written")
        for item in sorted(folder.iterdir()):
            name = folder.name + item.name
            try:
                data = zlib.decompress(item.read_bytes())
            except (OSError, zlib.error) as exc:
                raise GitFailed(f"object {name} in {PENDING} cannot be read: {exc}") from exc
            if hashlib.new(algorithm, data).hexdigest() != name:
                raise GitFailed(f"object {name} in {PENDING} does not hold what its name "
                                "says: nothing was written into .git")
            out.append((name, item))
    return out


def _quoted(path: bytes) -> bytes:
    """A path as git reads one per line: C-quoted when it holds a quote, a backslash, a
    control character or a leading double quote."""
    if not any(b < 0x20 or b in (0x22, 0x5C, 0x7F) for b in path):
        return path
    out = bytearray(b'"')
    for b in path:
        if b in (0x22, 0x5C):
            out += b"\\" + bytes([b])
        elif b < 0x20 or b == 0x7F:
            out += b"\\%03o" % b
        else:
            out.append(b)
    return bytes(out + b'"')


class _Reader:
    """Reads work-tree entries as git would record them, never following a symlink."""

    def __init__(self, root: Path, algorithm: str) -> None:
        self.root = root
        self.algorithm = algorithm
        self.dirs: dict[str, bool] = {"": True}

    def directory(self, rel: str) -> bool:
        """Whether ``rel`` is a real directory reached through real directories."""
        if rel in self.dirs:
            return self.dirs[rel]
        parent = rel.rpartition("/")[0]
        ok = self.directory(parent)
        if ok:
            try:
                ok = stat.S_ISDIR(os.lstat(self.root / rel).st_mode)
            except OSError:
                ok = False
        self.dirs[rel] = ok
        return ok

    def entry(self, rel: str) -> tuple[str, str, str | bytes] | None:
        """``(mode, blob id, source)`` of a file or symlink; None when it is gone, beyond a
        symlink, or neither (git records no FIFO or device)."""
        if not self.directory(rel.rpartition("/")[0]):
            return None
        full = self.root / rel
        try:  # only a file or a symlink is opened: a device or FIFO may refuse or block
            kind = stat.S_IFMT(os.lstat(full).st_mode)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                return None
            raise GitFailed(f"rein could not read {rel}: {exc}") from exc
        if kind not in (stat.S_IFREG, stat.S_IFLNK):
            return None  # git records no FIFO, socket or device (a sandbox's /dev/null)
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(full, flags)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                target = os.readlink(os.fsencode(full))
                return SYMLINK, self._oid(target, len(target)), target
            if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ENXIO):
                return None
            raise GitFailed(f"rein could not read {rel}: {exc}") from exc
        with contextlib.closing(_File(fd)) as fh:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return None
            oid = self._oid_of(fh, info.st_size, rel)
        mode = EXECUTABLE if info.st_mode & stat.S_IXUSR else REGULAR
        return mode, oid, rel

    def _oid(self, data: bytes, size: int) -> str:
        digest = hashlib.new(self.algorithm, b"blob %d\0" % size)
        digest.update(data)
        return digest.hexdigest()

    def _oid_of(self, fh: _File, size: int, rel: str) -> str:
        digest = hashlib.new(self.algorithm, b"blob %d\0" % size)
        total = 0
        for chunk in fh.chunks():
            total += len(chunk)
            if total > size:
                break
            digest.update(chunk)
        if total != size:
            raise NotCommittable(f"{rel} changed while rein read it; nothing was committed")
        return digest.hexdigest()


class _File:
    def __init__(self, fd: int) -> None:
        self.fd = fd

    def chunks(self) -> Iterator[bytes]:
        while chunk := os.read(self.fd, 1 << 20):
            yield chunk

    def close(self) -> None:
        os.close(self.fd)
