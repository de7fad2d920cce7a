"""The development flow's control plane: what a person set, never what the agent proposed.

Precedence, highest first: the environment (``REIN_DEV_TARGET``, ``REIN_DEV_VERIFY``), then
``[dev]`` in ``rein.toml``, then the plan the agent wrote. ``[dev] plan_roles``, the roles the
plan approval asks for, says who may approve, so it comes only from the account's own files
(:mod:`rein.config.approver`): never the environment, the project or the agent. A verify command is an argument
list run without a shell, so anything that only means something to a shell, a placeholder
left unexpanded (``$VERIFY_CMD``) or a verifier that checks nothing (``true``, ``echo``) is
refused with the reason: a verify that always passes would turn every claim into a "pass".
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.core.frozen import Frozen
from rein.errors import ConfigError, Location

# Programs that succeed whatever the code does: a verifier made of one of them checks nothing.
NO_OP_PROGRAMS = frozenset({"true", ":", "echo", "printf", "yes", "exit", "false", "sleep"})
# A program asked only for its version or help passes whatever the code does, as does an
# interpreter given an inline program that does nothing (``python -c pass``).
_NO_OP_FLAGS = frozenset({"--version", "-V", "--help", "-h", "-version", "version"})
_INLINE_FLAGS = frozenset({"-c", "-e"})
_NO_OP_CODE = frozenset({"", "pass", "0", "1", "None", "True", "...", "null", "undefined",
                         "nil", "exit", "exit()", "exit(0)", "quit()", "sys.exit(0)",
                         "process.exit(0)"})
_SHELL_CHARS = re.compile(r"[;&|<>`$()]")
_GLOB_CHARS = re.compile(r"[*?\[\]{}\\]")
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish"})
_PLACEHOLDER = re.compile(r"\$[A-Z_{]|<[a-z_ -]+>|\{\{")


class DevSettings(Frozen):
    """Limits and overrides of one flow; ``None`` means unlimited or not set."""

    target: str = "."  # where features are built, relative to the repository root
    verify: tuple[str, ...] | None = None  # the override of every feature's verify command
    verify_source: str | None = None  # where the override came from, for messages
    steps_per_feature: int = 5  # attempts of one feature (its first try and its repairs)
    max_steps: int = 88  # node executions of the whole feature run
    max_wall_clock_seconds: int | None = None  # of the whole feature run
    max_cost_usd: float | None = None  # of the whole feature run, where usage is reported
    verify_timeout_seconds: int = 300  # one verify; its process group is killed after it
    max_features: int = 20
    max_brief_bytes: int = 40_000
    plan_attempts: int = 3  # answers to the plan instruction before the planning fails
    # threshold: a clean context when the last reported usage reaches [driver]
    # clean_context_at (70% by default); per-feature: at the start of every feature too;
    # every-N: at the start of every Nth feature, for a driver that reports no usage;
    # never: not even at the threshold. A repair of the same feature never resets.
    context_policy: str = "threshold"
    smoke: tuple[str, ...] | None = None  # run before each feature; a failure is a stop
    plan_roles: tuple[str, ...] = ()  # the plan approval is answered by a holder of one of them
    # rein's tools offered to a model worker serving a feature (None: none, as for a driver,
    # which uses its own)
    tools: tuple[str, ...] | None = None


def load_settings(dev: Mapping[str, Any] | None, env: Mapping[str, str] | None = None
                  ) -> DevSettings:
    """``[dev]`` of the merged ``rein.toml`` and the environment; ConfigError on a bad value."""
    table = dict(dev or {})
    environ = os.environ if env is None else env
    values: dict[str, Any] = {}
    for name in ("steps_per_feature", "max_steps", "max_wall_clock_seconds",
                 "verify_timeout_seconds", "max_features", "max_brief_bytes", "plan_attempts"):
        if name in table:
            values[name] = _positive_int(table[name], name)
    if "max_cost_usd" in table:
        values["max_cost_usd"] = _number(table["max_cost_usd"], "max_cost_usd")
    if "context_policy" in table:
        values["context_policy"] = _policy(table["context_policy"])
    target = environ.get("REIN_DEV_TARGET") or table.get("target")
    if target is not None:
        values["target"] = check_target(str(target))
    if environ.get("REIN_DEV_VERIFY"):
        values["verify"] = check_verify(environ["REIN_DEV_VERIFY"], "REIN_DEV_VERIFY")
        values["verify_source"] = "REIN_DEV_VERIFY"
    elif table.get("verify"):
        values["verify"] = check_verify(table["verify"], "[dev] verify in rein.toml")
        values["verify_source"] = "[dev] verify"
    if table.get("smoke"):
        values["smoke"] = check_verify(table["smoke"], "[dev] smoke in rein.toml")
    if table.get("plan_roles"):
        roles = table["plan_roles"]
        if not (isinstance(roles, list) and all(isinstance(r, str) and r for r in roles)):
            raise _bad("plan_roles", "a list of role names")
        values["plan_roles"] = tuple(roles)
    if "tools" in table:
        values["tools"] = _tools(table["tools"])
    return DevSettings(**values)


def check_target(target: str) -> str:
    """A target directory inside the repository, as a clean relative path (``.`` = root)."""
    path = Path(target)
    if path.is_absolute() or ".." in path.parts or _PLACEHOLDER.search(target):
        raise ConfigError(f"target directory {target!r} is not a path inside the repository",
                          code="DEV003", hint="name a directory relative to the repository "
                          "root, e.g. REIN_DEV_TARGET=app (the root is the default)")
    if _GLOB_CHARS.search(target):
        # The target becomes the features' permission (fs:write:<target>/**), where these
        # are patterns: `app*` would let the agent write to every folder starting with app.
        raise ConfigError(f"target directory {target!r} holds a pattern character (* ? [ ] "
                          "{ } or a backslash), which would widen the folder the features "
                          "may write to", code="DEV003", hint="name one directory, e.g. "
                          "REIN_DEV_TARGET=app")
    return path.as_posix() if path.parts else "."


def _needs_shell(text: str) -> bool:
    """Whether a shell would read ``text`` as more than words: an operator, a redirection,
    a subshell, a substitution or an expansion, where quotes do not make it literal (inside
    single quotes nothing is special; inside double quotes, `$` and a backquote are).
    ``pytest -k "not (slow or net)"`` is words only."""
    if not _SHELL_CHARS.search(text):
        return False
    quote = ""
    escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif quote == "'":
            quote = "" if char == "'" else quote
        elif char == "\\":
            escaped = True
        elif quote == '"':
            if char == '"':
                quote = ""
            elif char in "$`":
                return True
        elif char in "'\"":
            quote = char
        elif char in ";&|<>`$()":
            return True
    return False


def check_verify(command: Any, source: str) -> tuple[str, ...]:
    """The argument list of a verify command, or ConfigError saying why it is refused."""
    if isinstance(command, list) and command and all(isinstance(a, str) for a in command):
        argv = list(command)
        text = shlex.join(argv)
    elif isinstance(command, str) and command.strip():
        text = command
        if _needs_shell(text) and not _PLACEHOLDER.search(text):
            raise _refused(text, source, "it needs a shell (one of ; & | < > ` $ ( ) outside "
                           "quotes), and rein runs verify commands without one")
        try:
            argv = shlex.split(text)
        except ValueError as exc:
            raise _refused(text, source, f"it cannot be split into arguments ({exc})") from exc
    else:
        raise _refused(repr(command), source, "it is not a command line or a list of "
                       "arguments")
    if any("\0" in a for a in argv):
        raise _refused(text, source, "an argument holds a NUL character, which no program "
                       "can be given")
    if any(_PLACEHOLDER.search(a) for a in argv):
        raise _refused(text, source, "it holds a placeholder that was never filled in "
                       "(such as $VERIFY_CMD)")
    program = Path(argv[0]).name
    if program in NO_OP_PROGRAMS:
        raise _refused(text, source, f"{program!r} checks nothing: it passes whatever the "
                       "code does")
    if len(argv) == 2 and argv[1] in _NO_OP_FLAGS:
        raise _refused(text, source, f"'{program} {argv[1]}' checks nothing: it prints "
                       f"{program}'s version or help whatever the code does")
    if len(argv) == 3 and argv[1] in _INLINE_FLAGS and \
            argv[2].strip().rstrip(";").strip() in _NO_OP_CODE:
        raise _refused(text, source, f"'{program} {argv[1]} {argv[2]}' checks nothing: its "
                       "inline program does nothing, whatever the code does")
    if program in _SHELLS and "-c" in argv[1:]:
        raise _refused(text, source, f"'{program} -c' runs a shell string; name the program "
                       "or a script file instead")
    return tuple(argv)


def _refused(text: str, source: str, why: str) -> ConfigError:
    return ConfigError(f"verify command {text!r} from {source} is refused: {why}",
                       code="DEV004", location=Location(file=source),
                       hint="give a real test command, e.g. python -m pytest -q tests/, or "
                            "a script such as verify-feature.sh run as ['bash', "
                            "'verify-feature.sh', 'ID']")


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _bad(name, "a whole number of at least 1")
    return value


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise _bad(name, "a number of at least 0")
    return float(value)


def _tools(value: Any) -> tuple[str, ...]:
    from rein.tools.catalog import kind_of

    if not isinstance(value, list) or not all(isinstance(v, str) and kind_of(v) for v in value):
        raise _bad("tools", "a list of rein's tool names (file_read, file_write, edit, "
                   "file_search, shell, http_fetch)")
    return tuple(value)


def _policy(value: Any) -> str:
    text = str(value)
    if text in ("threshold", "per-feature", "never"):
        return text
    if every_n(text) is not None:
        return text
    raise _bad("context_policy", "threshold, per-feature, never or every-N (N >= 1)")


def every_n(policy: str) -> int | None:
    """N of an ``every-N`` context policy, else ``None``."""
    head, _, tail = policy.partition("-")
    if head == "every" and tail.isdigit() and int(tail) >= 1:
        return int(tail)
    return None


def _bad(name: str, expected: str) -> ConfigError:
    return ConfigError(f"[dev] {name} in rein.toml must be {expected}", code="DEV005",
                       location=Location(file="rein.toml", pointer=f"/dev/{name}"),
                       hint=f"fix [dev] {name}, or remove it for the default")
