"""rein's checks of each document of the bundle: every refusal names its specific reason."""

from __future__ import annotations

from typing import Any

import pytest
from spec_bundle import good

from rein.spec.documents import check
from rein.spec.paths import NAMES


def problems(name: str, change: Any = None, **kw: Any) -> list[str]:
    bundle = good()
    if change is not None:
        change(bundle)
    before = {n: bundle[n] for n in NAMES[:NAMES.index(name)]}
    return check(name, bundle[name], before, **kw)


@pytest.mark.parametrize("name", NAMES)
def test_the_good_bundle_is_accepted(name: str) -> None:
    assert problems(name) == []


def test_a_document_that_is_not_an_object_is_refused() -> None:
    assert check("charter", [], {}) == [("specs/active/10-charter.json must be a JSON object "
                                        "(see the shape in the instruction)")]


def test_a_document_before_its_predecessors_is_refused() -> None:
    assert check("design", good()["design"], {"charter": good()["charter"]}) == [
        ("specs/active/20-requirements.json must be written (and accepted) before "
        "specs/active/25-design.json")]


def test_structure_missing_keys_and_empty_texts() -> None:
    def change(b: dict[str, Any]) -> None:
        del b["charter"]["non_goals"]
        b["charter"]["stakeholders"] = [{"name": "", "interest": "x"}]
    assert problems("charter", change) == [
        'the charter needs "non_goals", a list of non-empty strings',
        'the charter, stakeholders[0] needs a non-empty "name"']


def test_a_misspelt_or_unknown_key_is_named_with_the_nearest_key_of_the_shape() -> None:
    def change(b: dict[str, Any]) -> None:
        b["design"]["interfaces"][0]["between"] = b["design"]["interfaces"][0].pop(
            "components")
        b["design"]["decisions"][0]["reasons"] = b["design"]["decisions"][0].pop("reason")
        b["design"]["notes"] = "x"
    found = problems("design", change)
    assert ("specs/active/25-design.json: decisions[0]: unknown key 'reasons' (did you mean "
            "'reason'?)") in found
    assert ("specs/active/25-design.json: interfaces[0]: unknown key 'between' (the keys are "
            "components, description, id, name)") in found
    assert ("specs/active/25-design.json: unknown key 'notes' (the keys are components, "
            "data, decisions, interfaces)") in found


@pytest.mark.parametrize("name", NAMES)
def test_every_key_of_the_documented_shape_is_known(name: str) -> None:
    import json
    import re

    from rein.spec.documents import KEYS, SHAPES

    shape = json.loads(re.split(r"\n(?=[A-Z])", SHAPES[name])[0])
    assert set(shape) == KEYS[name][""]
    for key, value in shape.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            assert {k for item in value for k in item} <= KEYS[name][key], key


def test_a_requirement_without_a_fit_criterion_is_not_testable() -> None:
    def change(b: dict[str, Any]) -> None:
        del b["requirements"]["requirements"][1]["fit_criterion"]
    assert problems("requirements", change) == [
        ('the requirements, requirements[1] (FR-2) needs a non-empty "fit_criterion" (how a '
        "test decides it is met: a requirement nobody can test is not a requirement yet)")]


def test_ids_have_their_pattern_and_are_unique() -> None:
    def change(b: dict[str, Any]) -> None:
        reqs = b["requirements"]["requirements"]
        reqs[1]["id"] = "FR-1"
        reqs[2]["id"] = "NFR-3"  # functional, so FR-n
    assert problems("requirements", change) == [
        ("the requirements, requirements[2] (NFR-3): a functional id looks like FR-1, not "
        "'NFR-3'"),
        "id FR-1 is used 2 times in specs/active/20-requirements.json; ids are unique"]


def test_every_requirement_is_traced_to_an_acceptance_check() -> None:
    def change(b: dict[str, Any]) -> None:
        b["acceptance"]["checks"] = b["acceptance"]["checks"][:1]
    assert problems("acceptance", change) == [
        ("requirement(s) FR-2, FR-3 are traced to no acceptance check: every requirement "
        "needs at least one")]


def test_a_dangling_reference_is_named() -> None:
    def change(b: dict[str, Any]) -> None:
        b["acceptance"]["checks"][0]["requirements"] = ["FR-1", "FR-9"]
        b["requirements"]["requirements"][0]["constraints"] = ["C-7"]
    assert problems("acceptance", change) == [
        ('the acceptance checks, checks[0] (AC-1): FR-9 in "requirements" does not exist '
        "(a dangling reference)")]
    assert problems("requirements", change) == [
        ('the requirements, requirements[0] (FR-1): C-7 in "constraints" does not exist (a '
        "dangling reference)")]


def test_a_decision_keeps_its_reason_and_every_function_has_a_component() -> None:
    def change(b: dict[str, Any]) -> None:
        b["design"]["decisions"][0]["reason"] = " "
        b["design"]["components"][1]["requirements"] = ["FR-1"]
    assert problems("design", change) == [
        ('the design, decisions[0] (D-1) needs a non-empty "reason" (a decision keeps its '
        "reason, so a later change can weigh it)"),
        ("functional requirement(s) FR-3 are allocated to no component: name them in a "
        "component's \"requirements\"")]


def test_open_questions_are_listed_and_no_tbd_is_left_behind() -> None:
    def change(b: dict[str, Any]) -> None:
        del b["readiness"]["open_questions"]
        b["design"]["components"][0]["responsibility"] = "TBD"
    assert problems("readiness", change) == [
        ('the readiness review must list the open questions ("open_questions": [] when '
        "there is none)")]
    assert problems("design", change) == [
        ("specs/active/25-design.json: components[0].responsibility says 'TBD': list it as "
        "an open question in the readiness review, with the assumption made meanwhile, "
        "instead")]


def test_every_requirement_is_served_by_a_slice_and_the_plan_is_devs() -> None:
    def change(b: dict[str, Any]) -> None:
        slices = b["readiness"]["slices"]
        slices[2]["serves"] = ["FR-1"]
        slices[0]["depends_on"] = ["table"]
    assert problems("readiness", change) == [
        "requirement(s) FR-2 are served by no slice: name each in a slice's \"serves\"",
        ("the development plan of the slices is refused: the dependencies form a cycle "
        "through c_to_f, table")]

    def cycle(b: dict[str, Any]) -> None:
        b["readiness"]["slices"][0]["depends_on"] = ["table"]
    assert problems("readiness", cycle) == [
        ("the development plan of the slices is refused: the dependencies form a cycle "
        "through c_to_f, table")]


def test_published_ids_stay_or_are_retired_and_never_reused() -> None:
    published = ["FR-1", "FR-2", "FR-3"]

    def drop(b: dict[str, Any]) -> None:
        del b["requirements"]["requirements"][2]
    assert problems("requirements", drop, published=published) == [
        ("id(s) FR-3 were published in specs/active/20-requirements.json and are gone: keep "
        'them, or list them in "retired"')]

    def retire(b: dict[str, Any]) -> None:
        del b["requirements"]["requirements"][2]
        b["requirements"]["retired"] = ["FR-3"]
    assert problems("requirements", retire, published=published) == []

    def reuse(b: dict[str, Any]) -> None:
        b["requirements"]["retired"] = ["FR-3"]
    assert problems("requirements", reuse, published=published) == [
        ("FR-3 is retired and used again: a retired id is never reused; give the "
        "requirement a new id")]


def test_slices_of_the_wrong_types_are_refused_with_reasons_not_a_crash() -> None:
    def change(b: dict[str, Any]) -> None:
        slices = b["readiness"]["slices"]
        slices[0]["serves"] = 5
        slices[0]["decisions"] = "D-1"
        slices[1]["depends_on"] = "c_to_f"
        slices[2]["files"] = {"a": 1}
        slices[2]["id"] = "Not An Id"
    assert problems("readiness", change) == [
        "the readiness review, slices[0] (c_to_f): \"serves\" must be a list of ids",
        "the readiness review, slices[0] (c_to_f): \"decisions\" must be a list of ids",
        "the readiness review, slices[2] (Not An Id): files must be a list of paths",
        "requirement(s) FR-1 are served by no slice: name each in a slice's \"serves\"",
        ("the development plan of the slices is refused: feature 'table': depends_on must "
        "be a list of feature ids"),
        ("the development plan of the slices is refused: feature #3 needs an id of "
        "lowercase letters, digits, - or _ (at most 40), not 'Not An Id'")]


@pytest.mark.parametrize("name", NAMES)
def test_every_list_of_the_wrong_type_is_a_reason_not_a_crash(name: str) -> None:
    bundle = good()
    doc = {key: 5 for key in bundle[name]}
    before = {n: bundle[n] for n in NAMES[:NAMES.index(name)]}
    found = check(name, doc, before)
    assert found and all(isinstance(p, str) for p in found)


def test_the_readiness_check_reads_earlier_documents_edited_into_any_shape() -> None:
    bundle = good()
    before = {n: bundle[n] for n in NAMES[:-1]}
    before["requirements"]["requirements"][0] = {"id": "FR-1", "constraints": 7}
    before["design"]["decisions"][0] = {"id": "D-1", "requirements": "FR-1"}
    before["acceptance"]["checks"][0] = {"id": "AC-1", "requirements": 3}
    assert check("readiness", bundle["readiness"], before) == []  # not re-checked: no crash
