"""The provider-neutral parts of the model backend: parsing, wording, requests.

No network here: answers are parsed from ``answer_inquiry`` arguments, the
question is worded for the model, and inquiry requests are built from a
provider view exactly as RFD 033 describes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from coordinator.adapters.providers import (
    ANSWER_INQUIRY,
    ANSWER_INQUIRY_OUTSIDE_INQUIRY,
    ANSWER_INQUIRY_TOOL,
    AnswerRejectedError,
    ModelReply,
    ReplyToolCall,
    ToolChoice,
    ToolDefinition,
    extract_answer,
    inquiry_request,
    parse_answer,
    question_message,
    turn_request,
    turn_tools,
)
from coordinator.adapters.providers._requests import (
    CallNotOpenError,
    after_rejection,
    open_tool_calls,
)
from coordinator.driver._backend import InquiryTask
from coordinator.stream._stream import ConversationStream, ProviderView
from machines import (
    AnswerType,
    ChatRequest,
    ChatResponse,
    JsonValue,
    Question,
    RecordError,
    SelectOption,
    ToolCallRequest,
    ToolCallResponse,
)

SYSTEM = ("You are a careful coding agent.",)
EDIT = ToolDefinition(
    name="fs_modify_file",
    description="Replace text in a file.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)
SELECT = AnswerType.select(["fast", "safe", "Safe mode"])

# RFD 033, "The answer_inquiry tool", verbatim.
RFD_033_TOOL = json.loads(
    """
{
  "name": "answer_inquiry",
  "description": "Answer a question from a tool that needs additional input. Call this tool when the system indicates a tool requires your input. Use the inquiry_id from the question and provide your answer as a JSON string.",
  "strict": true,
  "input_schema": {
    "type": "object",
    "properties": {
      "inquiry_id": {
        "type": "string",
        "description": "The inquiry ID from the question prompt."
      },
      "answer": {
        "type": "string",
        "description": "Your answer, formatted as instructed in the question prompt."
      }
    },
    "required": ["inquiry_id", "answer"],
    "additionalProperties": false
  }
}
"""  # noqa: E501 - the RFD's text, unwrapped
)


# ------------------------------------------------------------------ parsing


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("true", True), ("false", False), ("True", True), ("FALSE", False), (" tRuE\n", True)],
)
def test_booleans_parse_in_any_case(raw: str, expected: bool) -> None:
    """True and false are read whatever their case (and surrounding space)."""
    assert parse_answer(raw, AnswerType.boolean()) is expected


@pytest.mark.parametrize("raw", ["yes", "no", "1", "0", "", "truee", "true false", '"true"'])
def test_other_words_are_not_booleans(raw: str) -> None:
    """Anything but true/false is rejected, and the reason says what is allowed."""
    with pytest.raises(AnswerRejectedError) as caught:
        parse_answer(raw, AnswerType.boolean())
    assert repr(raw) in caught.value.reason
    assert "true or false" in caught.value.reason


@pytest.mark.parametrize("raw", ["fast", "safe", "Safe mode"])
def test_a_select_answer_is_an_option_value(raw: str) -> None:
    """An option value, exactly as listed, is the answer."""
    assert parse_answer(raw, SELECT) == raw


@pytest.mark.parametrize("raw", ["Fast", "safe ", " safe", "safe mode", "", "fast, safe"])
def test_a_select_answer_must_match_exactly(raw: str) -> None:
    """Case, spacing and partial matches are rejected; the reason lists the options."""
    with pytest.raises(AnswerRejectedError) as caught:
        parse_answer(raw, SELECT)
    assert "fast, safe, Safe mode" in caught.value.reason


@pytest.mark.parametrize("raw", ["", "  padded  ", "true", "multi\nline", "ünïcödé"])
def test_text_is_taken_as_it_is(raw: str) -> None:
    """A text answer is returned unchanged."""
    assert parse_answer(raw, AnswerType.text()) == raw


def test_a_secret_is_never_parsed() -> None:
    """Parsing for a secret question refuses outright."""
    with pytest.raises(ValueError, match="secret"):
        parse_answer("hunter2", AnswerType.secret())


def test_a_long_bad_answer_is_shortened_in_the_reason() -> None:
    """The reason quotes the start of a long bad answer, not all of it."""
    with pytest.raises(AnswerRejectedError) as caught:
        parse_answer("x" * 5000, AnswerType.boolean())
    assert len(caught.value.reason) < 400


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        (None, "the arguments were not a JSON object"),
        ({"answer": "true"}, "missing inquiry_id"),
        ({"inquiry_id": 7, "answer": "true"}, "inquiry_id must be a string"),
        (
            {"inquiry_id": "call_2.q.1", "answer": "true"},
            "inquiry_id mismatch: expected 'call_1.q.1', got 'call_2.q.1'",
        ),
        ({"inquiry_id": "call_1.q.1"}, "missing answer"),
        ({"inquiry_id": "call_1.q.1", "answer": True}, "answer must be a string"),
        ({"inquiry_id": "call_1.q.1", "answer": "sure"}, "invalid answer 'sure'"),
    ],
)
def test_bad_arguments_are_rejected_with_a_reason(
    arguments: dict[str, Any] | None, reason: str
) -> None:
    """Wrong or missing inquiry_id or answer is an extraction error that says which."""
    with pytest.raises(AnswerRejectedError) as caught:
        extract_answer(arguments, "call_1.q.1", AnswerType.boolean())
    assert reason in caught.value.reason


def test_good_arguments_yield_the_answer() -> None:
    """The answer of matching arguments is parsed by the answer type."""
    arguments: dict[str, JsonValue] = {"inquiry_id": "call_1.q.1", "answer": "safe"}
    assert extract_answer(arguments, "call_1.q.1", SELECT) == "safe"


# --------------------------------------------------------------------- tools


def test_answer_inquiry_is_defined_as_in_rfd_033() -> None:
    """The built-in tool's name, description, strictness and schema are the RFD's."""
    assert ANSWER_INQUIRY == RFD_033_TOOL["name"] == ANSWER_INQUIRY_TOOL.name
    assert ANSWER_INQUIRY_TOOL.description == RFD_033_TOOL["description"]
    assert ANSWER_INQUIRY_TOOL.strict is True
    assert ANSWER_INQUIRY_TOOL.parameters == RFD_033_TOOL["input_schema"]


def test_every_turn_with_tools_carries_answer_inquiry() -> None:
    """The embedder's tools come first, then answer_inquiry, once."""
    assert turn_tools([EDIT]) == (EDIT, ANSWER_INQUIRY_TOOL)
    assert turn_tools([EDIT, ANSWER_INQUIRY_TOOL]) == (EDIT, ANSWER_INQUIRY_TOOL)


def test_a_turn_without_tools_carries_none() -> None:
    """No enabled tools, no answer_inquiry either."""
    assert turn_tools([]) == ()


def test_answer_inquiry_cannot_be_redefined() -> None:
    """An embedder tool named answer_inquiry that is not the built-in is refused."""
    impostor = ToolDefinition(name=ANSWER_INQUIRY, parameters={"type": "object"})
    with pytest.raises(ValueError, match="reserved"):
        turn_tools([EDIT, impostor])


def test_a_definition_keeps_its_own_copy_of_the_schema() -> None:
    """Changing the dict a definition was made from does not change the definition."""
    schema: dict[str, JsonValue] = {"type": "object", "properties": {}}
    tool = ToolDefinition(name="t", parameters=schema)
    schema["properties"] = {"x": {"type": "string"}}
    assert tool.parameters == {"type": "object", "properties": {}}


def test_a_definition_needs_an_object_schema() -> None:
    """A schema that is not a JSON object is refused at construction."""
    with pytest.raises(RecordError):
        ToolDefinition(name="t", parameters=["not", "an", "object"])  # type: ignore[arg-type]


def test_the_outside_inquiry_error_names_the_tool() -> None:
    """The error for a stray answer_inquiry call says what the tool is for."""
    assert ANSWER_INQUIRY in ANSWER_INQUIRY_OUTSIDE_INQUIRY
    assert "no question is pending" in ANSWER_INQUIRY_OUTSIDE_INQUIRY


# ------------------------------------------------------------------ wording


def make_task(question: Question, view: ProviderView | None = None) -> InquiryTask:
    """An inquiry from fs_modify_file's call ``call_1``."""
    if view is None:
        stream = ConversationStream()
        stream.append(ChatRequest(content="Tidy the repo."))
        stream.append(ToolCallRequest(id="call_1", name="fs_modify_file", arguments={}))
        view = stream.provider_view(SYSTEM)
    return InquiryTask(
        inquiry_id=f"call_1.{question.id}.1",
        tool_call_id="call_1",
        tool_name="fs_modify_file",
        question=question,
        view=view,
    )


def test_the_question_message_says_everything_needed() -> None:
    """It names the tool, gives context and question, the form, the id, and asks for the call."""
    question = Question.boolean("backup", "Create backup files?", context="--- a/x\n+++ b/x")
    message = question_message(make_task(question))
    assert "The tool `fs_modify_file` requires additional input." in message
    assert "--- a/x\n+++ b/x" in message
    assert "Create backup files?" in message
    assert "Answer exactly `true` or `false`." in message
    assert "`call_1.backup.1`" in message
    assert "Call the `answer_inquiry` tool" in message
    assert message.index("--- a/x") < message.index("Create backup files?")


def test_a_select_question_lists_its_options() -> None:
    """Each option is listed by value, with its description when it has one."""
    question = Question.select(
        "mode", "Which mode?", [SelectOption(value="fast", description="skip checks"), "safe"]
    )
    message = question_message(make_task(question))
    assert "Answer with exactly one of these options:\n- `fast`: skip checks\n- `safe`" in message


def test_a_text_question_asks_for_free_form_text() -> None:
    """A text question asks for free-form text."""
    message = question_message(make_task(Question.text_input("name", "New name?")))
    assert "Answer with free-form text." in message


# ------------------------------------------------------------------ requests


def test_the_inquiry_request_closes_the_paused_call_and_asks() -> None:
    """The copy gains the paused result for the asking call, then the question."""
    task = make_task(Question.boolean("backup", "Create backup files?"))
    request = inquiry_request(task, [EDIT])
    base = turn_request(task.view, [EDIT])
    assert request.events[: len(base.events)] == base.events
    paused, asked = request.events[len(base.events) :]
    assert paused == ToolCallResponse(
        id="call_1", content="Tool paused: Create backup files?", is_error=False
    )
    assert isinstance(asked, ChatRequest)
    assert asked.content == question_message(task)
    assert request.tool_choice == ToolChoice.tool(ANSWER_INQUIRY)
    assert base.tool_choice == ToolChoice.auto()


def test_the_inquiry_request_shares_tools_and_system_with_the_turn() -> None:
    """Tools and system parts of the inquiry equal those of the turn's normal request."""
    task = make_task(Question.boolean("backup", "Create backup files?"))
    request = inquiry_request(task, [EDIT])
    base = turn_request(task.view, [EDIT])
    assert request.tools == base.tools == (EDIT, ANSWER_INQUIRY_TOOL)
    assert request.system_parts == base.system_parts == SYSTEM


def test_the_view_is_not_changed_by_asking() -> None:
    """Closing the call happens on a copy: the task's view is as it was."""
    task = make_task(Question.boolean("backup", "Create backup files?"))
    before = task.view.events
    inquiry_request(task, [EDIT])
    assert task.view.events == before
    assert len(before) == 2


def test_other_running_calls_are_closed_on_the_copy() -> None:
    """A parallel call still running gets a placeholder result so the provider sees pairs."""
    stream = ConversationStream()
    stream.append(ChatRequest(content="Do both."))
    stream.append(ToolCallRequest(id="call_0", name="run_tests", arguments={}))
    stream.append(ToolCallRequest(id="call_1", name="fs_modify_file", arguments={}))
    stream.append(ToolCallRequest(id="call_2", name="fs_read_file", arguments={}))
    stream.append(ToolCallResponse(id="call_2", content="file text", is_error=False))
    task = make_task(Question.boolean("backup", "Backup?"), stream.provider_view(SYSTEM))
    request = inquiry_request(task, [EDIT])
    assert open_tool_calls(request.events) == []
    added = request.events[5:]
    assert added[:2] == (
        ToolCallResponse(
            id="call_0",
            content="Tool still running: its result is not available yet.",
            is_error=False,
        ),
        ToolCallResponse(id="call_1", content="Tool paused: Backup?", is_error=False),
    )


def test_a_reused_call_id_closes_the_open_call() -> None:
    """When an id was used by an earlier, finished call, the open one is the one paused."""
    stream = ConversationStream()
    stream.append(ToolCallRequest(id="call_1", name="fs_modify_file", arguments={}))
    stream.append(ToolCallResponse(id="call_1", content="done", is_error=False))
    stream.append(ChatRequest(content="Again."))
    stream.append(ToolCallRequest(id="call_1", name="fs_modify_file", arguments={}))
    task = make_task(Question.boolean("backup", "Backup?"), stream.provider_view(SYSTEM))
    request = inquiry_request(task, [EDIT])
    assert request.events[4] == ToolCallResponse(
        id="call_1", content="Tool paused: Backup?", is_error=False
    )
    assert open_tool_calls(request.events) == []


def test_a_call_that_is_not_open_cannot_be_asked_about() -> None:
    """Building an inquiry for a call already answered is refused."""
    stream = ConversationStream()
    stream.append(ToolCallRequest(id="call_1", name="fs_modify_file", arguments={}))
    stream.append(ToolCallResponse(id="call_1", content="done", is_error=False))
    task = make_task(Question.boolean("backup", "Backup?"), stream.provider_view(SYSTEM))
    with pytest.raises(CallNotOpenError, match="call_1"):
        inquiry_request(task, [EDIT])


def test_a_turn_without_tools_still_offers_answer_inquiry_to_an_inquiry() -> None:
    """Should a toolless turn ask anyway, the inquiry request carries answer_inquiry."""
    task = make_task(Question.boolean("backup", "Backup?"))
    assert inquiry_request(task, []).tools == (ANSWER_INQUIRY_TOOL,)


def test_a_rejection_grows_the_request_by_reply_results_and_feedback() -> None:
    """A rejection keeps the events and adds the reply, a result per call, and the feedback."""
    task = make_task(Question.boolean("backup", "Backup?"))
    request = inquiry_request(task, [EDIT])
    bad = ReplyToolCall(
        id="t1", name=ANSWER_INQUIRY, arguments={"inquiry_id": task.inquiry_id, "answer": "y"}
    )
    extra = ReplyToolCall(id="t2", name="fs_modify_file", arguments=None)
    reply = ModelReply(text="Let me answer.", tool_calls=(bad, extra))
    grown = after_rejection(request, reply, bad, task, "invalid answer 'y'")
    assert grown.events[: len(request.events)] == request.events
    assert grown.tools == request.tools
    assert grown.tool_choice == request.tool_choice
    said, call_1, call_2, result_1, result_2, feedback = grown.events[len(request.events) :]
    assert said == ChatResponse.message("Let me answer.")
    assert call_1 == ToolCallRequest(
        id="t1", name=ANSWER_INQUIRY, arguments=dict(bad.arguments or {})
    )
    assert call_2 == ToolCallRequest(id="t2", name="fs_modify_file", arguments={})
    assert result_1 == ToolCallResponse(
        id="t1", content="Rejected: invalid answer 'y'.", is_error=True
    )
    assert isinstance(result_2, ToolCallResponse)
    assert result_2.id == "t2"
    assert result_2.is_error
    assert isinstance(feedback, ChatRequest)
    assert "was rejected: invalid answer 'y'" in feedback.content
