"""AGS permission strings: parsing and the per-scope target dialects."""

from __future__ import annotations

import pytest

from rein.errors import ConfigError
from rein.tools.permissions import Permission, PermissionSet, origin_matches, shell_commands


def test_parse_round_trips_and_keeps_colons_in_the_target() -> None:
    p = Permission.parse("net:fetch:https://api.example.com:8443")
    assert (p.scope, p.action, p.target) == ("net", "fetch", "https://api.example.com:8443")
    assert str(p) == "net:fetch:https://api.example.com:8443"
    assert Permission.parse("git:commit").target is None


@pytest.mark.parametrize("bad", ["fs", "disk:read:x", "fs:Read:x", "", "fs::x", 42])
def test_malformed_permission_is_a_config_error_with_a_hint(bad: object) -> None:
    with pytest.raises(ConfigError) as info:
        Permission.parse(bad)  # type: ignore[arg-type]
    assert info.value.code == "PERM001"
    assert "scope:action[:target]" in (info.value.hint or "")


@pytest.mark.parametrize(
    ("grant", "target", "expected"),
    [
        ("fs:write:src/**", "src", True),
        ("fs:write:src/**", "src/a/b.py", True),
        ("fs:write:src/**", "srcx/a.py", False),
        ("fs:write:src/*.py", "src/a.py", True),
        ("fs:write:src/*.py", "src/sub/a.py", False),
        ("fs:write:**/*.md", "README.md", True),
        ("fs:write:**/*.md", "docs/deep/x.md", True),
        ("fs:write:CONTRIBUTING.md", "CONTRIBUTING.md", True),
        ("fs:write:CONTRIBUTING.md", "CONTRIBUTING.mdx", False),
        ("fs:read:**", "anything/at/all", True),
        ("fs:write", "any/path", True),
    ],
)
def test_fs_globs(grant: str, target: str, expected: bool) -> None:
    request = Permission(scope="fs", action=grant.split(":")[1], target=target)
    assert PermissionSet.parse([grant]).allows(request) is expected


def test_action_must_match_exactly() -> None:
    perms = PermissionSet.parse(["fs:read:**"])
    assert not perms.allows(Permission.parse("fs:write:a.txt"))


def test_targeted_grant_does_not_cover_an_untargeted_request() -> None:
    assert not PermissionSet.parse(["git:push:origin"]).allows(Permission.parse("git:push"))


def test_deny_wins_over_grant() -> None:
    perms = PermissionSet.parse(["fs:read:**"], denied=["fs:read:secrets/**"])
    assert perms.allows(Permission.parse("fs:read:src/a.py"))
    assert not perms.allows(Permission.parse("fs:read:secrets/key"))


@pytest.mark.parametrize(
    ("pattern", "url", "expected"),
    [
        ("https://api.example.com", "https://api.example.com/v1/x?q=1", True),
        ("https://api.example.com", "https://api.example.com:443/", True),
        ("https://api.example.com", "http://api.example.com/", False),
        ("https://api.example.com", "https://api.example.com:8443/", False),
        ("https://api.example.com", "https://evil.com/?https://api.example.com", False),
        ("https://api.example.com", "https://api.example.com.evil.com/", False),
        ("https://*.example.com", "https://a.b.example.com/", True),
        ("https://*.example.com", "https://example.com/", False),
        ("*", "http://anything.org/", True),
        ("https://api.example.com", "not a url", False),
    ],
)
def test_net_origins(pattern: str, url: str, expected: bool) -> None:
    assert origin_matches(pattern, url) is expected


def test_shell_lines_are_split_into_commands() -> None:
    assert shell_commands("mkdocs build && echo ok; ls | wc -l") == (
        "mkdocs build",
        "echo ok",
        "ls",
        "wc -l",
    )
    assert shell_commands("echo 'a && b'") == ("echo a && b",)
    assert shell_commands("echo $(id)") is None
    assert shell_commands("echo `id`") is None
    assert shell_commands("echo 'unterminated") is None


def test_every_command_of_a_shell_line_must_be_granted() -> None:
    perms = PermissionSet.parse(["shell:exec:mkdocs*", "shell:exec:echo *"])
    assert perms.allows(Permission.parse("shell:exec:mkdocs build"))
    assert perms.allows(Permission.parse("shell:exec:mkdocs build && echo done"))
    assert not perms.allows(Permission.parse("shell:exec:mkdocs build; rm -rf site"))
    assert not perms.allows(Permission.parse("shell:exec:mkdocs build $(rm -rf site)"))


def test_hidden_commands_need_an_untargeted_grant() -> None:
    assert PermissionSet.parse(["shell:exec"]).allows(Permission.parse("shell:exec:echo $(id)"))
    assert not PermissionSet.parse(["shell:exec"], denied=["shell:exec:rm*"]).allows(
        Permission.parse("shell:exec:echo $(id)")
    )


def test_granted_for_lists_the_grants_of_one_scope_and_action() -> None:
    perms = PermissionSet.parse(["fs:read:**", "fs:write:docs/**", "fs:write:site/**"])
    assert perms.granted_for("fs", "write") == ("fs:write:docs/**", "fs:write:site/**")
