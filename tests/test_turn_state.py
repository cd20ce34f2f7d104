"""The turn state: inquiry ids, and the two remember-for-the-turn caches."""

from __future__ import annotations

import pytest

from machines import MachineError, Question, SecretValue, TurnState

APPLY = Question.boolean("apply", "Apply?")
PASSPHRASE = Question.secret("passphrase", "Passphrase?")


def test_inquiry_ids_count_attempts_per_tool_call_and_question() -> None:
    """Ids are <tool_call_id>.<question_id>.<attempt>, the attempt counted per pair."""
    turn = TurnState()
    assert turn.allocate_inquiry_id("call_1", "apply") == "call_1.apply.1"
    assert turn.allocate_inquiry_id("call_1", "apply") == "call_1.apply.2"
    assert turn.allocate_inquiry_id("call_1", "other") == "call_1.other.1"
    assert turn.allocate_inquiry_id("call_2", "apply") == "call_2.apply.1"
    assert turn.attempts("call_1", "apply") == 2


def test_ids_stay_unique_when_dotted_parts_would_join_alike() -> None:
    """Call "a.b" asking "c" and call "a" asking "b.c" never share an id in a turn."""
    turn = TurnState()
    first = turn.allocate_inquiry_id("a.b", "c")
    second = turn.allocate_inquiry_id("a", "b.c")
    assert first == "a.b.c.1"
    assert second == "a.b.c.2"
    assert turn.allocate_inquiry_id("a.b", "c") == "a.b.c.3"


def test_a_new_turn_starts_counting_again() -> None:
    """Counters live in the turn state, so a fresh one per turn restarts at 1."""
    first = TurnState()
    first.allocate_inquiry_id("call_1", "apply")
    assert TurnState().allocate_inquiry_id("call_1", "apply") == "call_1.apply.1"


def test_tool_answers_and_permissions_live_in_separate_maps() -> None:
    """A permission decision never shows up as a tool answer, nor the other way round."""
    turn = TurnState()
    turn.remember_permission("fs_modify_file", "y")
    turn.remember_tool_answer("fs_modify_file", APPLY, value=False)
    assert dict(turn.remembered_permission_decisions) == {"fs_modify_file.__permission__": "y"}
    assert dict(turn.remembered_tool_answers) == {"fs_modify_file.apply": False}
    assert turn.remembered_permission("fs_modify_file") == "y"
    cached = turn.remembered_tool_answer("fs_modify_file", APPLY)
    assert cached is not None
    assert cached.value is False


def test_a_remembered_answer_never_answers_a_question_whose_parts_join_alike() -> None:
    """Tool "a.b" asking "c" and tool "a" asking "b.c" are different questions."""
    turn = TurnState()
    turn.remember_tool_answer("a.b", Question.boolean("c", "Delete all of /prod?"), value=True)
    assert turn.remembered_tool_answer("a", Question.boolean("b.c", "Enable telemetry?")) is None
    cached = turn.remembered_tool_answer("a.b", Question.boolean("c", "Delete all of /prod?"))
    assert cached is not None
    assert cached.value is True


def test_a_secret_is_never_written_to_the_cache() -> None:
    """Remembering an answer to a secret question, or a SecretValue, is refused."""
    turn = TurnState()
    with pytest.raises(MachineError, match="secret question 'passphrase'"):
        turn.remember_tool_answer("ssh", PASSPHRASE, "hunter2")
    with pytest.raises(MachineError, match="non-JSON"):
        turn.remember_tool_answer("ssh", APPLY, SecretValue("hunter2"))  # type: ignore[arg-type]
    assert dict(turn.remembered_tool_answers) == {}


def test_a_secret_question_never_reads_from_the_cache() -> None:
    """An entry under a question id that is now secret is bypassed on read."""
    turn = TurnState()
    turn.remember_tool_answer("ssh", Question.text_input("passphrase", "Passphrase?"), "old")
    assert turn.remembered_tool_answer("ssh", PASSPHRASE) is None


def test_permission_decisions_are_y_or_n() -> None:
    """Only 'y' and 'n' can be remembered as permission decisions."""
    with pytest.raises(MachineError, match="'y' or 'n'"):
        TurnState().remember_permission("fs", "Y")  # type: ignore[arg-type]


def test_the_caches_are_read_only_views() -> None:
    """The maps a turn state hands out cannot be written through."""
    turn = TurnState()
    with pytest.raises(TypeError):
        turn.remembered_tool_answers["fs.apply"] = True  # type: ignore[index]


def test_a_question_never_asked_has_no_attempts() -> None:
    """attempts() is 0 for a question no call asked, and counts only its own pair."""
    turn = TurnState()
    assert turn.attempts("call_1", "apply") == 0
    turn.allocate_inquiry_id("call_1", "other")
    turn.allocate_inquiry_id("call_2", "apply")
    assert turn.attempts("call_1", "apply") == 0
    assert turn.attempts("call_2", "apply") == 1


def test_a_remembered_permission_is_no_answer_to_a_question_of_the_same_name() -> None:
    """A Y on the permission prompt answers no question, not even one called __permission__."""
    turn = TurnState()
    turn.remember_permission("fs", "y")
    assert turn.remembered_tool_answer("fs", Question.boolean("__permission__", "Run?")) is None
    assert dict(turn.remembered_tool_answers) == {}


def test_a_remembered_answer_is_no_permission() -> None:
    """A Y to a question, even one called __permission__, never permits the tool to run."""
    turn = TurnState()
    turn.remember_tool_answer("fs", Question.boolean("__permission__", "Run?"), value=True)
    turn.remember_tool_answer("fs", APPLY, value=True)
    assert turn.remembered_permission("fs") is None
    assert dict(turn.remembered_permission_decisions) == {}


def test_a_remembered_choice_answers_only_a_question_that_still_offers_it() -> None:
    """A remembered choice is no answer to its question id asked with other options."""
    turn = TurnState()
    first = Question.select("branch", "Which branch?", ["main", "dev"])
    turn.remember_tool_answer("git_push", first, value="dev")
    cached = turn.remembered_tool_answer("git_push", first)
    assert cached is not None
    assert cached.value == "dev"
    other_options = Question.select("branch", "Which branch?", ["main", "release"])
    assert turn.remembered_tool_answer("git_push", other_options) is None


def test_a_remembered_permission_answers_only_its_own_tool() -> None:
    """Y or N remembered for one tool never answers another tool's permission prompt."""
    turn = TurnState()
    turn.remember_permission("fs_read_file", "y")
    turn.remember_permission("shell", "n")
    assert turn.remembered_permission("fs_read_file") == "y"
    assert turn.remembered_permission("shell") == "n"
    assert turn.remembered_permission("fs_modify_file") is None
