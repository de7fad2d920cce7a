"""The ``command`` criterion: run a command line in the workspace and judge its exit code.

Passes when the exit code equals ``expect_exit_code`` (default 0) and, if given, stdout
matches ``expect_stdout_matches`` (a regular-expression search over the whole output).
``timeout_seconds`` (or the context's default) kills the whole process group; a timeout
fails with class ``timeout``. Evidence is the exit code and both streams, secrets redacted,
each cut to the evidence limit.

The command is part of the graph the human approved by digest; it runs with the node's
environment (declared variables and secrets) plus a small host baseline so that programs
can be found. With a :class:`~rein.tools.sandbox.SandboxPolicy` as the context's sandbox it
runs exactly as the shell tool does (bubblewrap when usable, refused when the policy demands
a boundary that is missing). Nothing else from the host environment leaks in (an API key in
the parent shell stays there).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rein.engine.run.criteria.base import CriterionProblem, Verdict, confined, verdict_of
from rein.engine.run.criteria.evidence import clean
from rein.engine.run.criteria.matching import regex_of
from rein.engine.run.criteria.model import CriterionContext
from rein.tools.paths import ToolFailure
from rein.tools.process import ProcessResult, run_process
from rein.tools.sandbox import SandboxPolicy
from rein.tools.shell import CommandOutcome, run_sandboxed

if TYPE_CHECKING:
    from rein.formats.agx.patterns import Pattern

# Host variables a command needs to find and run programs; never credentials.
BASELINE_ENV: tuple[str, ...] = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TERM",
    "TMPDIR",
    "TZ",
    "USER",
    "LOGNAME",
    "SHELL",
    "VIRTUAL_ENV",
    "SYSTEMROOT",
)

# Tools a check runs write caches into the workspace as a side effect (bytecode, pytest's
# cache), which a read-only node would then be blamed for: rein's own checks turn them off.
# A node's declared environment cannot turn them back on; PYTEST_ADDOPTS it declares is kept.
NO_CACHE_ENV: dict[str, str] = {
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTEST_ADDOPTS": "-p no:cacheprovider",
    "MYPY_CACHE_DIR": os.devnull,
    "RUFF_NO_CACHE": "true",
}


def without_caches(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with :data:`NO_CACHE_ENV` on top (pytest options the node gave kept)."""
    out = {**env, **NO_CACHE_ENV}
    if env.get("PYTEST_ADDOPTS"):
        out["PYTEST_ADDOPTS"] = f"{env['PYTEST_ADDOPTS']} {NO_CACHE_ENV['PYTEST_ADDOPTS']}"
    return out


# Bytes kept per stream while the command runs; evidence is cut further afterwards.
MAX_CAPTURE_BYTES = 1_000_000


def child_env(declared: Mapping[str, str]) -> dict[str, str]:
    """The baseline from the host, overridden by what the node declared."""
    env = {name: os.environ[name] for name in BASELINE_ENV if name in os.environ}
    env.setdefault("PATH", os.defpath)
    env.update(declared)
    return env


async def check(criterion: Mapping[str, Any], ctx: CriterionContext) -> Verdict:
    """Run ``criterion['run']`` and compare its exit code and stdout."""
    run = criterion.get("run")
    if not isinstance(run, str) or not run.strip():
        raise CriterionProblem("command criterion needs a non-empty 'run' string")
    if ctx.commands is not None:  # on the machine that ran the attempt, checked the same way
        return verdict_of(await ctx.commands(criterion, ctx))
    cwd = ctx.workspace.resolve()
    if criterion.get("cwd") not in (None, "", "."):
        cwd = confined(ctx.workspace, str(criterion["cwd"]), what="cwd")
        if not cwd.is_dir():
            raise CriterionProblem(
                f"cwd {criterion['cwd']!r} is not a directory in the workspace",
                hint="create it earlier in the graph, or fix the path",
            )
    expected = criterion.get("expect_exit_code", 0)
    pattern = _compile(criterion.get("expect_stdout_matches"))
    timeout = float(criterion.get("timeout_seconds", ctx.default_timeout_seconds))

    try:
        result = await _run(run, cwd=cwd, env=without_caches(ctx.env), timeout=timeout,
                            sandbox=ctx.sandbox)
    except ToolFailure as exc:
        raise CriterionProblem(exc.message, code=exc.code, hint=exc.hint) from exc
    except OSError as exc:
        raise CriterionProblem(f"the command could not be started: {exc}") from exc
    stdout, out_cut = clean(result.stdout, ctx.secret_values)
    stderr, err_cut = clean(result.stderr, ctx.secret_values)
    evidence: dict[str, Any] = {
        "exit_code": result.exit_code,
        "expected_exit_code": expected,
        "stdout": stdout,
        "stderr": stderr,
    }
    truncated = result.truncated or out_cut or err_cut
    if result.timed_out:
        evidence["timed_out"] = True
        return Verdict(
            passed=False,
            evidence=evidence,
            evidence_truncated=truncated,
            error=f"the command did not finish within {timeout:g} seconds and was stopped",
            error_code="CRIT006",
            failure_class="timeout",
        )
    passed = result.exit_code == expected
    if pattern is not None:
        matched = pattern.search(result.stdout) is not None
        evidence["stdout_matched"] = matched
        passed = passed and matched
    return Verdict(passed=passed, evidence=evidence, evidence_truncated=truncated)


async def _run(
    run: str, *, cwd: Path, env: Mapping[str, str], timeout: float, sandbox: Any
) -> ProcessResult | CommandOutcome:
    """Under a :class:`SandboxPolicy`, the same path the shell tool takes (bubblewrap when
    usable, a private TMPDIR); otherwise the process-group runner directly."""
    if isinstance(sandbox, SandboxPolicy):
        return await run_sandboxed(
            ["/bin/sh", "-c", run],
            policy=sandbox,
            cwd=cwd,
            env=env,
            timeout=timeout,
            max_output_bytes=MAX_CAPTURE_BYTES,
        )
    return await run_process(
        run,
        cwd=cwd,
        env=child_env(env),
        timeout=timeout,
        max_output_bytes=MAX_CAPTURE_BYTES,
        sandbox=sandbox,
    )


def _compile(pattern: Any) -> Pattern | None:
    if pattern is None:
        return None
    return regex_of(str(pattern), what="expect_stdout_matches")
