"""`[dev] tools`: rein's tools offered to a model worker serving the features (the driver
uses its own, so by default a feature node names none)."""

from __future__ import annotations

import pytest

from rein.dev.graphs import feature_node, settings_from, settings_params
from rein.dev.plan_check import Feature
from rein.dev.settings import load_settings
from rein.errors import ConfigError

FEATURE = Feature(id="f", title="F", description="d", priority=1, depends_on=(),
                  context={}, verify=None)


def test_no_tools_by_default_as_a_driver_needs_none() -> None:
    node = feature_node(FEATURE, command=("pytest",), settings=load_settings({}),
                        plan_id="p")
    assert "tools" not in node["requirements"]
    assert "shell:exec" not in node["requirements"]["permissions"]


def test_the_tools_a_person_sets_reach_the_feature_node() -> None:
    settings = load_settings({"tools": ["file_read", "file_write", "shell"]})
    node = feature_node(FEATURE, command=("pytest",), settings=settings, plan_id="p")
    assert node["requirements"]["tools"] == ["file_read", "file_write", "shell"]
    assert node["requirements"]["permissions"][-1] == "shell:exec"
    assert settings_from(settings_params(settings)) == settings  # as the plan check reads it


@pytest.mark.parametrize("value", ["shell", ["file_read", "rm"], [1]])
def test_a_bad_tools_value_is_refused(value: object) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings({"tools": value})
    assert caught.value.code == "DEV005" and "tools" in caught.value.message
