"""rein.toml as hostile input: a cloned repository's file may hold anything. Each case is a
ConfigError with a code and the file's location, never a traceback, a hang or a flood."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rein.config import MAX_CONFIG_BYTES, load_config
from rein.errors import ConfigError


def env_for(tmp: Path) -> dict[str, str]:
    return {"REIN_MANAGED_CONFIG": str(tmp / "etc" / "rein.toml"),
            "XDG_CONFIG_HOME": str(tmp / "xdg"), "HOME": "/nonexistent"}


def refusal(ws: Path, tmp: Path) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config(ws, env=env_for(tmp))
    assert info.value.location is not None and info.value.location.file == str(ws / "rein.toml")
    return info.value


@pytest.mark.parametrize("text", [
    "[limits]\nmax_depth = " + "1" * 5000 + "\n",
    "x = " + "[" * 100_000 + "]" * 100_000 + "\n",
])
def test_numbers_and_nesting_tomllib_cannot_read_are_cfg003(tmp_path: Path, text: str) -> None:
    (tmp_path / "rein.toml").write_text(text)
    error = refusal(tmp_path, tmp_path)
    assert error.code == "CFG003"
    assert error.message.startswith("invalid TOML: the file ")


def test_a_fifo_rein_toml_is_refused_not_waited_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "rein.toml")
    error = refusal(tmp_path, tmp_path)
    assert error.code == "CFG002"
    assert "not a regular file" in error.message


def test_a_managed_policy_that_is_not_a_file_fails_closed(tmp_path: Path) -> None:
    # Skipping it as absent would drop the policy it holds: it must fail loudly instead.
    managed = tmp_path / "etc" / "rein.toml"
    managed.mkdir(parents=True)
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, env=env_for(tmp_path))
    assert info.value.code == "CFG002"
    assert "is a folder" in info.value.message


def test_a_huge_rein_toml_is_refused_unread(tmp_path: Path) -> None:
    with (tmp_path / "rein.toml").open("wb") as fh:
        fh.truncate(200 * 1024 * 1024)  # sparse
    error = refusal(tmp_path, tmp_path)
    assert error.code == "CFG002"
    assert f"over the limit of {MAX_CONFIG_BYTES:,}" in error.message


@pytest.mark.parametrize("value, says", [
    ("0x" + "f" * 5000, "is an integer beyond 2^53"),
    (str(2**60), "is an integer beyond 2^53"),
    ("inf", "is inf, which is not a finite number"),
    ("-inf", "is -inf, which is not a finite number"),
    ("nan", "is nan, which is not a finite number"),
])
def test_numbers_json_cannot_carry_are_cfg003_at_their_line(tmp_path: Path, value: str,
                                                            says: str) -> None:
    # The configuration is digested and printed as JSON: these would fail there instead.
    (tmp_path / "rein.toml").write_text(f'[policy]\nshell = "ask"\nmax_turns = {value}\n')
    error = refusal(tmp_path, tmp_path)
    assert error.code == "CFG003"
    assert error.message == f"invalid TOML: max_turns {says}"
    assert error.location is not None and error.location.line == 3
