"""``rein doctor`` says what the setup has and how to fix each gap, and fails only when
something this workspace uses is missing. Each gap is made for real: a PATH without the
programs, a provider key unset, a store that cannot be reached, a signing file absent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def _doctor(cwd: Path, *args: str, env: dict[str, str] | None = None
            ) -> tuple[int, dict[str, Any]]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("REIN_")}
    base.update(HOME=str(cwd / "home"), XDG_CONFIG_HOME=str(cwd / "home" / ".config"),
                REIN_USER_CONFIG=str(cwd / "user.toml"),
                REIN_MANAGED_CONFIG=str(cwd / "etc" / "rein.toml"), **(env or {}))
    program = "import sys; from rein.cli import main; sys.exit(main())"
    done = subprocess.run([sys.executable, "-c", program, "doctor", "--json", *args],
                          cwd=cwd, env=base,
                          capture_output=True, text=True, timeout=120, check=False)
    return done.returncode, json.loads(done.stdout)


def _by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in report["checks"]}


def test_a_fresh_folder_needs_nothing_more(tmp_path: Path) -> None:
    code, report = _doctor(tmp_path)
    assert (code, report["ok"], report["missing"]) == (0, True, [])
    checks = _by_name(report)
    assert checks["store"]["status"] == "ok"
    assert checks["store"]["detail"].endswith("created by the first `rein run`")
    assert checks["providers"]["status"] == "info"  # the driver needs no key
    assert not (tmp_path / ".rein").exists()  # it looked, and wrote nothing


def test_programs_that_are_absent_are_said_with_how_to_install_them(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    code, report = _doctor(tmp_path, env={"PATH": str(empty)})
    assert code == 0  # pictures and the sandbox boundary are not required
    checks = _by_name(report)
    assert checks["graphviz"]["status"] == "warning"
    assert "apt-get install graphviz" in checks["graphviz"]["fix"]
    assert checks["sandbox"]["status"] == "warning"
    assert checks["sandbox"]["detail"].startswith("bwrap is not installed")
    assert "apt-get install bubblewrap" in checks["sandbox"]["fix"]


def test_a_provider_without_its_key_fails_and_says_which_variable(tmp_path: Path) -> None:
    (tmp_path / "user.toml").write_text(
        '[providers.main]\nkind = "openai"\nmodel = "m"\napi_key_env = "DOCTOR_TEST_KEY"\n'
        '[providers.local]\nkind = "openai"\nbase_url = "http://127.0.0.1:11434/v1"\n')
    code, report = _doctor(tmp_path, env={"DOCTOR_TEST_KEY": ""})
    assert (code, report["missing"]) == (1, ["provider:main"])
    main = _by_name(report)["provider:main"]
    assert (main["detail"], main["required"]) == ("DOCTOR_TEST_KEY is not set", True)
    assert main["fix"].startswith("export DOCTOR_TEST_KEY=...")
    assert _by_name(report)["provider:local"]["status"] == "ok"  # a local server: no key
    code, report = _doctor(tmp_path, env={"DOCTOR_TEST_KEY": "k"})
    assert code == 0 and _by_name(report)["provider:main"]["detail"] == (
        "key in DOCTOR_TEST_KEY, model m")


def test_a_provider_of_an_untrusted_project_file_is_said_to_be_unused(tmp_path: Path) -> None:
    (tmp_path / "rein.toml").write_text('[providers.team]\nkind = "anthropic"\n')
    code, report = _doctor(tmp_path, env={"ANTHROPIC_API_KEY": "k"})
    assert (code, report["missing"]) == (1, ["provider:team"])
    assert "`rein config trust`" in _by_name(report)["provider:team"]["fix"]


def test_a_store_that_cannot_be_reached_fails(tmp_path: Path) -> None:
    code, report = _doctor(tmp_path, "--store", "postgresql://nobody@127.0.0.1:9/none")
    assert code == 1 and report["missing"] == ["store"]
    store = _by_name(report)["store"]
    assert store["detail"].startswith("PostgreSQL at postgresql://nobody@127.0.0.1:9/none: "
                                      "STORE_CONNECT")
    assert store["fix"]


def test_a_signing_file_that_is_not_there_fails(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from support import account_files

    from rein.cli import main

    (tmp_path / "ws").mkdir()
    monkeypatch.chdir(tmp_path / "ws")  # the account's files lie outside the workspace
    monkeypatch.setenv("REIN_USER_CONFIG", str(tmp_path / "user.toml"))
    monkeypatch.setenv("REIN_MANAGED_CONFIG", str(tmp_path / "etc.toml"))
    _, user = account_files(monkeypatch, tmp_path)
    user.parent.mkdir(parents=True)
    user.write_text(f'[approver]\nid = "ana"\nroles = ["maintainer"]\n'
                    f'allowed_signers = "{tmp_path / "signers"}"\n')
    assert main(["doctor", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["missing"] == ["approver"]
    assert "allowed_signers names" in _by_name(report)["approver"]["detail"]
    (tmp_path / "signers").write_text("")
    assert main(["doctor", "--json"]) == 0
    approver = _by_name(json.loads(capsys.readouterr().out))["approver"]
    assert approver["status"] == "ok" and approver["detail"].startswith("ana (")


def test_the_text_report_gives_each_fix_under_its_check(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    from rein.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REIN_USER_CONFIG", str(tmp_path / "user.toml"))
    monkeypatch.setenv("REIN_MANAGED_CONFIG", str(tmp_path / "etc.toml"))
    (tmp_path / "user.toml").write_text('[providers.main]\nkind = "anthropic"\n'
                                        'api_key_env = "DOCTOR_TEST_KEY"\n')
    monkeypatch.delenv("DOCTOR_TEST_KEY", raising=False)
    assert main(["doctor"]) == 1
    lines = capsys.readouterr().out.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("MISS  provider main"))
    assert lines[row].endswith("DOCTOR_TEST_KEY is not set")
    assert lines[row + 1].strip().startswith("fix: export DOCTOR_TEST_KEY=...")
    assert lines[-1] == "missing and required: provider:main"
