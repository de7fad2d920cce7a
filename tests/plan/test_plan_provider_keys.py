"""The plan a person approves flags environment entries that hand a provider key to a worker."""

from __future__ import annotations

from plan_docs import fragment, graph, task

from rein.formats.ags.plan import NOTICE_PROVIDER_KEY, build_plan
from rein.formats.ags.render import render_text


def env(*names: str) -> dict[str, object]:
    return {"requirements": {"environment": list(names)}}


def flagged(plan: object) -> list[tuple[str, str]]:
    return [(n.pointer, n.message) for n in plan.notices  # type: ignore[attr-defined]
            if n.code == NOTICE_PROVIDER_KEY]


def test_a_built_in_provider_key_in_environment_is_flagged() -> None:
    plan = build_plan(graph({"a": task(**env("CI", "OPENAI_API_KEY")),
                             "b": task(**env("ANTHROPIC_API_KEY"))}))
    [(where_a, said_a), (where_b, said_b)] = flagged(plan)
    assert where_a == "/nodes/a/requirements/environment"
    assert said_a.startswith("node a hands OPENAI_API_KEY to its worker")
    assert "CI" not in said_a.split(" to its worker")[0]
    assert where_b == "/nodes/b/requirements/environment"
    assert "ANTHROPIC_API_KEY" in said_b
    text = render_text(plan)
    assert "PLAN009" in text and "OPENAI_API_KEY" in text


def test_configured_key_variables_secret_variables_and_api_key_names_are_flagged() -> None:
    doc = graph({"a": task(**env("GATEWAY_TOKEN", "REIN_SECRET_DEPLOY", "GROQ_API_KEY",
                                 "HOME"))})
    assert flagged(build_plan(doc))[0][1].startswith(
        "node a hands REIN_SECRET_DEPLOY, GROQ_API_KEY to its worker")
    [(_, said)] = flagged(build_plan(doc, key_variables=["GATEWAY_TOKEN"]))
    assert said.startswith("node a hands GATEWAY_TOKEN, REIN_SECRET_DEPLOY, GROQ_API_KEY to")


def test_defaults_and_nested_scopes_are_checked() -> None:
    body = fragment({"inner": task(**env("OPENAI_API_KEY"))})
    doc = graph({"a": task(), "loop": {"type": "loop", "title": "l", "description": "l",
                                       "loop": {"max_iterations": 2, "body": body}}},
                defaults=env("ANTHROPIC_API_KEY"))
    where = [p for p, _ in flagged(build_plan(doc))]
    assert "/nodes/a/requirements/environment" in where
    assert "/nodes/loop/loop/body/nodes/inner/requirements/environment" in where


def test_a_plain_environment_is_not_flagged() -> None:
    assert flagged(build_plan(graph({"a": task(**env("CI", "LANG", "PATH"))}))) == []
