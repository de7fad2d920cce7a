"""Which ``rein.toml`` files leave ``rein next``'s answer to the cold read
(:mod:`rein.workers.driver.glance`), told without :mod:`rein.config`.

Through the Harness, ``rein next`` reads the merged configuration
(:func:`rein.config.load_config`: the three files, and the account's own approver files)
and uses it for the store alone: ``[store] url`` names another store than the workspace's
embedded one, and the ``[providers]`` key variables are added to what the store redacts
from the rows it writes (``rein next`` writes none). Everything else in the files reaches
the answer only by refusing a file: one rein cannot read (CFG002), that is not TOML or
holds a number JSON cannot carry (CFG003), or with a bad value in a section rein checks
(CFG004) makes ``rein next`` an error, not an answer.

So :func:`settled` holds the files to what it can prove: each is a regular file of at most
:data:`~rein.core.config_rules.MAX_CONFIG_BYTES` of UTF-8 TOML (read by
:mod:`rein.core.toml_plain`, else :mod:`tomllib`), holds no number JSON cannot carry, and
section by section (:data:`SECTIONS`):

- ``[store]`` names no ``url`` (the embedded store is the one read);
- ``[policy]``, ``[limits]``, ``[approver]``, ``[dev] plan_roles`` and ``[mcp] trusted``
  pass the checks rein.config refuses a file by (:mod:`rein.core.config_rules`);
- ``[hooks]`` and ``[workers]`` are not there (the configuration pins the files their
  commands run, reading the workspace); nor, in the project's file, ``[providers]`` or
  ``[usage] prices`` (tables that need trust: the trust file is read);
- every top-level value is a table (one merged over a table of another file is not read
  the same way by every step).

Any other file, and any doubt (an error reading it), is the Harness's.
tests/workers/driver/test_glance.py holds the answers equal to the Harness's with such
files, and :data:`SECTIONS` equal to rein.config's known sections.
"""

from __future__ import annotations

from rein.core import config_rules as rules
from rein.core.reading import read_small_file

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

# Every section rein.config knows, and what it is to `rein next` through the Harness:
# "unread"   read by nothing on the answer's path (what runs nodes, flows and reports reads it)
# "checked"  refused by rein.config when a value is bad, read by nothing on the path
# "store"    the store the answer is read from
# "keys"     the key variables the store redacts from what it writes; needs trust from a
#            project file
# "usage"    unread, but its `prices` need trust from a project file
# "harness"  more to read than this module does: the Harness answers
SECTIONS = {
    "approver": "checked", "dev": "checked", "limits": "checked", "mcp": "checked",
    "policy": "checked", "driver": "unread", "executor": "unread", "profiles": "unread",
    "routing": "unread", "spec": "unread", "telemetry": "unread", "tiers": "unread",
    "store": "store", "providers": "keys", "usage": "usage", "hooks": "harness",
    "workers": "harness",
}


def settled(files: Iterable[tuple[str, str]]) -> bool:
    """Whether the configuration files that exist, ``(scope, path)`` as
    :func:`rein.core.config_places.config_files` and ``authority_files`` name them, leave
    the answer to the cold read (see the module docstring)."""
    read: dict[str, dict[str, Any] | None] = {}
    for scope, path in files:
        if path not in read:
            read[path] = _data(path)
        data = read[path]
        if data is None or not _quiet(data, project=scope == "project"):
            return False
    return True


def _data(path: str) -> dict[str, Any] | None:
    """The file's TOML data, as rein.config reads it (``None``: it would refuse it)."""
    raw = read_small_file(path, rules.MAX_CONFIG_BYTES)
    if raw is None:
        return None
    try:
        text = raw.decode("utf-8")
    except ValueError:
        return None
    from rein.core.toml_plain import read

    data = read(text)
    if data is None:  # TOML beyond the plain part: tomllib, as rein.config reads it
        import tomllib

        try:
            data = tomllib.loads(text)
        except (ValueError, RecursionError):
            return None
    return None if rules.bad_number(data) is not None else data


def _quiet(data: dict[str, Any], *, project: bool) -> bool:
    """Whether one file's data is refused by none of rein.config's checks and changes
    nothing ``rein next``'s answer is read from."""
    for section, value in data.items():
        if not isinstance(value, dict):
            return False
        kind = SECTIONS.get(section, "unread")  # a section rein does not know: a note
        if kind == "harness" or (kind == "store" and "url" in value) or \
                (kind == "keys" and project) or (kind == "usage" and project
                                                 and "prices" in value):
            return False
        if kind == "checked" and not _checks(section, value):
            return False
    return True


def _checks(section: str, value: dict[str, Any]) -> bool:
    """Whether a checked section passes rein.config's checks (rein.config._check and
    rein.config.approver.check_approver)."""
    if section == "policy":
        return all(rules.policy_problem(k, v) is None for k, v in value.items())
    if section == "limits":
        return all(rules.limits_problem(k, v) is None for k, v in value.items())
    if section == "approver":
        return all(rules.approver_problem(k, v) is None for k, v in value.items())
    if section == "dev":
        return "plan_roles" not in value or rules.role_list(value["plan_roles"])
    if section == "mcp":
        return "trusted" not in value or rules.mcp_trusted_problem(value["trusted"]) is None
    return False  # a section checked in a way this module does not know


__all__ = ["SECTIONS", "settled"]
