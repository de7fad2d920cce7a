"""The command criterion: exit codes, stdout patterns, cwd confinement, timeouts, evidence."""

from __future__ import annotations

import os
from pathlib import Path

from criteria_helpers import check

from rein.engine.run.criteria.evidence import EVIDENCE_LIMIT, REDACTED
from rein.tools.sandbox import SandboxPolicy


def test_zero_exit_passes_with_streams_as_evidence(ctx_for):
    result = check({"id": "ok", "kind": "command", "run": "echo out; echo err >&2"}, ctx_for())
    assert result.passed
    assert result.evidence == {
        "exit_code": 0,
        "expected_exit_code": 0,
        "stdout": "out\n",
        "stderr": "err\n",
    }
    assert result.failure_class == "criteria_failed"
    assert result.error is None


def test_wrong_exit_code_fails_and_says_which(ctx_for):
    result = check({"id": "tests", "kind": "command", "run": "echo 2 failed; exit 3"}, ctx_for())
    assert not result.passed
    assert result.error is None
    assert result.evidence["exit_code"] == 3
    assert result.evidence["stdout"] == "2 failed\n"


def test_expect_exit_code_other_than_zero(ctx_for):
    criterion = {"id": "c", "kind": "command", "run": "exit 3", "expect_exit_code": 3}
    assert check(criterion, ctx_for()).passed
    criterion["run"] = "true"
    assert not check(criterion, ctx_for()).passed


def test_expect_stdout_matches_is_a_search(ctx_for):
    base = {"id": "c", "kind": "command", "run": "printf 'collected 12 items\\n12 passed\\n'"}
    passing = check({**base, "expect_stdout_matches": r"\d+ passed"}, ctx_for())
    assert passing.passed and passing.evidence["stdout_matched"] is True
    failing = check({**base, "expect_stdout_matches": r"^0 failed"}, ctx_for())
    assert not failing.passed and failing.evidence["stdout_matched"] is False
    assert failing.evidence["exit_code"] == 0


def test_bad_stdout_pattern_is_an_error_not_a_failure(ctx_for):
    result = check(
        {"id": "c", "kind": "command", "run": "true", "expect_stdout_matches": "("}, ctx_for()
    )
    assert not result.passed
    assert result.error_code == "CRIT001"
    assert "not a valid regular expression" in result.error


def test_cwd_is_workspace_relative(ctx_for):
    ctx = ctx_for()
    (ctx.workspace / "pkg").mkdir()
    result = check({"id": "c", "kind": "command", "run": "pwd", "cwd": "pkg"}, ctx)
    assert result.passed
    assert result.evidence["stdout"].strip() == str((ctx.workspace / "pkg").resolve())


def test_default_cwd_is_the_workspace(ctx_for):
    ctx = ctx_for()
    result = check({"id": "c", "kind": "command", "run": "pwd"}, ctx)
    assert result.evidence["stdout"].strip() == str(ctx.workspace.resolve())


def test_cwd_traversal_is_refused_before_running(ctx_for, tmp_path):
    ctx = ctx_for()
    marker = tmp_path / "ran"
    for cwd in ("..", "../ws/../..", str(tmp_path)):
        result = check(
            {"id": "c", "kind": "command", "run": f"touch {marker}", "cwd": cwd}, ctx
        )
        assert not result.passed
        assert result.error_code == "CRIT002", cwd
    assert not marker.exists()


def test_cwd_through_a_symlink_out_of_the_workspace_is_refused(ctx_for, tmp_path):
    ctx = ctx_for()
    (ctx.workspace / "out").symlink_to(tmp_path)
    result = check({"id": "c", "kind": "command", "run": "true", "cwd": "out"}, ctx)
    assert not result.passed
    assert result.error == "cwd 'out' leaves the workspace (hint: criteria may only look inside the workspace)"


def test_missing_cwd_directory_is_an_error(ctx_for):
    result = check({"id": "c", "kind": "command", "run": "true", "cwd": "nope"}, ctx_for())
    assert not result.passed
    assert result.error.startswith("cwd 'nope' is not a directory in the workspace")


def test_timeout_fails_with_class_timeout(ctx_for):
    result = check(
        {"id": "slow", "kind": "command", "run": "sleep 30", "timeout_seconds": 0.3}, ctx_for()
    )
    assert not result.passed
    assert result.failure_class == "timeout"
    assert result.evidence["timed_out"] is True
    assert result.duration_seconds < 10
    record = result.to_record()
    assert record["x-rein-failure-class"] == "timeout"
    assert "0.3 seconds" in record["error"]


def test_context_default_timeout_applies(ctx_for):
    ctx = ctx_for(default_timeout_seconds=0.3)
    result = check({"id": "slow", "kind": "command", "run": "sleep 30"}, ctx)
    assert result.failure_class == "timeout"


def test_secrets_never_reach_the_evidence(ctx_for):
    ctx = ctx_for(env={"API_TOKEN": "s3cr3t-value"}, secret_values=frozenset({"s3cr3t-value"}))
    result = check(
        {
            "id": "leak",
            "kind": "command",
            "run": 'echo "token=$API_TOKEN"; echo "err $API_TOKEN" >&2; exit 1',
        },
        ctx,
    )
    assert not result.passed
    assert result.evidence["stdout"] == f"token={REDACTED}\n"
    assert result.evidence["stderr"] == f"err {REDACTED}\n"
    assert "s3cr3t-value" not in str(result.to_record())
    assert "s3cr3t-value" not in str(result.feedback())


def test_long_output_is_truncated_in_evidence(ctx_for):
    run = "python3 -c \"print('x' * 50000); print('THE END')\""
    result = check({"id": "big", "kind": "command", "run": run}, ctx_for())
    assert result.passed
    assert result.evidence_truncated
    stdout = result.evidence["stdout"]
    assert len(stdout) < EVIDENCE_LIMIT + 100
    assert stdout.rstrip().endswith("THE END")  # the tail, where test summaries are, is kept
    assert "characters omitted" in stdout
    assert result.to_record()["evidence_truncated"] is True


def test_declared_env_is_visible_and_host_secrets_are_not(ctx_for, monkeypatch):
    monkeypatch.setenv("HOST_ONLY_KEY", "from-the-host")
    ctx = ctx_for(env={"GREETING": "hello"})
    result = check(
        {"id": "env", "kind": "command", "run": 'echo "$GREETING/${HOST_ONLY_KEY:-unset}"'}, ctx
    )
    assert result.evidence["stdout"] == "hello/unset\n"


def test_path_comes_from_the_host_baseline(ctx_for):
    result = check({"id": "c", "kind": "command", "run": "python3 -c 'print(1)'"}, ctx_for())
    assert result.passed, result.evidence


def test_unknown_program_fails_with_shell_status_127(ctx_for):
    result = check({"id": "c", "kind": "command", "run": "no-such-program-here"}, ctx_for())
    assert not result.passed
    assert result.evidence["exit_code"] == 127


def test_empty_run_is_an_error(ctx_for):
    result = check({"id": "c", "kind": "command", "run": "  "}, ctx_for())
    assert result.error_code == "CRIT001"


def test_danger_full_access_policy_runs_through_the_shell_path(ctx_for):
    ctx = ctx_for()
    policy = SandboxPolicy.parse("danger-full-access", workspace=ctx.workspace)
    ctx = ctx_for(sandbox=policy, env={"X": "1"})
    result = check({"id": "c", "kind": "command", "run": 'test "$X" = 1 && pwd'}, ctx)
    assert result.passed, result.evidence
    assert result.evidence["stdout"].strip() == str(ctx.workspace.resolve())


def test_a_generic_sandbox_rewrites_the_command(ctx_for):
    seen: list[list[str]] = []

    class Prefixing:
        """A test double sandbox: records the command and adds a variable."""

        def prepare(self, argv, *, cwd: Path, env):
            seen.append(list(argv))
            return argv, {**env, "SANDBOXED": "yes"}

    ctx = ctx_for(sandbox=Prefixing())
    result = check({"id": "c", "kind": "command", "run": 'echo "$SANDBOXED"'}, ctx)
    assert result.evidence["stdout"] == "yes\n"
    assert seen == [["/bin/sh", "-c", 'echo "$SANDBOXED"']]
    assert os.environ.get("SANDBOXED") is None


def test_a_check_writes_no_bytecode_or_tool_cache_into_the_workspace(ctx_for):
    import shutil
    import sys

    ctx = ctx_for(env={"PYTEST_ADDOPTS": "-q"})
    (ctx.workspace / "mod.py").write_text("X = 1\n")
    (ctx.workspace / "test_mod.py").write_text("import mod\n\ndef test_x():\n    assert mod.X\n")
    python = shutil.which("python3") or sys.executable
    result = check({"id": "t", "kind": "command",
                    "run": f"{sys.executable} -m pytest test_mod.py && {python} -c 'import mod'"},
                   ctx)
    assert result.passed, result.evidence
    assert sorted(p.name for p in ctx.workspace.iterdir()) == ["mod.py", "test_mod.py"]
