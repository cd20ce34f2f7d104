"""This project's own cancellation reasons, as a reader knowing only RFD 082's reasons reads them.

RFD 082 lists four reasons and a read-only landing pad, ``Unknown(String)``,
for any tag a build does not know: it is kept verbatim, re-serialized as it
was, and the Markdown export shows it as ``Cancelled (<tag>)``. The reader
below is that rule and nothing more (the RFD's ``Deserialize`` for
``InquiryResponse`` and its "Reader behavior"), so a conversation this
project writes is checked against the document, not against this project's
own decoder.
"""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
from coordinator_harness import payloads
from run_helpers import write

from coordinator import Conversation, export_markdown, load_conversation, save_conversation
from coordinator._text import REASON_SHOWN
from coordinator.cli._main import main
from coordinator.cli._run_continue import turn_marker
from coordinator.cli._scenario import load_scenario
from machines import (
    AnswerType,
    CancellationReason,
    Cancelled,
    ChatRequest,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
    ToolCallRequest,
    TurnStart,
    UnknownCancellationReason,
)

#: The reasons RFD 082's enum names; every other tag is ``Unknown(tag)``.
RFD_082_REASONS = ("user", "backend_error", "no_prompt_backend", "assistant_routing_denied")
DOCS = Path(__file__).resolve().parent.parent / "docs" / "rfd082-conformance.md"


@attrs.frozen
class Unknown:
    """RFD 082's ``CancellationReason::Unknown(String)``: the tag, verbatim."""

    tag: str


def rfd082_response(raw: dict[str, Any]) -> tuple[str, str, Any]:
    """An ``inquiry_response`` as RFD 082's ``Deserialize`` reads it: outcome, id, value."""
    outcome = raw.get("outcome")
    if outcome is None:  # the legacy flat form
        return "answered", raw["id"], raw["answer"]
    if outcome == "answered":
        return outcome, raw["id"], raw["answer"]
    if outcome == "redacted":
        return outcome, raw["id"], None
    assert outcome == "cancelled", f"not an RFD 082 outcome: {outcome!r}"
    tag = raw.get("reason", "user")
    return outcome, raw["id"], tag if tag in RFD_082_REASONS else Unknown(tag)


def rfd082_serialize(outcome: str, id: str, value: Any) -> dict[str, Any]:
    """RFD 082's ``Serialize``: the tagged form; ``Unknown(s)`` writes ``s`` verbatim."""
    if outcome == "answered":
        return {"outcome": outcome, "id": id, "answer": value}
    if outcome == "redacted":
        return {"outcome": outcome, "id": id}
    return {
        "outcome": outcome,
        "id": id,
        "reason": value.tag if isinstance(value, Unknown) else value,
    }


def rfd082_line(outcome: str, value: Any) -> str:
    """RFD 082's "Reader behavior" for the Markdown export."""
    if outcome == "answered":
        return f"Answer: {json.dumps(value, separators=(',', ':'))}"
    if outcome == "redacted":
        return "Answer: <redacted>"
    return f"Cancelled ({value.tag if isinstance(value, Unknown) else value})"


#: A local tool that asks one question (id and type from its options) every time it runs.
_ASKING_TOOL = """\
    import json, sys
    request = json.loads(sys.stdin.readline())
    options = request["options"]
    question = {"id": options["qid"], "text": "Again?", "answer_type": {"type": options["kind"]}}
    print(json.dumps({"type": "needs_input", "question": question}))
    """


@pytest.fixture(scope="module")
def own_reasons(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A conversation ``inquiry run`` wrote holding every reason RFD 082 does not define."""
    root = tmp_path_factory.mktemp("own_reasons")
    tool = write(root / "ask.py", _ASKING_TOOL)
    command = f'["{sys.executable}", "{tool}"]'
    scenario = write(
        root / "scenario.toml",
        f"""\
        [tools.loop]
        command = {command}
        run = "unattended"
        options = {{ qid = "q", kind = "text" }}
        questions.q.answer = "same"

        [tools.misfit]
        command = {command}
        run = "unattended"
        options = {{ qid = "ok", kind = "boolean" }}
        questions.ok.answer = "maybe"

        [[turns]]
        message = "go"

        [[turns.cycles]]
        calls = [{{ tool = "loop" }}, {{ tool = "misfit" }}]
        """,
    )
    directory = root / "conversation"
    argv = ["run", str(scenario), "--no-tty", "--conversation", str(directory)]
    assert main(argv, out=io.StringIO()) == 1  # both calls fail, as they are meant to
    # A second run of the loop that died while its question ("Before?") waited;
    # continued, the tool asks "Again?" instead: the waiting one is interrupted.
    again = write(root / "again.toml", scenario.read_text().replace('"go"', '"again"'))
    conversation = load_conversation(directory)
    stream = conversation.stream
    stream.append(TurnStart(), metadata=turn_marker(load_scenario(again), 0))
    stream.append(ChatRequest(content="again"))
    stream.append(ToolCallRequest(id="call_2_1_1", name="loop", arguments={}))
    stream.append(ToolCallRequest(id="call_2_1_2", name="misfit", arguments={}))
    before = InquiryQuestion(text="Before?", answer_type=AnswerType.text(), id="q")
    source = InquirySource.tool("loop")
    stream.append(InquiryRequest(id="call_2_1_1.q.1", source=source, question=before))
    save_conversation(conversation)
    conversation.close()
    argv = ["run", str(again), "--no-tty", "--conversation", str(directory), "--continue-turn"]
    assert main(argv, out=io.StringIO()) == 1
    return directory


def test_our_own_reasons_load_as_unknown_in_a_reader_of_rfd_082(own_reasons: Path) -> None:
    """Our own reasons (attempts_exhausted, invalid_static_answer, interrupted) land in Unknown."""
    raw = json.loads((own_reasons / "events.json").read_text())
    responses = [entry for entry in raw if entry["type"] == "inquiry_response"]
    read = [rfd082_response(entry) for entry in responses]
    unknown = {value.tag for outcome, _, value in read if isinstance(value, Unknown)}
    assert unknown == {"attempts_exhausted", "invalid_static_answer", "interrupted"}
    for entry, (outcome, inquiry_id, value) in zip(responses, read, strict=True):
        kept = {key: entry[key] for key in ("outcome", "id", "answer", "reason") if key in entry}
        assert rfd082_serialize(outcome, inquiry_id, value) == kept


def test_our_export_shows_each_response_as_a_reader_of_rfd_082_does(own_reasons: Path) -> None:
    """Every response line of our export is the line RFD 082's reader gives, own reasons too."""
    raw = json.loads((own_reasons / "events.json").read_text())
    expected = [
        rfd082_line(outcome, value)
        for outcome, _, value in (
            rfd082_response(entry) for entry in raw if entry["type"] == "inquiry_response"
        )
    ]
    text = export_markdown(load_conversation(own_reasons).stream)
    lines = [line for line in text.split("\n") if line.startswith(("Answer: ", "Cancelled ("))]
    assert lines == expected
    assert "Cancelled (attempts_exhausted)" in lines
    assert "Cancelled (invalid_static_answer)" in lines
    assert "Cancelled (interrupted)" in lines


def test_the_conformance_page_lists_every_reason_and_whose_it_is() -> None:
    """docs/rfd082-conformance.md has a row per reason this build writes, naming who defines it."""
    rows = dict(re.findall(r"^\| `([a-z_]+)` \| ([^|]+?) \|", DOCS.read_text(), re.MULTILINE))
    assert set(rows) == {reason.value for reason in CancellationReason}
    assert {tag for tag, origin in rows.items() if origin == "RFD 082"} == set(RFD_082_REASONS)
    assert rows["invalid_static_answer"] == "RFD 083"
    assert rows["attempts_exhausted"] == "this project"
    assert rows["interrupted"] == "this project"


def _declined_turn(directory: Path, tag: str) -> Path:
    """A conversation whose last turn's call waits on a question cancelled for ``tag``.

    Written by this project with a placeholder reason, which is then replaced
    in the file by ``tag``: no writer of ours ever writes an unknown reason.
    """
    conversation = Conversation.new(metadata={"title": "declined"})
    stream = conversation.stream
    stream.append(TurnStart())
    stream.append(ChatRequest(content="go"))
    stream.append(ToolCallRequest(id="c1", name="deploy", arguments={}))
    question = InquiryQuestion(text="Sure?", answer_type=AnswerType.boolean(), id="q")
    stream.append(
        InquiryRequest(id="c1.q.1", source=InquirySource.tool("deploy"), question=question)
    )
    stream.append(Cancelled(id="c1.q.1", reason=UnknownCancellationReason("placeholder")))
    save_conversation(conversation, directory)
    conversation.close()
    events = directory / "events.json"
    raw = events.read_bytes()
    assert raw.count(b'"reason": "placeholder"') == 1
    events.write_bytes(
        raw.replace(b'"reason": "placeholder"', b'"reason": ' + json.dumps(tag).encode())
    )
    return directory


def test_an_empty_reason_loads_as_unknown_and_is_written_back_as_it_was(tmp_path: Path) -> None:
    """RFD 082's reader: any tag it does not know, "" too, is Unknown(tag), kept verbatim."""
    source = _declined_turn(tmp_path / "conversation", "")
    conversation = load_conversation(source)
    (cancelled,) = payloads(conversation, Cancelled)
    assert cancelled.reason == UnknownCancellationReason("")
    assert cancelled.reason.as_str() == ""
    save_conversation(conversation, tmp_path / "copy")
    assert (tmp_path / "copy" / "events.json").read_bytes() == (
        source / "events.json"
    ).read_bytes()


def test_an_empty_reason_is_shown_as_a_pair_of_quotes(tmp_path: Path) -> None:
    """Export and check show "" for it, rather than nothing between the parentheses."""
    source = _declined_turn(tmp_path / "conversation", "")
    assert 'Cancelled ("")' in export_markdown(load_conversation(source).stream)
    out = io.StringIO()
    assert main(["check", str(source)], out=out) == 3  # the turn waits on its call
    assert 'its question was cancelled (""); it ends so' in out.getvalue()
    report = io.StringIO()
    main(["check", "--json", str(source)], out=report)
    (call,) = json.loads(report.getvalue())["incomplete_turn"]["open_calls"]
    assert call["declined"]["reason"] == ""  # JSON carries the tag itself


def test_export_and_check_show_an_unknown_reason_alike_escaped_and_cut(tmp_path: Path) -> None:
    """One rule for a reason's tag: escaped, and cut at 64 characters with an ellipsis."""
    tag = "\x1b[31m" + "x" * 100
    source = _declined_turn(tmp_path / "conversation", tag)
    # Cut at 64 characters of the tag as recorded, then escaped.
    shown = "\\x1b[31m" + "x" * (REASON_SHOWN - len("\x1b[31m")) + "\u2026"
    assert f"Cancelled ({shown})" in export_markdown(load_conversation(source).stream)
    out = io.StringIO()
    main(["check", str(source)], out=out)
    assert f"its question was cancelled ({shown}); it ends so" in out.getvalue()
    assert "x" * 100 not in out.getvalue()
    assert "\x1b" not in out.getvalue()
