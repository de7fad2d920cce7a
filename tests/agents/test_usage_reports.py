"""What the real agents spent, read back from their own records: `rein dev report` against
the Codex CLI's rollout files and Claude Code's transcripts.

The agents drive the one-feature brief of test_dev_flows.py through `rein dev` against the
scripted model server (a test double), whose every answer carries its own usage numbers
and is recorded. The first envelope of the feature names an output the instruction does
not ask for, so rein refuses it once. Then a person asks for the report, and the test
checks it against what it knows without rein:

- each command's tokens against the model server's own record of every exchange and what
  the policy's calls were: a model call belongs to the last rein command whose output its
  request held (none before the first);
- the totals against the agent's own files (the Codex rollout's cumulative
  ``token_count``; the sum of the transcript's messages);
- steps against the calls the policy made, the refusal as the agent's one protocol error;
- the cost against the prices the person gave in their rein.toml.

Claude Code records each answer in the background, and the flush it runs at exit can miss
one still on its way (seen under load): the transcript then lacks the session's last
answer, which the server did serve. The test finds such answers by their ids (the
server's, which the transcript keeps), checks that only a session's last answer is ever
missing and that the report counts it as unwritten where the server says it belongs, and
compares the rest.

The report's text is printed (`pytest -s` shows it): docs/dev-flow.md shows one.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from agent_clis import (
    REIN_BIN,
    AgentRun,
    claude_missing,
    codex_missing,
    run_claude,
    run_codex,
    sandbox_missing,
)
from agent_policy import Driver
from scripted_model import Exchange, ScriptedModel
from test_dev_flows import PROMPT, outputs, work, workspace

pytestmark = pytest.mark.timeout(600)

# USD per million tokens the person sets for the scripted model (it has no vendor price).
PRICE = {"input": 2.0, "output": 8.0, "cache_read": 0.5, "cache_write": 2.5}


class Sloppy(Driver):
    """The policy, but its first envelope for the feature names an output not asked for:
    rein refuses it (DRIVER_ENVELOPE), and the agent asks again and answers right."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(work, self._outputs, *args, entry="dev --json", **kwargs)
        self.spoiled = False

    def _outputs(self, instruction: Mapping[str, Any]) -> dict[str, Any]:
        good = outputs(instruction)
        if instruction["node"] != "plan" and not self.spoiled:
            self.spoiled = True
            return {**good, "notes": "not an output of this node"}
        return good


def person(repo: Path, home: Path, *args: str) -> tuple[int, str]:
    """The person's rein, outside the agent's sandbox, with their own rein.toml."""
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    done = subprocess.run([str(REIN_BIN / "rein"), *args], cwd=repo, capture_output=True,
                          text=True, timeout=120, check=False, env=env)
    return done.returncode, done.stdout + done.stderr


def session(repo: Path, root: Path, agent: Callable[[Path, Path, str], AgentRun],
            file_tool: bool) -> tuple[Sloppy, ScriptedModel]:
    policy = Sloppy(file_tool=repo if file_tool else None)
    root.mkdir(parents=True, exist_ok=True)
    with ScriptedModel(policy) as model:
        done = agent(repo, root, model.url)
    assert done.code == 0, done.stderr[-3000:]
    return policy, model


def command_of(kind: str) -> str | None:
    return {"ask": "rein dev", "submit": "rein submit"}.get(kind)


def after(policy: Sloppy, exchange: Exchange) -> str:
    """The rein command whose output the exchange's request held last, by the policy."""
    ran = [command_of(k) for k in policy.kinds[:exchange.step]]
    return next((c for c in reversed(ran) if c), "(before any rein command)")


def expected(sessions: list[tuple[Sloppy, ScriptedModel]], normalise: Callable[
        [Mapping[str, int]], dict[str, int]], lost: list[Exchange]) -> dict[str, dict[str, int]]:
    """Per command, the tokens of the model calls that followed its output, from the model
    server's record and the policy's calls alone (those of ``lost``, the answers the agent
    did not write, left out: counted apart)."""
    out: dict[str, dict[str, int]] = {}
    for policy, model in sessions:
        for exchange in model.exchanges:
            if any(exchange is e for e in lost):
                continue
            row = out.setdefault(after(policy, exchange), {"model_calls": 0, "input_tokens": 0,
                                        "output_tokens": 0})
            used = normalise(exchange.usage)
            row["model_calls"] += 1
            row["input_tokens"] += used["input_tokens"]
            row["output_tokens"] += used["output_tokens"]
    return out


def codex_tokens(usage: Mapping[str, int]) -> dict[str, int]:
    # The Responses API counts cached input in input_tokens.
    return {"input_tokens": usage["input"], "output_tokens": usage["output"]}


def claude_tokens(usage: Mapping[str, int]) -> dict[str, int]:
    # The Messages API counts the cache apart from input_tokens.
    return {"input_tokens": usage["input"] + usage["cached"] + usage["cache_write"],
            "output_tokens": usage["output"]}


def flow(tmp_path: Path, name: str, agent: Callable[[Path, Path, str], AgentRun],
         file_tool: bool) -> tuple[Path, Path, list[tuple[Sloppy, ScriptedModel]]]:
    repo = workspace(tmp_path, name)
    home = tmp_path / "person"
    (home / ".config" / "rein").mkdir(parents=True)
    (home / ".config" / "rein" / "rein.toml").write_text(
        '[usage.prices."scripted-model"]\n' + "".join(f"{k} = {v}\n" for k, v in PRICE.items())
        + '[usage.prices."claude-opus-4-8"]\n'
        + "".join(f"{k} = {v}\n" for k, v in PRICE.items()))
    first = session(repo, tmp_path / "s1", agent, file_tool)
    code, out = person(repo, home, "approvals", "list", "--json")
    pending = [a for a in json.loads(out)["approvals"] if a["status"] == "pending"]
    code, out = person(repo, home, "approvals", "accept", pending[0]["approval_id"])
    assert code == 0, out
    second = session(repo, tmp_path / "s2", agent, file_tool)
    said = second[0].stopped_on
    assert said is not None and said["reason"] == "done", said
    return repo, home, [first, second]


def check_report(repo: Path, home: Path, sessions: list[tuple[Sloppy, ScriptedModel]],
                 normalise: Callable[[Mapping[str, int]], dict[str, int]],
                 files: list[Path], file_total: Callable[[list[Path]], dict[str, int]],
                 driver: str, held: list[set[str]] | None = None) -> dict[str, Any]:
    """``held``: per session, the ids of the answers its record holds, where the agent can
    leave its last one unwritten (``None``: every answer is in the record)."""
    code, out = person(repo, home, "dev", "report", "--json")
    assert code == 0, out
    report = json.loads(out)
    assert report["driver"] == driver
    # The answers served that the agent did not write: only ever a session's last one, and
    # the report counts each where the server says it belongs, in the command and its file.
    lost = [(n, e) for n, (_, model) in enumerate(sessions) for e in model.exchanges
            if held is not None and e.message not in held[n]]
    assert all(e is sessions[n][1].exchanges[-1] for n, e in lost), lost
    missing: dict[str, int] = {}
    for n, e in lost:
        missing[after(sessions[n][0], e)] = missing.get(after(sessions[n][0], e), 0) + 1
    assert {c["command"]: c["unwritten_messages"] for c in report["commands"]
            if c["unwritten_messages"]} == missing, report["commands"]
    assert report["totals"]["unwritten_messages"] == len(lost)
    assert sorted(s["unwritten_messages"] for s in report["agent_logs"]) == sorted(
        sum(1 for m, _ in lost if m == n) for n in range(len(sessions)))
    # Every other model call of both sessions was read, and each landed where the server says.
    want = expected(sessions, normalise, [e for _, e in lost])
    got = {c["command"]: {k: c["usage"][k] for k in ("model_calls", "input_tokens",
                                                       "output_tokens")}
           for c in report["commands"] if c["usage"] and c["usage"]["model_calls"]}
    assert got == want, (got, want)
    # The totals are the agent's own files' totals.
    total = report["totals"]["usage"]
    assert {k: total[k] for k in ("input_tokens", "output_tokens")} == file_total(files)
    assert report["totals"]["usage_source"] == "attributed"
    # Turns and unattributed calls make up the whole.
    in_turns = sum(t["usage"]["total_tokens"] for t in report["turns"])
    assert in_turns + report["unattributed"]["total_tokens"] == total["total_tokens"]
    # Steps: every call of rein's commands the agent made, as the policy made them.
    kinds = [k for policy, _ in sessions for k in policy.kinds]
    by_agent = {c["command"]: c["by_agent"] for c in report["commands"]}
    assert by_agent["rein dev"] == kinds.count("ask")
    assert by_agent["rein submit"] == kinds.count("submit")
    # The spoiled envelope: one protocol error, the agent's, on submit.
    assert report["errors"]["agent"] == {"DRIVER_ENVELOPE": 1}, report["errors"]
    assert report["summary"]["protocol_errors"] == 1
    submit = next(c for c in report["commands"] if c["command"] == "rein submit")
    assert submit["protocol_errors"] == 1
    # Cost: the person's prices, over every model call the server answered (and the agent
    # wrote).
    served = [normalise(e.usage) | {"cached": e.usage["cached"],
                                    "cache_write": e.usage["cache_write"]}
              for _, model in sessions for e in model.exchanges
              if not any(e is gone for _, gone in lost)]
    dollars = sum(cost(s, driver) for s in served)
    assert total["cost_usd"] == pytest.approx(dollars, abs=1e-6)
    code, text = person(repo, home, "dev", "report")
    assert code == 0, text
    assert ("unwritten: the agent's records name" in text) == bool(lost), text
    print(f"\n$ rein dev report\n{text}")
    return report


def cost(used: Mapping[str, int], driver: str) -> float:
    cached = used["cached"]
    written = used["cache_write"] if driver == "claude-code" else 0  # Responses: none told
    plain = used["input_tokens"] - cached - written
    return (plain * PRICE["input"] + cached * PRICE["cache_read"]
            + written * PRICE["cache_write"] + used["output_tokens"] * PRICE["output"]) / 1e6


def rollout_totals(files: list[Path]) -> dict[str, int]:
    """The Codex CLI's own cumulative count, the last ``token_count`` of each rollout."""
    out = {"input_tokens": 0, "output_tokens": 0}
    for path in files:
        last = None
        for line in path.read_text().splitlines():
            record = json.loads(line)
            payload = record.get("payload") or {}
            if record.get("type") == "event_msg" and payload.get("type") == "token_count" \
                    and payload.get("info"):
                last = payload["info"]["total_token_usage"]
        assert last is not None, path
        out["input_tokens"] += last["input_tokens"]
        out["output_tokens"] += last["output_tokens"]
    return out


def answers_held(files: list[Path]) -> set[str]:
    """The ids of the answers a transcript holds (the server's message ids)."""
    return {record["message"]["id"] for path in files
            for record in map(json.loads, path.read_text().splitlines())
            if record.get("type") == "assistant" and isinstance(record.get("message"), dict)}


def transcript_totals(files: list[Path]) -> dict[str, int]:
    """Claude Code's own record: each message's usage (once per message id of a file)."""
    messages: dict[tuple[Path, str], dict[str, int]] = {}
    for path in files:
        for line in path.read_text().splitlines():
            record = json.loads(line)
            message = record.get("message")
            if record.get("type") == "assistant" and isinstance(message, dict) and \
                    message.get("usage"):
                u = message["usage"]
                messages[path, message["id"]] = {
                    "input_tokens": u["input_tokens"] + u["cache_read_input_tokens"]
                    + u["cache_creation_input_tokens"], "output_tokens": u["output_tokens"]}
    return {k: sum(m[k] for m in messages.values()) for k in ("input_tokens", "output_tokens")}


def codex(repo: Path, root: Path, url: str) -> AgentRun:
    return run_codex(repo, root, url, PROMPT)


@pytest.mark.skipif(bool(codex_missing() or sandbox_missing()),
                    reason=str(codex_missing() or sandbox_missing()))
def test_the_report_of_a_codex_flow_matches_the_rollout_files_per_command(
        tmp_path: Path) -> None:
    repo, home, sessions = flow(tmp_path, "codex", codex, file_tool=False)
    files = sorted(tmp_path.glob("s*/codexhome/sessions/*/*/*/rollout-*.jsonl"))
    assert len(files) == 2, files
    # Codex keeps .git read-only: the person's `rein dev` writes the commit (a call, too).
    code, out = person(repo, home, "dev", "--json")
    assert code == 0, out
    report = check_report(repo, home, sessions, codex_tokens, files, rollout_totals, "codex")
    dev = next(c for c in report["commands"] if c["command"] == "rein dev")
    assert dev["invocations"] == dev["by_agent"] + 1  # the person's, counted, not the agent's


def claude(sandbox: bool) -> Callable[[Path, Path, str], AgentRun]:
    def run(repo: Path, root: Path, url: str) -> AgentRun:
        return run_claude(repo, root, url, PROMPT, sandbox=sandbox)

    return run


@pytest.mark.parametrize("sandbox", [
    pytest.param(False, id="sandbox-off"),
    pytest.param(True, id="sandbox-on", marks=pytest.mark.skipif(
        bool(sandbox_missing()), reason=str(sandbox_missing())))])
@pytest.mark.skipif(bool(claude_missing()), reason=str(claude_missing()))
def test_the_report_of_a_claude_code_flow_matches_its_transcripts_per_command(
        tmp_path: Path, sandbox: bool) -> None:
    repo, home, sessions = flow(tmp_path, "claude", claude(sandbox), file_tool=True)
    files = sorted(tmp_path.glob("s*/home/.claude/projects/*/*.jsonl"))
    assert len(files) == 2, files
    held = [answers_held([f for f in files if f.is_relative_to(tmp_path / root)])
            for root in ("s1", "s2")]
    check_report(repo, home, sessions, claude_tokens, files, transcript_totals,
                 "claude-code", held)


@pytest.mark.skipif(bool(claude_missing()), reason=str(claude_missing()))
def test_a_last_answer_claude_code_left_unwritten_is_counted_where_the_server_says(
        tmp_path: Path) -> None:
    """What a `claude -p` that exits before writing its last answer leaves, made from both
    sessions' real transcripts: the answer's record gone, the `last-prompt` naming it kept.
    The report counts each under the command the server says it followed, and the rest as
    the server served it."""
    repo, home, sessions = flow(tmp_path, "claude", claude(False), file_tool=True)
    files = sorted(tmp_path.glob("s*/home/.claude/projects/*/*.jsonl"))
    assert len(files) == 2, files
    for root, (_, model) in zip(("s1", "s2"), sessions, strict=True):
        [path] = [f for f in files if f.is_relative_to(tmp_path / root)]
        records = [json.loads(line) for line in path.read_text().splitlines()]
        last = model.exchanges[-1].message
        kept = [r for r in records if (r.get("message") or {}).get("id") != last
                or r.get("type") != "assistant"]
        named = [r["leafUuid"] for r in kept if r.get("type") == "last-prompt"][-1]
        assert named not in {r.get("uuid") for r in kept}  # the file names what it lost
        path.write_text("".join(json.dumps(r) + "\n" for r in kept))
    held = [answers_held([f for f in files if f.is_relative_to(tmp_path / root)])
            for root in ("s1", "s2")]
    assert all(model.exchanges[-1].message not in h
               for (_, model), h in zip(sessions, held, strict=True))
    report = check_report(repo, home, sessions, claude_tokens, files, transcript_totals,
                          "claude-code", held)
    assert report["totals"]["unwritten_messages"] == 2
    page = tmp_path / "report.html"
    code, out = person(repo, home, "dev", "report", "--html", str(page))
    assert code == 0, out
    assert page.read_text().count("<span data-unwritten>1 message named but not") == 2
