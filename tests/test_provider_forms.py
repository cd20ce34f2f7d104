"""The model answers a form through answer_inquiry: its schema in the question, its answer held.

Each provider's official SDK talks to the local fake API; the question the
model is sent, and what it is told when its answer does not fit, are read
from the request bodies as the real API would receive them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from fake_api import PROVIDER_KITS, FakeAPI, ProviderKit, answer_args, make_task, run_answer

from coordinator.adapters.providers import (
    ANSWER_INQUIRY_TOOL,
    AnswerRejectedError,
    parse_answer,
)
from machines import DECLINE, AnswerType, Form, Question

if TYPE_CHECKING:
    from collections.abc import Iterator

FORM = Form.from_json_schema(
    {
        "type": "object",
        "properties": {
            "env": {"type": "string", "enum": ["dev", "prod"]},
            "replicas": {"type": "integer", "minimum": 1, "maximum": 5},
        },
        "required": ["env"],
    }
)
QUESTION = Question.form("release", "Where should it go?", FORM)


@pytest.fixture(params=PROVIDER_KITS, ids=lambda kit: kit.name)
def kit(request: pytest.FixtureRequest) -> ProviderKit:
    """Each provider in turn."""
    value: ProviderKit = request.param
    return value


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    """A running fake API server."""
    with FakeAPI() as server:
        yield server


def test_the_model_is_given_the_forms_schema_and_its_object_is_the_answer(
    kit: ProviderKit, api: FakeAPI
) -> None:
    """The question carries the form's JSON schema; the JSON object the model sends answers it."""
    sent = json.dumps({"env": "prod", "replicas": 3})
    api.reply(kit.tool_call("answer_1", "answer_inquiry", answer_args(sent)))
    assert run_answer(kit, api.base_url, make_task(QUESTION)) == {"env": "prod", "replicas": 3}
    (request,) = api.requests
    asked = kit.user_text(kit.conversation(request.text())[-1])
    assert asked is not None
    assert "Where should it go?" in asked
    assert json.dumps(FORM.json_schema(), indent=2) in asked
    assert f"exactly `{DECLINE}`" in asked
    # The tools are the turn's, unchanged by the form: the prompt cache holds.
    tools = json.loads(kit.tools_raw(request.text()))
    assert any(ANSWER_INQUIRY_TOOL.name in json.dumps(tool) for tool in tools)
    assert "replicas" not in kit.tools_raw(request.text())


def test_an_answer_that_does_not_fit_the_form_is_fed_back_and_retried(
    kit: ProviderKit, api: FakeAPI
) -> None:
    """An object breaking the form is refused, naming the field; the second answer fits."""
    api.reply(
        kit.tool_call("answer_1", "answer_inquiry", answer_args('{"env": "prod", "replicas": 9}')),
        kit.tool_call("answer_2", "answer_inquiry", answer_args(DECLINE)),
    )
    assert run_answer(kit, api.base_url, make_task(QUESTION)) == DECLINE
    second = api.requests[1]
    said = " ".join(
        text for raw in kit.conversation(second.text()) if (text := kit.user_text(raw)) is not None
    )
    assert "field 'replicas' must be a whole number from 1 to 5" in said


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("not json", "not a JSON object of the form's fields"),
        ("[1, 2]", "a form's answer must be an object"),
        ('{"replicas": 2}', "field 'env' is required"),
        ('{"env": "test"}', "field 'env' must be one of 'dev', 'prod'"),
    ],
)
def test_a_form_answer_is_parsed_and_held_to_the_form(raw: str, reason: str) -> None:
    """What the model sends as a form's answer: JSON, an object, each field fitting."""
    with pytest.raises(AnswerRejectedError) as caught:
        parse_answer(raw, AnswerType.form_of(FORM))
    assert reason in caught.value.reason
