"""A sibling folder named ``shared`` is taken for the specs folder only when it holds the
official examples: another project's ``shared`` makes those tests skip with the reason, not
fail. Run as a suite of its own (``REIN_SHARED_DIR`` names the folder, as ``../shared``
would), on one test that reads the folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support import ROOT, specs_folder_problem

CASE = "tests/formats/ags/test_validate_cases.py::test_all_six_official_examples_are_present"


def test_a_folder_named_shared_that_is_not_the_specs_folder_is_skipped(tmp_path: Path) -> None:
    other = tmp_path / "shared"
    (other / "assets").mkdir(parents=True)
    (other / "README.md").write_text("another project's shared files\n")
    env = {**os.environ, "REIN_SHARED_DIR": str(other)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           CASE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:]
    assert "SKIPPED [1]" in done.stdout
    assert f"{other} is not the specs folder" in done.stdout


def test_the_specs_folder_is_told_by_what_it_holds(tmp_path: Path) -> None:
    assert specs_folder_problem(tmp_path / "absent") == \
        f"{tmp_path / 'absent'} is not present (fresh clone)"
    (tmp_path / "ags-examples").mkdir()
    (tmp_path / "ags-examples" / "minimal.agraph.yaml").write_text("ags_version: '1.0'\n")
    assert "it has no oap-examples" in str(specs_folder_problem(tmp_path))
    (tmp_path / "oap-examples").mkdir()
    assert specs_folder_problem(tmp_path) is None
