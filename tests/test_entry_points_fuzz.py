"""Every entry point, fuzzed: whatever bytes arrive, rein answers with a result or one of its
own errors (a code, a hint, the exit code the contract names), never a Python exception.

``ENTRY_POINTS`` is the list of surfaces that read outside input. Each takes the raw bytes
(in a fresh workspace) and returns normally when rein answered properly; anything else it
raises fails the test. A new surface (a protocol server, a new file rein reads) adds one
entry, and every strategy below runs against it.

The runs are derandomized (the same examples every time) and bounded in number, so the
suite stays deterministic and quick; the per-surface tests add structured inputs (valid
documents cut short or with bytes changed) that random bytes rarely reach.
"""

from __future__ import annotations

import io
import json
import re
import tempfile
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import EXAMPLES

from rein.cli import main
from rein.config import load_config
from rein.errors import ConfigError
from rein.formats.ags import Report, validate_path
from rein.formats.oap import validate_file
from rein.workers.driver.protocol import (
    EnvelopeRefused,
    envelope_problems,
    envelope_schema,
    parse_envelope,
)

FUZZ = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
ROOT = Path(__file__).resolve().parent
GRAPH_SEEDS = sorted(EXAMPLES.glob("*.agraph.yaml"))
PROFILE_SEEDS = sorted((ROOT / "profiles" / "data").glob("*.agent.*"))
TOML_SEED = (b'[policy]\nshell = "ask"\ntools = ["read", "mcp/**"]\nmax_turns = 50\n'
             b'[limits]\nmax_depth = 64\nmax_bytes = 1000000\n[store]\nurl = "x.db"\n')
ENVELOPE_SEED = json.dumps({
    "protocol": "rein.driver/1", "token": "drv-0123", "node": "n", "attempt": 1,
    "status": "done", "outputs": {"module": "greet.py"}, "decision": "a",
    "context_usage": {"used_tokens": 1, "window_tokens": 2}, "agent": {"name": "x"},
}).encode()


def cli(ws: Path, *args: str) -> tuple[int, str]:
    """``rein ARGS`` in ``ws``; its exit code and stdout. Any exception propagates."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main([*args, "--workspace", str(ws)] if args[0] in ("runs", "next", "submit")
                    else list(args))
    assert "Traceback" not in err.getvalue()
    return code, out.getvalue()


def one_json_object(text: str) -> dict[str, Any]:
    value = json.loads(text)
    assert isinstance(value, dict)
    return value


# ---------------------------------------------------------------------------- entry points


def graph_api(ws: Path, raw: bytes) -> None:
    for suffix in (".agraph.yaml", ".agraph.json"):
        path = ws / f"fuzz{suffix}"
        path.write_bytes(raw)
        report = validate_path(path)
        assert isinstance(report, Report)
        assert all(f.code.startswith("AG") for f in report.findings)
        json.dumps(report.to_json())


def graph_cli(ws: Path, raw: bytes) -> None:
    path = ws / "fuzz.agraph.yaml"
    path.write_bytes(raw)
    code, out = cli(ws, "graph", "validate", str(path), "--json")
    assert code in (0, 1)
    assert one_json_object(out)["documents"][0]["path"] == str(path)
    code, out = cli(ws, "graph", "digest", str(path), "--json")
    assert code in (0, 1)
    one_json_object(out)


def profile_api(ws: Path, raw: bytes) -> None:
    for suffix in (".agent.yaml", ".agent.json", ".agent.md", ".delta.yaml"):
        path = ws / f"fuzz{suffix}"
        path.write_bytes(raw)
        report = validate_file(path)
        assert all(f.code.startswith("OAP") for f in report.findings)
        json.dumps(report.to_json())


def profile_cli(ws: Path, raw: bytes) -> None:
    path = ws / "fuzz.agent.yaml"
    path.write_bytes(raw)
    code, out = cli(ws, "profile", "validate", str(path), "--json")
    assert code in (0, 1)
    one_json_object(out)


INSTRUCTION: dict[str, Any] = {
    "token": "drv-0123", "node": "n", "attempt": 1, "kind": "decision",
    "branches": [{"label": "a"}, {"label": "b"}],
    "outputs": [{"name": "module", "type": "file", "required": True},
                {"name": "score", "type": "number", "required": False}],
}
INSTRUCTION["respond_with"] = envelope_schema(INSTRUCTION)


def envelope_api(ws: Path, raw: bytes) -> None:
    try:
        envelope = parse_envelope(raw.decode("utf-8", errors="replace"))
    except EnvelopeRefused as exc:
        assert exc.code.startswith("DRIVER_") and exc.hint
        return
    assert isinstance(envelope, dict)
    assert all(isinstance(p, str) for p in envelope_problems(envelope, INSTRUCTION))


def envelope_cli(ws: Path, raw: bytes) -> None:
    inbox = ws / ".rein" / "inbox.json"
    inbox.parent.mkdir(exist_ok=True)
    inbox.write_bytes(raw)
    code, out = cli(ws, "submit", "--json")
    # Refused (4), or parsed and then "no run to answer" (1): never anything else.
    assert code in (1, 4)
    one_json_object(out)


def rein_toml(ws: Path, raw: bytes) -> None:
    (ws / "rein.toml").write_bytes(raw)
    env = {"REIN_MANAGED_CONFIG": str(ws / "absent-managed.toml"),
           "XDG_CONFIG_HOME": str(ws / "absent-xdg"), "HOME": str(ws / "absent-home")}
    try:
        load_config(ws, env=env)
    except ConfigError as exc:
        assert exc.code and exc.message


def store_file(ws: Path, raw: bytes) -> None:
    db = ws / ".rein" / "rein.db"
    db.parent.mkdir(exist_ok=True)
    db.write_bytes(raw)
    code, out = cli(ws, "runs", "list", "--json")
    assert code in (0, 1)
    body = one_json_object(out)
    if code == 1:
        assert body["error"]["code"].startswith("STORE")
    elif raw[:16] == b"SQLite format 3\x00" or not raw:
        # A damaged copy of the seed holds its run or is refused: never an empty history.
        assert len(body["runs"]) == 1, body
    code, out = cli(ws, "next", "--json")
    assert code in (0, 1, 3)
    one_json_object(out)


ENTRY_POINTS: dict[str, Callable[[Path, bytes], None]] = {
    "graph": graph_api, "graph-cli": graph_cli, "profile": profile_api,
    "profile-cli": profile_cli, "envelope": envelope_api, "envelope-cli": envelope_cli,
    "rein.toml": rein_toml, "store": store_file,
}


def feed(entry: str, raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ENTRY_POINTS[entry](Path(tmp), raw)


# ---------------------------------------------------------------------------- strategies

# Bytes that make parsers take unusual paths: NUL, BOM, lone surrogates' UTF-8, CR, tabs,
# YAML indicators, deep brackets, huge numbers.
_TOKENS = [b"\x00", b"\xef\xbb\xbf", b"\xed\xa0\x80", b"\r", b"\t", b"&a ", b"*a", b"!!int ",
           b"[" * 200, b"{" * 200, b"9" * 5000, b"1e999", b"-", b": ", b"---\n", b'"\\u0000"',
           b"\\", b"'", b'"', b"#", b"\n  ", b"=", b"[[a]]\n", b"0x" + b"f" * 400]
tokens = st.lists(st.sampled_from(_TOKENS) | st.binary(max_size=8), max_size=30).map(b"".join)


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@FUZZ
@given(raw=st.binary(max_size=300))
def test_random_bytes(entry: str, raw: bytes) -> None:
    feed(entry, raw)


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@FUZZ
@given(raw=tokens)
def test_hostile_tokens(entry: str, raw: bytes) -> None:
    feed(entry, raw)


# Values no parser should choke on, spliced where a seed has a value: overlong and
# overflowing numbers, NUL by escape, deep nesting, aliases, tags, non-finite literals.
_HOSTILE = ["9" * 5000, "-" + "9" * 200, "1e999", "-1e400", "0x" + "f" * 5000,
            "0o" + "7" * 2000, '"a\\u0000b"', '"a\\0b"', "[" * 5000 + "]" * 5000,
            "{a: " * 500 + "1" + "}" * 500, "*nope", "&a [*a]", "!!binary aGk=", ".inf",
            ".nan", "!!int " + "1" * 5000, "!!float 1e999", '"\\ud800"', "[1, 2", "@",
            "inf", "nan", "1979-05-27T07:32:00Z", "0x" + "f" * 20]
_VALUE_AT = {"yaml": re.compile(rb"(?m)^(\s*(?:- )?[A-Za-z_][\w.-]*: )(.+)$"),
             "toml": re.compile(rb"(?m)^(\s*[A-Za-z_][\w.-]*\s*=\s*)(.+)$")}


def splice(raw: bytes, syntax: str, pick: int, value: str) -> bytes:
    """``raw`` with the value of its ``pick``-th ``key: value`` (or ``key = value``) line
    replaced by ``value``."""
    matches = list(_VALUE_AT[syntax].finditer(raw))
    if not matches:
        return raw
    m = matches[pick % len(matches)]
    return raw[: m.start(2)] + value.encode() + raw[m.end(2):]


def splice_json(raw: bytes, pick: int, value: str) -> bytes:
    """``raw`` (a JSON object) with one member's value replaced by the literal ``value``."""
    data = json.loads(raw)
    keys = sorted(data)
    data[keys[pick % len(keys)]] = "\x01MARK\x01"
    return json.dumps(data).replace('"\\u0001MARK\\u0001"', value).encode()


@pytest.mark.parametrize("entry", sorted(e for e in ENTRY_POINTS if e != "store"))
@FUZZ
@given(pick=st.integers(0, 200), line=st.integers(0, 200), value=st.sampled_from(_HOSTILE))
def test_hostile_values_in_valid_inputs(entry: str, pick: int, line: int, value: str) -> None:
    raw = seed_for(entry, pick)
    if entry.startswith("envelope"):
        feed(entry, splice_json(raw, line, value))
    else:
        feed(entry, splice(raw, "toml" if entry == "rein.toml" else "yaml", line, value))


def seed_for(entry: str, pick: int) -> bytes:
    if entry.startswith("graph"):
        return GRAPH_SEEDS[pick % len(GRAPH_SEEDS)].read_bytes()
    if entry.startswith("profile"):
        return PROFILE_SEEDS[pick % len(PROFILE_SEEDS)].read_bytes()
    if entry.startswith("envelope"):
        return ENVELOPE_SEED
    if entry == "rein.toml":
        return TOML_SEED
    return STORE_SEED()


PAGE = 4096


@FUZZ
@given(pages=st.lists(st.tuples(st.integers(0, 200), st.binary(min_size=1, max_size=64)),
                      min_size=1, max_size=4),
       cut=st.one_of(st.none(), st.integers(0, 200)))
def test_store_with_damaged_pages_or_truncated(pages: list[tuple[int, bytes]],
                                               cut: int | None) -> None:
    raw = bytearray(STORE_SEED())
    count = len(raw) // PAGE
    for index, garbage in pages:  # overwrite whole pages, the way a bad sector does
        start = (index % count) * PAGE
        raw[start:start + PAGE] = (garbage * (PAGE // len(garbage) + 1))[:PAGE]
    if cut is not None:
        raw = raw[: (cut % (count + 1)) * PAGE]  # cut at a page boundary, 0 bytes included
    feed("store", bytes(raw))


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@FUZZ
@given(pick=st.integers(0, 50), cut=st.floats(0, 1),
       flips=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)), max_size=6))
def test_valid_inputs_cut_short_or_damaged(entry: str, pick: int, cut: float,
                                           flips: list[tuple[float, int]]) -> None:
    raw = bytearray(seed_for(entry, pick))
    for where, value in flips:
        raw[int(where * (len(raw) - 1))] = value
    feed(entry, bytes(raw[: max(1, int(len(raw) * cut))] if cut < 0.98 else raw))


def test_every_seed_is_accepted_whole() -> None:
    # The damaged-input test starts from inputs each entry point reads without complaint.
    assert GRAPH_SEEDS and PROFILE_SEEDS
    for entry in sorted(ENTRY_POINTS):
        feed(entry, seed_for(entry, 0))


# ---------------------------------------------------------------------------- the store seed

_STORE: list[bytes] = []


def STORE_SEED() -> bytes:  # upper case: reads as the constant it caches
    """A real store file holding a finished run, made once (checkpointed: one file)."""
    if not _STORE:
        with tempfile.TemporaryDirectory() as tmp:
            ws = Path(tmp)
            graph = ws / "no-worker.agraph.yaml"
            graph.write_bytes((EXAMPLES / "no-worker.agraph.yaml").read_bytes())
            out = io.StringIO()
            with redirect_stdout(out), redirect_stderr(io.StringIO()):
                assert main(["graph", "digest", str(graph)]) == 0
                code = main(["run", str(graph), "--approve", out.getvalue().strip(),
                             "--workspace", str(ws)])
            assert code == 0
            _STORE.append((ws / ".rein" / "rein.db").read_bytes())
    return _STORE[0]


def test_store_fuzz_reaches_a_store_that_opens() -> None:
    # Guard against a vacuous store fuzz: the seed itself lists its run.
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        (ws / ".rein").mkdir()
        (ws / ".rein" / "rein.db").write_bytes(STORE_SEED())
        code, out = cli(ws, "runs", "list", "--json")
        assert code == 0 and len(one_json_object(out)["runs"]) == 1
