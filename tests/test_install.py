"""The base install stays lean, and a missing extra says how to install it.

The base install (``pip install rein``: the driver, validation, planning, the embedded
store) is held to at most 20 distributions, rein included. The closure is resolved offline,
from pyproject.toml's ``dependencies`` and the metadata of what this environment installed
(which the test extra makes the full install): every requirement whose marker holds here
is followed, with the extras it names, exactly as pip follows them. A measurement in a
fresh virtual environment (``python -m venv v && v/bin/pip install .``) installs the same
set; the README gives the figure.

Every extra is named in the error of the feature that needs it, with a hint built from
:data:`rein.core.extras.DISTRIBUTION`; each is checked here with its modules made
unimportable, as on a base install.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from support import ROOT

from rein.cli import main
from rein.core.extras import DISTRIBUTION, EXTRAS, install_hint, missing
from rein.errors import ConfigError

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
BASE_LIMIT = 20
# What the base install must not pull: the vendor SDKs, the MCP SDK and its servers, the
# PostgreSQL driver, and what they bring.
HEAVY = {"openai", "anthropic", "mcp", "psycopg", "psycopg-binary", "starlette", "uvicorn",
         "cryptography", "httpx", "httpx2", "pydantic", "dbos", "opentelemetry-sdk"}


def closure(requirements: list[str]) -> set[str]:
    """The distributions ``requirements`` install, rein's own included, resolved through the
    metadata installed here: markers evaluated for this interpreter, extras followed."""
    found: set[str] = set()
    todo = [(Requirement(r), "") for r in requirements]
    while todo:
        req, for_extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": for_extra}):
            continue
        name = canonicalize_name(req.name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            pytest.fail(f"{name} is required but not installed here: install the test extra "
                        "(make install), which installs every extra")
        first = name not in found
        found.add(name)
        wanted = [""] * first + sorted(req.extras)
        for extra in wanted:
            todo.extend((Requirement(r), extra) for r in dist.requires or ())
    return found


def test_the_base_install_is_at_most_twenty_distributions() -> None:
    base = closure(list(PROJECT["dependencies"])) | {DISTRIBUTION}
    assert len(base) <= BASE_LIMIT, sorted(base)
    assert base & HEAVY == set()


def test_the_closure_follows_markers_and_extras() -> None:
    # The resolver itself, on a requirement whose extra pulls more than its base does.
    plain = closure(["psycopg>=3.2"])
    binary = closure(["psycopg[binary]>=3.2"])
    assert "psycopg-binary" in binary - plain
    assert closure(['psycopg>=3.2; python_version < "3"']) == set()


def test_the_distribution_name_is_the_projects() -> None:
    assert PROJECT["name"] == DISTRIBUTION


def test_every_extra_is_known_and_the_test_extra_pulls_them_all() -> None:
    declared = PROJECT["optional-dependencies"]
    assert set(declared) - {"test"} == set(EXTRAS)
    pulled = {canonicalize_name(r.name): r.extras for r in map(Requirement, declared["test"])}
    assert pulled[canonicalize_name(DISTRIBUTION)] == set(EXTRAS)


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_each_extra_installs_the_modules_rein_imports_from_it(extra: str) -> None:
    owners = metadata.packages_distributions()
    installs = closure(list(PROJECT["optional-dependencies"][extra]))
    for module in EXTRAS[extra]:
        top = module.partition(".")[0]
        assert {canonicalize_name(d) for d in owners.get(top, [])} & installs, (extra, module)
    assert missing(extra) is None  # the test extra installs them all


def test_an_install_hint_names_the_distribution_and_the_extra() -> None:
    assert install_hint("postgres") == f"pip install '{DISTRIBUTION}[postgres]'"
    with pytest.raises(KeyError):
        install_hint("nonesuch")


def _without(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    for module in modules:  # import module → ImportError, as on a base install
        monkeypatch.setitem(sys.modules, module, None)


def test_a_postgresql_store_without_the_extra_is_store004(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    _without(monkeypatch, "psycopg")
    code = main(["runs", "list", "--workspace", str(tmp_path),
                 "--store", "postgresql://rein@127.0.0.1:1/none"])
    err = capsys.readouterr().err
    assert code == 64
    assert "STORE004" in err and install_hint("postgres") in err
    assert "Traceback" not in err


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_provider_without_its_sdk_is_provcfg006(kind: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from rein.providers.base import default_registry
    from rein.providers.config import ProviderConfig

    _without(monkeypatch, kind)
    with pytest.raises(ConfigError) as caught:
        default_registry().create(ProviderConfig(name="main", kind=kind, model="m"))
    assert caught.value.code == "PROVCFG006"
    assert caught.value.hint == install_hint(kind)
    assert f"providers.main (kind '{kind}')" in caught.value.message


def test_a_profile_with_mcp_servers_without_the_extra_is_mcp003(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rein.tools.mcp import McpHub, McpServer

    _without(monkeypatch, "mcp")
    server = McpServer(name="time", transport="stdio", command=sys.executable)
    with pytest.raises(ConfigError) as caught:
        McpHub([server], gate=lambda _: "allow", profile="p", trust="project",
               workspace=tmp_path)
    assert caught.value.code == "MCP003"
    assert caught.value.hint == install_hint("mcp")


def test_rein_acp_without_the_extra_is_acp001(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    _without(monkeypatch, "acp")
    assert main(["acp", "--workspace", str(tmp_path)]) == 64
    err = capsys.readouterr().err
    assert "ACP001" in err and install_hint("acp") in err


def test_the_fetch_tool_without_its_http_library_is_tool044(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from rein.tools.fetch import http_library
    from rein.tools.paths import ToolFailure

    _without(monkeypatch, "httpx2")
    with pytest.raises(ToolFailure) as caught:
        http_library()
    assert caught.value.code == "TOOL044"
    assert install_hint("openai") in (caught.value.hint or "")


def test_every_install_hint_in_the_catalogue_comes_from_the_constant() -> None:
    # No hint spells the distribution by hand: each names it through install_hint().
    spelled = re.compile(rf"pip install ['\"]?{re.escape(DISTRIBUTION)}\[")
    constant = ROOT / "src" / "rein" / "core" / "extras.py"
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "src" / "rein").rglob("*.py")
                 if p != constant and spelled.search(p.read_text())]
    assert offenders == []


def base_only(tmp_path: Path) -> dict[str, str]:
    """An environment for ``python -S`` that sees the standard library, rein's source and the
    base install's distributions only (each linked from this environment), no extra."""
    site = tmp_path / "base-site"
    site.mkdir()
    for name in closure(list(PROJECT["dependencies"])):
        dist = metadata.distribution(name)
        for top in {Path(str(f)).parts[0] for f in dist.files or ()} - {".."}:
            source = Path(str(dist.locate_file(top)))
            if source.exists() and not (site / top).exists():
                (site / top).symlink_to(source)
    return {"PYTHONPATH": f"{ROOT / 'src'}:{site}", "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path), "REIN_ALLOW_MODEL_REQUESTS": "0"}


def test_the_readme_first_run_needs_no_extra(tmp_path: Path) -> None:
    env = base_only(tmp_path)
    entry = "import sys; from rein.cli import main; sys.exit(main(sys.argv[1:]))"
    rein = [sys.executable, "-S", "-c", entry]
    hidden = subprocess.run([*rein[:3], "import openai"], env=env, capture_output=True,
                            check=False)
    assert hidden.returncode != 0  # the extras are really out of reach
    graph = str(ROOT / "examples" / "no-worker.agraph.yaml")
    digest = subprocess.run([*rein, "graph", "digest", graph], env=env, capture_output=True,
                            text=True, check=False, timeout=120)
    assert digest.returncode == 0, digest.stderr
    workspace = tmp_path / "ws"
    workspace.mkdir()
    ran = subprocess.run([*rein, "run", graph, "--workspace", str(workspace), "--approve",
                          digest.stdout.strip()], env=env, capture_output=True, text=True,
                         check=False, timeout=300)
    assert ran.returncode == 0, ran.stdout + ran.stderr
