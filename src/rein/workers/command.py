"""The command worker: a CLI agent (``claude -p``, ``codex exec``, ...) run as a subprocess.

A :class:`CommandTemplate` says how to start the agent. Each argument may hold placeholders,
replaced one argument at a time (never through a shell, so a brief cannot inject a command):

``{prompt}``        the rendered brief (inputs, outputs, permissions, feedback, conventions)
``{prompt_file}``   a file holding the same text
``{outputs_file}``  where the agent may write its outputs (also ``$REIN_OUTPUTS_FILE``)
``{workspace}``     the workspace, which is also the working directory
``{node}``, ``{attempt}``

The agent runs under the same sandbox as shell commands (bubblewrap when usable, see
:mod:`rein.tools.sandbox`), in its own process group, killed with the whole group when
``timeout_seconds`` passes. Its environment is clean: ``PATH``, ``LANG``, a private
``HOME``/``TMPDIR``, the node's declared environment, and only the variables the template
names in ``pass_env`` (the agent's own API key, for instance).

**Outputs convention.** The agent reports its outputs as one JSON object, either written to
``$REIN_OUTPUTS_FILE`` (preferred), or as the last non-empty line of stdout. Keys that match
the node's declared outputs are taken; for decision nodes ``decision`` is the branch label.
No object at all fails the attempt as ``output_missing``.

**fs:write holds.** Only the directories the node's ``fs:write`` grants name are writable
under bubblewrap, and the workspace is compared before and after the agent runs (the whole
workspace when bubblewrap cannot run): a change no grant covers fails the attempt as
``permission_denied`` (:mod:`rein.tools.writeguard`).

**It runs the files rein checked.** The workspace files the argv runs are bound by their
digests (trust, :mod:`rein.config.command_files`); each attempt reads them once into copies
in its private directory, comparing as it copies, and runs the copies
(:mod:`rein.config.command_seal`): a script rewritten in the instant after the check is not
what runs. A file that is not as bound stops the attempt (``permission_denied``).

**Workers never commit.** Under bubblewrap ``.git`` is bound read-only, so a commit fails.
Whatever the backend, rein records every ref and ``HEAD`` (``git show-ref --head``) before the
agent starts and compares after it ends: any change fails the attempt as
``permission_denied``, and the message names the ref that moved.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from rein.config.command_seal import sealed_command
from rein.core.failures import FailureClass
from rein.core.frozen import Frozen
from rein.core.tiers import TIERS, Tier
from rein.core.usage import Usage
from rein.errors import ConfigError, LoadError
from rein.formats.loader import LoadLimits, load_text, read_limited
from rein.formats.redaction import Secrets, known_secrets
from rein.tools.gitguard import moved_refs, refs_now
from rein.tools.paths import ToolFailure
from rein.tools.permissions import PermissionSet
from rein.tools.sandbox import SandboxPolicy
from rein.tools.shell import CommandOutcome, base_env, run_sandboxed, written_outside_message
from rein.workers.base import AttemptRequest, AttemptResult, Item, ItemKind, Routed
from rein.workers.brief import render_brief

MAX_STDOUT_ITEM = 16 * 1024
CONVENTION = """\
## How to report
Do the work in the current directory. Do not commit to git. When you are done, write one JSON
object with the outputs above (and `decision` for a decision) to the file named by
$REIN_OUTPUTS_FILE, or print it as the very last line of your output."""
# The placeholders whose values rein writes: an argument that is one of them names no
# workspace file (trust leaves it out, rein.config.trust.worker_argv), and nothing of their
# values (the brief's text, files in the private directory) is ever read as one.
_WRITTEN = ("{prompt}", "{prompt_file}", "{outputs_file}")
_PLACEHOLDER = re.compile(r"\{(prompt|prompt_file|outputs_file|workspace|node|attempt)\}")


class CommandTemplate(Frozen):
    """How to start one CLI agent."""

    argv: tuple[str, ...]
    name: str = "command"  # recorded as the provider
    model: str = "cli"  # recorded as the model
    timeout_seconds: float = 1800.0
    pass_env: tuple[str, ...] = ()  # variables of rein's environment the agent needs
    max_output_bytes: int = 1_000_000


# The agent's report is untrusted input, parsed like an envelope: bounded in size and depth,
# so a deep or huge report is "no report", never a RecursionError or a flood of memory.
_REPORT_LIMITS = LoadLimits(max_bytes=4 * 1024 * 1024, max_depth=64)


def parse_outputs(stdout: str, outputs_file: Path) -> dict[str, Any] | None:
    """The agent's JSON object: from the outputs file if it is there, else stdout's last line."""
    if outputs_file.is_file() and outputs_file.stat().st_size > 0:
        try:
            raw = read_limited(outputs_file, _REPORT_LIMITS.max_bytes)
            return _report(raw.decode("utf-8"), str(outputs_file))
        except (LoadError, UnicodeDecodeError):
            return None
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines:
        return None
    try:
        return _report(lines[-1], "stdout")
    except LoadError:
        return None


def _report(text: str, source: str) -> dict[str, Any] | None:
    value = load_text(text, source=source, format="json", limits=_REPORT_LIMITS).data
    return value if isinstance(value, dict) else None


class Launch(Frozen):
    """How one attempt starts the agent."""

    argv: tuple[str, ...]
    env: dict[str, str]
    outputs_file: Path
    values: dict[str, str]  # each placeholder's value, by name


def outcome_items(outcome: CommandOutcome, secrets: Secrets) -> list[Item]:
    """What the agent's run records: the sandbox it ran in (when that is no boundary, and
    the write check), its stdout and its stderr, each tail-bounded and scrubbed of secrets."""
    items = []
    backend = outcome.backend
    if backend.note and not backend.is_boundary:
        items.append(Item(kind=ItemKind.NOTICE, data={"sandbox": backend.name,
                                                      "text": backend.note}))
    if outcome.write_check is not None:
        items.append(Item(kind=ItemKind.NOTICE, data={
            "sandbox": backend.name, "fs_write": outcome.write_check,
            "written_outside": list(outcome.written_outside)}))
    items.append(Item(kind=ItemKind.MESSAGE, data={
        "role": "agent", "text": _scrub(outcome.stdout[-MAX_STDOUT_ITEM:], secrets),
        "exit_code": outcome.exit_code, "backend": backend.name}))
    if outcome.stderr.strip():
        items.append(Item(kind=ItemKind.NOTICE, data={
            "stream": "stderr", "text": _scrub(outcome.stderr[-MAX_STDOUT_ITEM:], secrets)}))
    return items


class CommandWorker:
    """Runs a CLI agent per attempt and maps its report to the node's outputs."""

    name = "command"

    def __init__(
        self,
        template: CommandTemplate,
        *,
        tiers: Iterable[Tier] = TIERS,
        require_boundary: bool = False,
        environ: Mapping[str, str] | None = None,
        protected: Iterable[str] = (),
        files: Mapping[str, str] | None = None,
    ) -> None:
        if not template.argv:
            raise ValueError("a command template needs at least the program")
        self.template = template
        self.tiers = frozenset(tiers)
        self.require_boundary = require_boundary
        self._environ = environ if environ is not None else os.environ
        # Paths no node writes whatever its grants (rein.tools.sandbox.protected_paths), and
        # the workspace files this agent's argv runs, as trusted: changed, it is not run.
        self.protected = tuple(protected)
        self.files = dict(files or {})

    @property
    def id(self) -> str:
        """``command/<name>``: how a node chooses this worker with ``x-rein-worker``."""
        return f"command/{self.template.name}"

    def can_serve(self, request: AttemptRequest) -> bool:
        """Task and decision attempts at a tier it serves, or any tier when a node chose it
        by name (a CLI agent runs whatever model it is set up with)."""
        chosen = request.worker in (self.id, self.name)
        return (chosen or request.serving_tier in self.tiers) and request.kind in (
            "task",
            "decision",
        )

    async def run(self, request: AttemptRequest) -> AsyncIterator[Item | AttemptResult]:
        """Start the agent in a private scratch directory, record what it printed, and map
        its report to the node's outputs; the scratch directory goes however it ends."""
        routed = request.served_by(self.template.name, self.template.model)
        usage = Usage(input_tokens=None, output_tokens=None, cost_usd=None, agent_steps=1)

        def fail(failure: FailureClass, message: str) -> AttemptResult:
            return AttemptResult(usage=usage, routed=routed, failure=failure, message=message)

        private = Path(tempfile.mkdtemp(prefix="rein-command-"))
        try:
            launch = self._launch(request, private)
            with contextlib.ExitStack() as sealed:
                # The argv's workspace files run from copies of the bytes compared with
                # their trusted digests, in ``private`` (which the sandbox shows), removed
                # on every way out.
                try:
                    argv, stale = sealed.enter_context(self._sealed(request, launch, private))
                except (OSError, ValueError) as exc:  # a copy failed; the files are unsure
                    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
                    yield fail(FailureClass.PERMISSION_DENIED,
                               f"command worker {self.template.name} was not run: {why}")
                    return
                if stale:
                    yield fail(FailureClass.PERMISSION_DENIED, (
                        f"command worker {self.template.name} was not run: "
                        f"{', '.join(stale)} changed since rein read and trusted its "
                        "configuration; review the change, then run `rein config trust` "
                        "again (for a project rein.toml)"))
                    return
                policy = SandboxPolicy.for_attempt(
                    request.workspace, request.workspace_access, request.network,
                    require_boundary=self.require_boundary, protected=self.protected,
                )
                before = await refs_now(request.workspace)  # the loop serves others meanwhile
                try:
                    outcome = await run_sandboxed(
                        argv,
                        policy=policy,
                        cwd=Path(request.workspace),
                        env=launch.env,
                        timeout=self._timeout(request),
                        max_output_bytes=self.template.max_output_bytes,
                        scratch=private,
                        writes=PermissionSet.parse(request.permissions),
                        trusted_argv=True,
                    )
                except (ToolFailure, ConfigError) as exc:
                    yield fail(FailureClass.PERMISSION_DENIED, f"{exc.code}: {exc.message}")
                    return
                except FileNotFoundError:
                    yield fail(FailureClass.TOOL_ERROR, f"command not found: {launch.argv[0]}")
                    return
                except PermissionError:  # not executable, or a folder on the way refuses
                    yield fail(FailureClass.TOOL_ERROR,
                               f"command not executable: {launch.argv[0]} (make it executable "
                               "with chmod +x, or name its interpreter first in argv)")
                    return
                moved = moved_refs(before, await refs_now(request.workspace))
                for item in outcome_items(outcome, self._secrets(request)):
                    yield item
                yield self._result(request, outcome, moved, launch.outputs_file, usage, routed)
        finally:
            shutil.rmtree(private, ignore_errors=True)

    @contextlib.contextmanager
    def _sealed(self, request: AttemptRequest, launch: Launch, private: Path
                ) -> Iterator[tuple[tuple[str, ...], tuple[str, ...]]]:
        """``(argv, stale)``: the launch's argv with every word that names a bound file
        naming its copy (:func:`rein.config.command_seal.sealed_command`, the copies in
        ``private``), or the bound files that are not as trusted. The seal reads the argv
        as trust read it: ``{workspace}`` filled, the arguments that are rein's own values
        left out, and the placeholders inside other arguments as written, filled after;
        so no word of the brief or of rein's files is ever taken for a workspace file. The
        program is looked up on the ``PATH`` the attempt runs with."""
        template = self.template.argv
        kept = [i for i, word in enumerate(template) if word not in _WRITTEN]
        read = [template[i].replace("{workspace}", request.workspace) for i in kept]
        search_path = base_env(launch.env, scratch=private)["PATH"]
        with sealed_command(read, Path(request.workspace), self.files,
                            search_path=search_path, within=private) as sealed:
            if sealed.changed:
                yield launch.argv, sealed.changed
                return
            argv = list(launch.argv)
            rest = {k: v for k, v in launch.values.items() if k != "workspace"}
            for i, was, now in zip(kept, read, sealed.command, strict=True):
                if now != was:  # a word naming a bound file: its copy, the rest filled
                    argv[i] = _fill(now, rest)
            yield tuple(argv), ()

    def _launch(self, request: AttemptRequest, private: Path) -> Launch:
        """The agent's command line (placeholders filled one argument at a time) and clean
        environment; the prompt file and the outputs file live in ``private``."""
        prompt = render_brief(request) + "\n\n" + CONVENTION
        prompt_file = private / "prompt.md"
        prompt_file.write_text(prompt, encoding="utf-8")
        outputs_file = private / "outputs.json"
        values = {
            "prompt": prompt,
            "prompt_file": str(prompt_file),
            "outputs_file": str(outputs_file),
            "workspace": request.workspace,
            "node": request.node_id,
            "attempt": str(request.attempt),
        }
        argv = tuple(_fill(arg, values) for arg in self.template.argv)
        env = {n: self._environ[n] for n in self.template.pass_env if n in self._environ}
        env.update(request.env)
        env["REIN_OUTPUTS_FILE"] = str(outputs_file)
        return Launch(argv=argv, env=env, outputs_file=outputs_file, values=values)

    def _secrets(self, request: AttemptRequest) -> Secrets:
        """The node's secrets and the provider keys the agent is handed (pass_env, env)."""
        passed = {n: self._environ[n] for n in self.template.pass_env if n in self._environ}
        return (Secrets.of({n: request.env[n] for n in request.secret_names
                            if request.env.get(n)})
                | known_secrets({**passed, **request.env}))

    def _timeout(self, request: AttemptRequest) -> float:
        limit = request.budget.max_wall_clock_seconds
        return (
            self.template.timeout_seconds
            if limit is None
            else min(limit, self.template.timeout_seconds)
        )

    def _result(
        self,
        request: AttemptRequest,
        outcome: CommandOutcome,
        moved: list[str],
        outputs_file: Path,
        usage: Usage,
        routed: Routed,
    ) -> AttemptResult:
        def fail(failure: FailureClass, message: str) -> AttemptResult:
            return AttemptResult(usage=usage, routed=routed, failure=failure, message=message)

        if moved:
            return fail(
                FailureClass.PERMISSION_DENIED,
                f"the agent changed git refs ({', '.join(moved)}); workers never commit",
            )
        if outcome.written_outside:
            return fail(
                FailureClass.PERMISSION_DENIED,
                "the agent: " + written_outside_message(
                    outcome.written_outside, PermissionSet.parse(request.permissions)),
            )
        if outcome.timed_out:
            return fail(
                FailureClass.TIMEOUT,
                f"the agent ran past {self._timeout(request)} s and "
                "was killed with its process group",
            )
        if outcome.exit_code != 0:
            return fail(FailureClass.TOOL_ERROR, f"the agent exited with code {outcome.exit_code}")
        report = parse_outputs(outcome.stdout, outputs_file)
        if report is None:
            return fail(
                FailureClass.OUTPUT_MISSING,
                "the agent reported no JSON object (write it "
                "to $REIN_OUTPUTS_FILE or print it as the last line of stdout)",
            )
        declared = {o.name for o in request.outputs}
        outputs = {k: v for k, v in report.items() if k in declared}
        decision = report.get("decision") if request.branches else None
        ignored = sorted(set(report) - declared - ({"decision"} if request.branches else set()))
        extra = {"x-rein-ignored-keys": ignored} if ignored else {}
        return AttemptResult(
            outputs=outputs,
            usage=usage,
            routed=routed,
            decision=decision if isinstance(decision, str) else None,
            extra=extra,
        )


def _fill(arg: str, values: Mapping[str, str]) -> str:
    """``arg`` with each placeholder of ``values`` replaced, in one pass: a value is never
    read for placeholders again (a brief that says ``{workspace}`` keeps saying it)."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), arg)


def _scrub(text: str, secrets: Secrets) -> str:
    return secrets.text(text)
