"""What a newcomer trips on at the ``inquiry`` command line (issue 39).

Each test runs the command as a person would (in process, or as a real
process where the terminal or a pipe matters) and checks what they see:
the exit status, the one line on stderr, and what is (and is not) written.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import orjson
import pytest
from run_helpers import TOUR_ANSWERS, TOUR_SCENARIO, cli

from coordinator import Conversation, save_conversation
from coordinator.cli._check import TURN_MARKER
from coordinator.cli._main import main
from machines import ChatRequest, ToolCallRequest, TurnStart

if TYPE_CHECKING:
    from pathlib import Path

    from machines import JsonValue


def _tour(conversation: Path, *more: str) -> tuple[str | Path, ...]:
    """`inquiry run` of the tour into ``conversation``, answered by its file, no terminal."""
    return ("run", TOUR_SCENARIO, "--answers", TOUR_ANSWERS, "--no-tty", "-c", conversation, *more)


def test_a_conversation_whose_parent_is_missing_is_refused_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """-c a/b/conv with a/ missing: exit 2, the first missing parent named, nothing created."""
    target = tmp_path / "missing" / "deep" / "conv"
    status, out, err = cli(*_tour(target), capsys=capsys)
    assert status == 2
    assert out == ""
    assert err == (
        f"inquiry: {target}: cannot be created: its parent {target.parent} is missing "
        f"({tmp_path / 'missing'} does not exist); create it, or give --parents to create the "
        "missing directories too; nothing was written\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_parents_creates_the_missing_directories_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--parents: the conversation and the directories above it are created, as mkdir -p."""
    target = tmp_path / "missing" / "deep" / "conv"
    status, _, _ = cli(*_tour(target, "--parents"), capsys=capsys)
    assert status == 0
    assert (target / "events.json").is_file()


def test_a_parent_that_is_a_file_is_named_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A parent that is a file: exit 2, said to be no directory (--parents cannot help)."""
    (tmp_path / "file").write_text("x")
    target = tmp_path / "file" / "conv"
    status, _, err = cli(*_tour(target), capsys=capsys)
    assert status == 2
    assert f"({tmp_path / 'file'} is not a directory); nothing was written" in err
    assert "--parents" not in err


def test_a_conversation_in_an_existing_directory_is_created_as_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """-c conv in a directory that exists: created, no flag needed."""
    status, _, _ = cli(*_tour(tmp_path / "conv"), capsys=capsys)
    assert status == 0
    assert (tmp_path / "conv" / "events.json").is_file()


def _usage_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """What `inquiry ARGS` says on stderr when argparse refuses them (exit 2)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        main(list(args), out=io.StringIO())
    assert stopped.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("--cont", "--continue-turn"),
        ("--new", "--new-turn"),
        ("--conv", "--conversation"),
        ("--contine-turn", "--continue-turn"),
    ],
)
def test_a_flag_is_never_taken_by_its_prefix_and_the_nearest_is_named(
    capsys: pytest.CaptureFixture[str], typed: str, meant: str
) -> None:
    """A prefix or a typo of a run flag: refused in run's own usage, the nearest flag named."""
    err = _usage_error(capsys, "run", "s.toml", "-c", "conv", typed)
    assert err.startswith("usage: inquiry run ")
    assert err.endswith(
        f"inquiry run: error: unrecognized arguments: {typed} (did you mean {meant}?)\n"
    )


def test_every_subcommand_refuses_abbreviations(capsys: pytest.CaptureFixture[str]) -> None:
    """Each subcommand refuses a prefix (check --js, export --out) in its own usage."""
    for args in (["check", "--js", "p"], ["sanitize", "--dry", "p"], ["export", "p", "--out"]):
        err = _usage_error(capsys, *args)
        assert err.startswith(f"usage: inquiry {args[0]} ")
        typed = args[2] if args[0] == "export" else args[1]
        assert f"inquiry {args[0]}: error: unrecognized arguments: {typed}" in err


def test_an_unknown_top_level_flag_names_the_nearest(capsys: pytest.CaptureFixture[str]) -> None:
    """The flag --versio is refused, --version named; flags after the command are its own."""
    err = _usage_error(capsys, "--versio")
    assert err.endswith(
        "inquiry: error: unrecognized arguments: --versio (did you mean --version?)\n"
    )


def test_flags_spelled_in_full_and_joined_still_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--conversation=DIR and joined short flags (-vc DIR) parse as before."""
    played = ("run", TOUR_SCENARIO, "--answers", TOUR_ANSWERS, "--no-tty")
    for spelled in (("-vc", tmp_path / "a"), (f"--conversation={tmp_path / 'b'}",)):
        assert cli(*played, *spelled, capsys=capsys)[0] == 0
    assert (tmp_path / "a" / "events.json").is_file()
    assert (tmp_path / "b" / "events.json").is_file()


def _embedders_turn(directory: Path, marker: dict[str, JsonValue] | None = None) -> Path:
    """A conversation an embedder wrote (no scenario noted), its last turn blocked on a call.

    With ``marker``, the turn is noted as ``inquiry run`` notes a scenario's.
    """
    conversation = Conversation.new(metadata={"title": "embedded"}, base_config={})
    conversation.stream.append(
        TurnStart(), metadata={TURN_MARKER: marker} if marker is not None else {}
    )
    conversation.stream.append(ChatRequest(content="hi"))
    conversation.stream.append(ToolCallRequest(id="call_1", name="fs", arguments={}))
    save_conversation(conversation, directory)
    conversation.close()
    return directory


def test_check_names_what_an_embedder_calls_for_a_turn_no_scenario_played(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An embedder's unfinished turn: check names continue_turn, not inquiry run."""
    directory = _embedders_turn(tmp_path / "conv")
    status, out, _ = cli("check", directory, capsys=capsys)
    assert status == 3
    assert "inquiry run SCENARIO" not in out
    assert (
        "  not played by inquiry run (no scenario recorded): an embedder continues it with "
        "ToolCoordinator.continue_turn(find_incomplete_turn(conversation.stream))"
    ) in out
    status, out, _ = cli("check", directory, "--json", capsys=capsys)
    assert orjson.loads(out)["incomplete_turn"]["scenario"] is None


def test_check_offers_continue_turn_for_a_turn_inquiry_run_played(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A turn inquiry run noted as a scenario's: check offers `inquiry run --continue-turn`."""
    directory = _embedders_turn(tmp_path / "conv", marker={"scenario": "s.toml", "turn": 1})
    status, out, _ = cli("check", directory, capsys=capsys)
    assert status == 3
    assert f"continue it: inquiry run SCENARIO [--answers FILE] --conversation {directory} " in out
    assert "an embedder" not in out
    status, out, _ = cli("check", directory, "--json", capsys=capsys)
    assert orjson.loads(out)["incomplete_turn"]["scenario"] == "s.toml"
