"""The package shape shows the architecture (docs/architecture.md, "The package map"):
the engine's root holds the Harness and the event log only, run mechanics never reach for
a use case, prefix families are subpackages, and the tests mirror the packages of src."""

from __future__ import annotations

from pathlib import Path

from support import ROOT
from test_layers import module_graph

PACKAGE = ROOT / "src" / "rein"

# Test folders that are not a package of src: suites of the whole system, and the ACP
# agent's tests (a folder named ``acp`` would shadow the ACP SDK's package on the path).
WHOLE_SYSTEM = {"scenarios", "durability", "agents", "hooks", "plan", "acp_agent"}


def test_the_engine_root_holds_the_harness_and_the_event_log() -> None:
    assert sorted(p.stem for p in (PACKAGE / "engine").glob("*.py")) == [
        "__init__", "events", "follow", "service"]
    assert sorted(p.name for p in (PACKAGE / "engine").iterdir()
                  if p.is_dir() and p.name != "__pycache__") == ["cases", "run"]


def reaching_up(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{m} imports {d}" for m, deps in graph.items()
                  if m.startswith("rein.engine.run") for d in deps
                  if d.startswith("rein.engine.cases"))


def test_run_mechanics_never_import_a_use_case() -> None:
    assert reaching_up(module_graph(PACKAGE)) == []


def test_the_check_sees_a_mechanic_reaching_for_a_use_case() -> None:
    assert reaching_up({"rein.engine.run.nodes": {"rein.engine.cases.queries"},
                        "rein.engine.cases.queries": {"rein.engine.run.record"}}) == [
        "rein.engine.run.nodes imports rein.engine.cases.queries"]


def test_prefix_families_are_subpackages() -> None:
    flat = [p.name for folder, prefix in (("workers", "driver"), ("cli", "quick"))
            for p in (PACKAGE / folder).glob(f"{prefix}*.py")]
    assert flat == []
    assert not (PACKAGE / "engine" / "executors").exists()


def unmirrored(tests: Path, package: Path) -> list[str]:
    """Folders of tests whose path is no folder of src (nor a whole-system suite)."""
    wrong = []
    for folder in sorted({p.parent for p in tests.rglob("test_*.py")}):
        rel = folder.relative_to(tests)
        if rel == Path(".") or rel.parts[0] in WHOLE_SYSTEM:
            continue
        if not (package / rel).is_dir():
            wrong.append(rel.as_posix())
    return wrong


def test_the_tests_mirror_the_packages_of_src() -> None:
    assert unmirrored(ROOT / "tests", PACKAGE) == []


def test_the_mirror_check_sees_a_stray_folder(tmp_path: Path) -> None:
    (tmp_path / "src" / "engine" / "run").mkdir(parents=True)
    (tmp_path / "src" / "engine" / "run" / "__init__.py").write_text("")
    for folder in ("engine/run", "scale", "scenarios"):
        (tmp_path / "tests" / folder).mkdir(parents=True)
        (tmp_path / "tests" / folder / "test_x.py").write_text("")
    assert unmirrored(tmp_path / "tests", tmp_path / "src") == ["scale"]
