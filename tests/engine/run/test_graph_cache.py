"""The parsed-graph cache behind every pass of a run (``rein.engine.run.graph_cache``).

A driver's submit reads the run's graph again each turn; the cache spares it the YAML
parse, and must never change what the file means: an entry is used only for the very
bytes it was made from and only when its data still has the digest it records.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import EXAMPLES

from rein.engine.run.graph_cache import CACHE_DIR, FORMAT, load_graph
from rein.errors import LoadError
from rein.formats.canonical import ags_digest
from rein.formats.loader import load_path

DEMO = EXAMPLES / "driver-demo.agraph.yaml"


def _graph(tmp_path: Path) -> Path:
    path = tmp_path / DEMO.name
    shutil.copy(DEMO, path)
    return path


def _entries(ws: Path) -> list[Path]:
    folder = ws / CACHE_DIR
    return sorted(folder.glob("*.json")) if folder.exists() else []


def test_the_first_load_parses_the_file_and_keeps_what_it_parsed_to(tmp_path: Path) -> None:
    path = _graph(tmp_path)
    assert load_graph(path, tmp_path) == load_path(path).data
    [entry] = _entries(tmp_path)
    stored = json.loads(entry.read_text())
    assert stored["format"] == FORMAT
    assert stored["data"] == load_path(path).data
    assert stored["digest"] == ags_digest(load_path(path).data)


def test_a_later_load_reads_the_cache_without_the_yaml_parser(tmp_path: Path) -> None:
    path = _graph(tmp_path)
    load_graph(path, tmp_path)
    probe = ("import json, sys\nfrom pathlib import Path\n"
             "from rein.engine.run.graph_cache import load_graph\n"
             "data = load_graph(sys.argv[1], Path(sys.argv[2]))\n"
             "print(json.dumps({'id': data['id'], 'yaml': 'yaml' in sys.modules}))\n")
    out = subprocess.run([sys.executable, "-c", probe, str(path), str(tmp_path)], check=True,
                         capture_output=True, text=True).stdout
    assert json.loads(out) == {"id": "rein/examples/driver-demo", "yaml": False}


def test_an_entry_whose_data_does_not_match_its_digest_is_not_trusted(tmp_path: Path) -> None:
    path = _graph(tmp_path)
    load_graph(path, tmp_path)
    [entry] = _entries(tmp_path)
    stored = json.loads(entry.read_text())
    stored["data"]["nodes"]["write_module"]["title"] = "something else"  # digest kept
    entry.write_text(json.dumps(stored))
    data = load_graph(path, tmp_path)
    assert data["nodes"]["write_module"]["title"] == "Write greet.py"  # the file's own
    assert json.loads(entry.read_text())["data"] == data  # and the entry is made again


def test_only_the_approved_graph_is_ever_handed_out_from_the_cache(tmp_path: Path) -> None:
    path = _graph(tmp_path)
    approved = ags_digest(load_path(path).data)
    load_graph(path, tmp_path)
    [entry] = _entries(tmp_path)
    stored = json.loads(entry.read_text())
    stored["data"]["nodes"]["write_module"]["title"] = "something else"
    stored["digest"] = ags_digest(stored["data"])  # consistent, but not what was approved
    entry.write_text(json.dumps(stored))
    assert load_graph(path, tmp_path)["nodes"]["write_module"]["title"] == "something else"
    data = load_graph(path, tmp_path, approved=approved)
    assert data["nodes"]["write_module"]["title"] == "Write greet.py"  # the file's own


def test_an_entry_made_from_other_bytes_is_not_used(tmp_path: Path) -> None:
    path = _graph(tmp_path)
    load_graph(path, tmp_path)
    [entry] = _entries(tmp_path)
    stored = json.loads(entry.read_text())
    path.write_text(path.read_text().replace("Write greet.py", "Write hello.py"))
    # Even an entry renamed to the new bytes' hash is refused: it records the old ones.
    entry.rename(entry.with_name("x.json"))
    new_name = tmp_path / CACHE_DIR / "x.json"
    new_name.rename(new_name.with_name(hashlib.sha256(path.read_bytes()).hexdigest() + ".json"))
    assert stored["source_sha256"] != hashlib.sha256(path.read_bytes()).hexdigest()
    assert load_graph(path, tmp_path)["nodes"]["write_module"]["title"] == "Write hello.py"


def test_a_corrupt_entry_costs_only_the_parse(tmp_path: Path) -> None:
    path = _graph(tmp_path)
    load_graph(path, tmp_path)
    [entry] = _entries(tmp_path)
    entry.write_text('{"format": "rein.graph-cache/1", "data": ')  # cut short
    assert load_graph(path, tmp_path) == load_path(path).data


def test_a_file_the_loader_refuses_is_refused_the_same_way(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text("id: x\ncontext:\n  1: one\n")  # an integer key: not a JSON object
    with pytest.raises(LoadError) as direct:
        load_path(path)
    with pytest.raises(LoadError) as cached:
        load_graph(path, tmp_path)
    assert (cached.value.code, cached.value.message) == (direct.value.code, direct.value.message)
    assert _entries(tmp_path) == []


def test_a_workspace_where_nothing_can_be_written_still_loads(tmp_path: Path) -> None:
    path = _graph(tmp_path)
    (tmp_path / ".rein").write_text("not a folder")  # the cache folder cannot be made
    assert load_graph(path, tmp_path) == load_path(path).data
