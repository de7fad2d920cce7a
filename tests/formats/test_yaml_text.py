"""The YAML rein writes for itself reads back, through rein's own loader, as it was written.

rein reads YAML by the 1.2 core schema, PyYAML writes by 1.1: a string such as a short
commit id ``18e4923`` was written plain and read back as a number (here, one too large for a
double: the feature graph `rein dev` wrote did not validate).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rein.dev.graphs import write_graph
from rein.formats import yaml_text
from rein.formats.loader import load_path, load_text

# Strings that YAML 1.2 reads as numbers and YAML 1.1 (PyYAML) does not, and some that
# both read as something else; each must come back a string.
NUMBER_LIKE = ["18e4923", "1099e89", "1e3", "2E-5", "0o17", "0x1F", ".5", "-.5e3", "+12",
               "12", "1.5", ".inf", "-.inf", ".nan", "007", "1_000", "true", "False",
               "null", "~", "", " padded ", "12:30"]


def test_pyyaml_alone_writes_a_commit_id_that_rein_reads_as_a_number() -> None:
    """The defect itself: without rein's writer the id is written plain."""
    text = yaml.safe_dump({"commit": "18e4923"})
    assert text == "commit: 18e4923\n"
    with pytest.raises(Exception, match="too large for a double"):
        load_text(text)


@pytest.mark.parametrize("value", NUMBER_LIKE)
def test_a_number_like_string_reads_back_a_string(value: str) -> None:
    text = yaml_text.dump({"value": value, "in": [value]})
    assert load_text(text).data == {"value": value, "in": [value]}, text


def test_names_and_ids_stay_plain_and_values_keep_their_types() -> None:
    data = {"id": "feature_table", "sha": "a9f3e21", "n": 3, "x": 1.5, "ok": True,
            "none": None, "text": "two\nlines"}
    text = yaml_text.dump(data)
    assert "id: feature_table\n" in text and "sha: a9f3e21\n" in text
    assert load_text(text).data == data


def test_a_dev_graph_naming_a_numeric_looking_commit_loads(tmp_path: Path) -> None:
    data = {"ags_version": "1.0", "id": "g",
            "x-rein-dev": {"committed": [{"feature": "f_to_c", "commit": "18e4923"}]}}
    path = write_graph(tmp_path, "plan.agraph.yaml", data)
    assert load_path(path).data["x-rein-dev"]["committed"][0]["commit"] == "18e4923"


def test_the_words_stay_quoted_when_a_library_edits_pyyamls_resolvers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """PyYAML's table of implicit resolvers is one per process; the AGS reference validator,
    imported by the tests, pops the entries of words starting with y, n and o from it."""
    table = dict(yaml.resolver.Resolver.yaml_implicit_resolvers)
    for first in "nNtTfF~":
        table.pop(first, None)
    monkeypatch.setattr(yaml.resolver.Resolver, "yaml_implicit_resolvers", table)
    assert yaml.safe_dump({"v": "null"}) == "v: null\n"  # the edit took effect
    for word in ("null", "Null", "NULL", "~", "true", "False"):
        assert load_text(yaml_text.dump({"v": word})).data == {"v": word}


@pytest.mark.parametrize("value", ["a\x85b", "a\u2028b", "a\u2029b", "end\x85",
                                   "two\nlines\x85here"])
def test_a_line_break_yaml_knows_besides_newline_reads_back_as_written(value: str) -> None:
    """PyYAML writes NEL as it is in a quoted scalar, where a reader folds it to a space."""
    from rein.profiles.store import serialize

    data = {"value": value, "in": [value]}
    assert load_text(yaml_text.dump(data)).data == data
    assert load_text(serialize(data, "yaml")).data == data  # `|` blocks where they can be
