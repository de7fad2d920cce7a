"""Every AG code has a document that trips it; official fixtures and examples behave."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
from support import SHARED, SHARED_PROBLEM

from rein.formats.ags import CODES, validate_path

CASES = Path(__file__).parent / "cases"
FIXTURES = resources.files("ags") / "conformance" / "invalid"
# Codes about the values a run is started with (AG301/AG302) or the harness level (AG303,
# which cannot fire at level 3) are not properties of a document; see codes.py.
NOT_DOCUMENT_CODES = {"AG301", "AG302", "AG303"}


def expected_code(path: Path) -> str:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# EXPECT: "), f"{path.name} must start with '# EXPECT: AGxxx'"
    return first.removeprefix("# EXPECT: ").strip()


def case_files() -> list[Path]:
    return sorted(CASES.glob("*.agraph.yaml"))


def fixture_files() -> list[Path]:
    return sorted(Path(str(p)) for p in FIXTURES.iterdir() if p.name.endswith(".agraph.yaml"))


@pytest.mark.parametrize("path", case_files(), ids=lambda p: p.name.split(".")[0])
def test_case_reports_exactly_its_code(path: Path) -> None:
    code = expected_code(path)
    report = validate_path(path)
    assert sorted(report.codes) == [code], [f.render() for f in report.findings]
    (finding,) = [f for f in report.findings if f.code == code]
    assert finding.severity == CODES[code].severity
    assert finding.location.file == str(path)
    assert finding.location.line is not None and finding.location.line > 1
    assert finding.hint and finding.message


def test_every_document_code_has_a_case() -> None:
    covered = {expected_code(p) for p in case_files()}
    assert covered == set(CODES) - NOT_DOCUMENT_CODES


def test_case_file_names_match_their_code() -> None:
    for path in case_files():
        assert path.name.startswith(expected_code(path).lower() + "-"), path.name


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: p.name.split(".")[0])
def test_conformance_fixture_reports_its_code_as_an_error(path: Path) -> None:
    code = expected_code(path)
    report = validate_path(path)
    assert code in {f.code for f in report.errors}, [f.render() for f in report.findings]


def test_there_are_conformance_fixtures() -> None:
    assert len(fixture_files()) >= 20


EXAMPLES = (sorted(SHARED.joinpath("ags-examples").glob("*.agraph.*"))
            if SHARED_PROBLEM is None else [])


@pytest.mark.shared
@pytest.mark.parametrize("name", [p.name for p in EXAMPLES] or ["(none)"])
def test_official_example_is_clean_under_strict(shared_dir: Path, name: str) -> None:
    path = shared_dir / "ags-examples" / name
    report = validate_path(path)
    assert report.findings == (), [f.render() for f in report.findings]
    assert report.digest is not None and report.digest.startswith("sha256-")


@pytest.mark.shared
def test_all_six_official_examples_are_present(shared_dir: Path) -> None:
    assert len(list((shared_dir / "ags-examples").glob("*.agraph.*"))) == 6
