"""`inquiry run` and its inputs: seeding the workspace, answers that do not fit, odd names."""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path, PurePath
from typing import Any

import orjson
import pytest
from run_helpers import assert_paired, cli, every_byte, outcomes, responses, write

from coordinator import ConfigError, ScriptedPrompter
from coordinator.adapters._local_tools import LocalToolExecutor
from coordinator.adapters.providers import ProviderConfigError, backend_from_config
from coordinator.cli import _run_workspace
from coordinator.cli._answer_script import load_answer_script
from coordinator.cli._run import run_scenario
from coordinator.cli._run_players import WatchedPrompter
from coordinator.cli._run_progress import Progress
from coordinator.cli._run_result import RunError, RunOptions
from coordinator.cli._scenario import load_scenario
from coordinator.driver._prompting import QuestionAnswer
from coordinator.driver._toml_fields import check_keys
from coordinator.store._lock import LOCK_FILE
from machines import (
    CancellationReason,
    Cancelled,
    InquirySource,
    Question,
    ShowQuestion,
    parse_cancellation_reason,
)

#: A tool that asks the questions in its ``options``, one at a time, then succeeds.
ASKER = """
import json, sys
request = json.load(sys.stdin)
answers = request["answers"]
for question in request["options"].get("questions", []):
    if question["id"] not in answers:
        print(json.dumps({"type": "needs_input", "question": question}))
        sys.exit(0)
print(json.dumps({"type": "success", "content": "done"}))
"""

ONE_CALL = """
[[turns]]
message = "Go."
[[turns.cycles]]
calls = [{ tool = "t" }]
"""


def scenario(directory: Path, text: str = "", *, name: str = "scenario.toml") -> Path:
    """A scenario in ``directory``: ``text`` (dedented), then one call of ``t``, the asker."""
    asker = write(directory / "asker.py", ASKER)
    tool = f'[tools.t]\ncommand = ["python3", "{asker}"]\nrun = "unattended"\n'
    return write(directory / name, textwrap.dedent(text) + tool + ONE_CALL)


def run(
    scenario_file: Path,
    conversation: Path,
    capsys: pytest.CaptureFixture[str],
    *extra: str | Path,
) -> tuple[int, str, str]:
    """`inquiry run SCENARIO -c CONVERSATION --no-tty ...extra`: status, stdout, stderr."""
    return cli("run", scenario_file, "-c", conversation, "--no-tty", *extra, capsys=capsys)


def seed(directory: Path, files: dict[str, str]) -> Path:
    """A seed directory holding ``files`` (relative path: text)."""
    for relative, text in files.items():
        write(directory / "seed" / relative, text)
    return directory / "seed"


# ------------------------------------------------------------- seeding


@pytest.fixture
def seeded_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path, Any]:
    """A seeded scenario that has run once: the scenario, the conversation, and a re-run."""
    seed(tmp_path, {"notes.txt": "seed notes\n", "sub/inner.txt": "seed inner\n"})
    scenario_file = scenario(tmp_path, '[workspace]\nseed = "seed"\n')
    conversation = tmp_path / "conversation"
    assert run(scenario_file, conversation, capsys)[0] == 0

    def again() -> tuple[int, str, str]:
        return run(scenario_file, conversation, capsys)

    return scenario_file, conversation, again


def test_a_link_to_events_json_in_the_workspace_is_replaced_not_written_through(
    seeded_run: tuple[Path, Path, Any],
) -> None:
    """A tool's `notes.txt -> ../events.json`: the re-run replaces the link, keeps events.json."""
    _, conversation, again = seeded_run
    notes = conversation / "workspace" / "notes.txt"
    notes.unlink()
    notes.symlink_to("../events.json")
    status, _, err = again()
    assert (status, err) == (0, "")
    assert not notes.is_symlink()
    assert notes.read_text() == "seed notes\n"
    assert len(assert_paired(conversation).stream.turns()) == 2


def test_a_link_to_a_file_outside_is_replaced_and_the_file_left_alone(
    tmp_path: Path, seeded_run: tuple[Path, Path, Any]
) -> None:
    """A link (or a hard link) at a seed file's place: the file it names is never written."""
    _, conversation, again = seeded_run
    outside = write(tmp_path / "outside.txt", "precious\n")
    hard = write(tmp_path / "hard.txt", "precious too\n")
    notes = conversation / "workspace" / "notes.txt"
    inner = conversation / "workspace" / "sub" / "inner.txt"
    notes.unlink()
    notes.symlink_to(outside)
    inner.unlink()
    inner.hardlink_to(hard)
    assert again()[0] == 0
    assert outside.read_text() == "precious\n"
    assert hard.read_text() == "precious too\n"
    assert (notes.read_text(), inner.read_text()) == ("seed notes\n", "seed inner\n")


def test_a_linked_folder_in_the_workspace_is_replaced_not_written_into(
    tmp_path: Path, seeded_run: tuple[Path, Path, Any]
) -> None:
    """A workspace folder (or the workspace itself) that is a link: replaced by a real one."""
    _, conversation, again = seeded_run
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    workspace = conversation / "workspace"
    sub = workspace / "sub"
    (sub / "inner.txt").unlink()
    sub.rmdir()
    sub.symlink_to(elsewhere)
    assert again()[0] == 0
    assert list(elsewhere.iterdir()) == []
    assert not sub.is_symlink()
    assert (sub / "inner.txt").read_text() == "seed inner\n"

    workspace.rename(tmp_path / "old-workspace")
    workspace.symlink_to(elsewhere)
    assert again()[0] == 0
    assert list(elsewhere.iterdir()) == []
    assert not workspace.is_symlink()
    assert (workspace / "notes.txt").read_text() == "seed notes\n"


def test_a_seed_file_replaces_a_file_and_a_folder_refuses_to(
    seeded_run: tuple[Path, Path, Any],
) -> None:
    """An edited copy is replaced (and a file where the seed has a folder); a folder is not."""
    _, conversation, again = seeded_run
    workspace = conversation / "workspace"
    (workspace / "notes.txt").write_text("edited by a tool\n")
    (workspace / "sub" / "inner.txt").unlink()
    (workspace / "sub").rmdir()
    (workspace / "sub").write_text("a file where the seed has a folder\n")
    (workspace / "mine.txt").write_text("a tool's own file\n")
    assert again()[0] == 0
    assert (workspace / "notes.txt").read_text() == "seed notes\n"
    assert (workspace / "sub" / "inner.txt").read_text() == "seed inner\n"
    assert (workspace / "mine.txt").read_text() == "a tool's own file\n"
    assert sorted(path.name for path in workspace.iterdir()) == ["mine.txt", "notes.txt", "sub"]

    (workspace / "sub" / "inner.txt").unlink()
    (workspace / "sub" / "inner.txt").mkdir()
    (workspace / "sub" / "inner.txt" / "kept").write_text("kept\n")
    (workspace / "notes.txt").write_text("edited again\n")
    before = _untouched(conversation)
    status, _, err = again()
    assert status == 2
    assert err.count("\n") == 1
    inner = workspace / "sub" / "inner.txt"
    assert f"{inner}: cannot seed the workspace: is a directory" in err
    assert (inner / "kept").read_text() == "kept\n"
    # Found before anything was written: neither the conversation nor the
    # seed's other files (notes.txt comes first) were touched.
    assert _untouched(conversation) == before
    assert (workspace / "notes.txt").read_text() == "edited again\n"


def test_a_seed_file_named_with_255_bytes_is_copied(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The longest name a file may have: its copy's temporary name is not too long."""
    name = "n" * 255
    seed(tmp_path, {name: "long\n"})
    conversation = tmp_path / "conversation"
    for _ in range(2):  # copied, then replaced
        status, _, err = run(
            scenario(tmp_path, '[workspace]\nseed = "seed"\n'), conversation, capsys
        )
        assert (status, err) == (0, "")
        assert (conversation / "workspace" / name).read_text() == "long\n"
    assert [path.name for path in (conversation / "workspace").iterdir()] == [name]


def _untouched(conversation: Path) -> dict[str, tuple[int, int]]:
    """Each file of the conversation's own, by name: its inode and time of change.

    Not the writer's lock file: an earlier run in this process lets go of
    its lock (emptying the file's pid line) whenever its conversation is
    collected, which may be during the next run.
    """
    return {
        path.name: (path.stat().st_ino, path.stat().st_mtime_ns)
        for path in conversation.iterdir()
        if path.is_file() and path.name != LOCK_FILE
    }


def test_an_unreadable_seed_file_is_found_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A seed file that cannot be read: exit 2 naming it, and no conversation is created."""
    seed(tmp_path, {"notes.txt": "seed notes\n"})
    unreadable = tmp_path / "seed" / "secret.txt"
    if os.geteuid() == 0:
        # Root reads a file of any mode; reading a process's memory at
        # offset 0 fails for root too (EIO), a regular file that cannot be read.
        unreadable.symlink_to("/proc/self/mem")
    else:
        unreadable.write_text("no\n")
        unreadable.chmod(0)
    conversation = tmp_path / "conversation"
    status, _, err = run(scenario(tmp_path, '[workspace]\nseed = "seed"\n'), conversation, capsys)
    assert status == 2
    assert f"{tmp_path / 'seed' / 'secret.txt'}: cannot seed the workspace:" in err
    assert not conversation.exists()


def test_a_seed_holding_the_conversation_leaves_it_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`seed = "."` with the conversation beside the scenario: the conversation is not copied."""
    scenario_file = scenario(tmp_path, '[workspace]\nseed = "."\n')
    conversation = tmp_path / "conversation"
    (tmp_path / "link-to-events.json").symlink_to(conversation / "events.json")
    for _ in range(2):
        status, _, err = run(scenario_file, conversation, capsys)
        assert (status, err) == (0, "")
    workspace = conversation / "workspace"
    assert sorted(path.name for path in workspace.iterdir()) == ["asker.py", "scenario.toml"]
    assert len(assert_paired(conversation).stream.turns()) == 2


def test_a_seed_inside_the_conversation_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A seed inside the conversation would hand its files to its tools: exit 2, none written."""
    conversation = tmp_path / "conversation"
    assert run(scenario(tmp_path), conversation, capsys)[0] == 0
    (conversation / "files").mkdir()
    before = (conversation / "events.json").read_bytes()
    scenario_file = scenario(
        tmp_path, '[workspace]\nseed = "conversation/files"\n', name="seeded.toml"
    )
    status, _, err = run(scenario_file, conversation, capsys)
    assert status == 2
    assert err.startswith(f"inquiry: {scenario_file}: workspace.seed: ")
    assert "lies inside the conversation" in err
    assert (conversation / "events.json").read_bytes() == before


# ----------------------------------------------- answers that do not fit


def asking(directory: Path, answer_type: str) -> Path:
    """A scenario whose tool asks question `q` of ``answer_type`` (an inline TOML table)."""
    return scenario(
        directory,
        "[tools.t.options]\n"
        f'questions = [{{ id = "q", text = "Q?", answer_type = {answer_type} }}]\n',
    )


@pytest.mark.parametrize(
    ("answer_type", "entry", "expected"),
    [
        pytest.param('{ type = "text" }', "value = 5", "a string, not an integer", id="text"),
        pytest.param(
            '{ type = "boolean" }',
            'value = "yes"',
            "a boolean (true or false), not a string",
            id="boolean",
        ),
        pytest.param(
            '{ type = "select", options = ["a", "b"] }',
            'value = "zebra-value-9"',
            "one of 'a', 'b', not another string (a value is never shown)",
            id="select",
        ),
        pytest.param(
            '{ type = "text" }',
            'value_env = "INQUIRY_TEST_SECRET"',
            "a string, not a secret read with `value_env`",
            id="value-env-for-text",
        ),
        pytest.param(
            '{ type = "secret" }',
            "value = 81234567",
            "a string (secret), not an integer",
            id="secret",
        ),
    ],
)
def test_an_answer_that_does_not_fit_its_question_fails_the_run(  # noqa: PLR0917 - fixtures
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    answer_type: str,
    entry: str,
    expected: str,
) -> None:
    """A wrong-typed reply: exit 1 naming the entry and what was expected, recorded as the file's.

    Never the value given, in an error or on disk: an entry without `question`
    may have been meant for another question, a secret one say.
    """
    monkeypatch.setenv("INQUIRY_TEST_SECRET", "hunter2-secret")
    answers = write(
        tmp_path / "answers.toml",
        f'[[answers]]\nquestion = "other"\nvalue = "unused"\n[[answers]]\n{entry}\n',
    )
    conversation = tmp_path / "conversation"
    status, out, err = cli(
        "run",
        asking(tmp_path, answer_type),
        "-c",
        conversation,
        "--answers",
        answers,
        capsys=capsys,
    )
    assert status == 1
    assert err.count("\n") == 1
    assert (
        "the answers file's answers[1] does not fit question 'q' of tool 't': "
        f"the answer must be {expected} "
        "(the question was closed as invalid_answers_file_entry)"
    ) in err
    assert "refused" not in err  # the coordinator's warning: reported once, here
    for secret in ("hunter2-secret", "81234567", "zebra-value-9"):
        assert secret not in out + err
        assert secret.encode() not in every_byte(conversation)
    (response,) = outcomes(assert_paired(conversation)).values()
    assert response == Cancelled(
        id=response.id, reason=CancellationReason.INVALID_ANSWERS_FILE_ENTRY
    )


def test_a_wrong_typed_entry_is_the_files_fault_on_screen_and_on_disk(tmp_path: Path) -> None:
    """`value = "maybe"` for a boolean: the run names it, exits 1, records the file's reason.

    Seen as a user sees it (a process of its own): the entry, the question
    (escaped) and what was wrong; on disk `invalid_answers_file_entry`, never
    `user`, read as a tag of its own; the next call's question takes the next entry.
    """
    tricky = "q\x1b[2Jgo"  # a question id from the tool, with a terminal escape in it
    scenario_file = scenario(
        tmp_path,
        "[tools.t.options]\n"
        f'questions = [{{ id = {orjson.dumps(tricky).decode()}, text = "Ship?", '
        'answer_type = { type = "boolean" } }]\n',
    )
    calls = '{ tool = "t" }]'
    scenario_file.write_text(scenario_file.read_text().replace(calls, f"{calls[:-1]}, {calls}"))
    answers = write(
        tmp_path / "answers.toml", '[[answers]]\nvalue = "maybe"\n[[answers]]\nvalue = true\n'
    )
    conversation = tmp_path / "conversation"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "coordinator", "run", str(scenario_file)),
            *("-c", str(conversation), "--answers", str(answers)),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    problem = (
        "the answers file's answers[0] does not fit question 'q\\x1b[2Jgo' of tool 't': "
        "the answer must be a boolean (true or false), not a string "
        "(the question was closed as invalid_answers_file_entry)"
    )
    assert done.stderr == f"inquiry: {problem}\n"
    assert f"  problem: {problem}" in done.stdout
    assert "cancelled (invalid_answers_file_entry)" in done.stdout
    assert "\x1b" not in done.stdout + done.stderr
    assert "maybe" not in done.stdout + done.stderr
    assert "cancelled (user)" not in done.stdout
    raw = orjson.loads((conversation / "events.json").read_bytes())
    recorded = [
        {key: entry[key] for key in ("outcome", "reason", "answer") if key in entry}
        for entry in raw
        if entry["type"] == "inquiry_response"
    ]
    assert recorded == [
        {"outcome": "cancelled", "reason": "invalid_answers_file_entry"},
        {"outcome": "answered", "answer": True},
    ]
    misfit, _ = outcomes(assert_paired(conversation)).values()
    assert misfit.reason is CancellationReason.INVALID_ANSWERS_FILE_ENTRY
    assert parse_cancellation_reason("invalid_answers_file_entry") is misfit.reason


def test_a_person_at_a_prompt_is_not_checked_by_the_run() -> None:
    """Only a scripted reply is the answers file's problem: any other prompter's goes as before."""

    class Anything:
        async def ask_permission(self, prompt: object) -> Any:
            raise NotImplementedError

        async def ask_question(self, _prompt: ShowQuestion) -> QuestionAnswer:
            return QuestionAnswer(value=5)

    progress = Progress(lambda _: None)
    prompt = ShowQuestion(
        inquiry_id="c.q.1",
        tool_call_id="c",
        tool_name="t",
        source=InquirySource.tool("t"),
        question=Question.text_input("q", "Q?"),
    )
    answer = asyncio.run(WatchedPrompter(Anything(), progress).ask_question(prompt))
    assert answer.value == 5
    assert progress.problems == []

    scripted = ScriptedPrompter(from_file=True).answer(5)
    # Named here, by its entry; handed on for the engine to close as the file's fault.
    misfit = asyncio.run(WatchedPrompter(scripted, progress).ask_question(prompt))
    assert (misfit.value, misfit.from_file) == (5, True)
    assert progress.problems == [
        (
            "the answers file's answers[0] does not fit question 'q' of tool 't': "
            "the answer must be a string, not an integer "
            "(the question was closed as invalid_answers_file_entry)"
        )
    ]


def test_a_secret_question_takes_a_string_answer_as_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The check refuses only what does not fit: a string for a secret question is its answer."""
    answers = write(tmp_path / "answers.toml", '[[answers]]\nvalue = "s3cret-value"\n')
    conversation = tmp_path / "conversation"
    status, out, err = cli(
        "run",
        asking(tmp_path, '{ type = "secret" }'),
        "-c",
        conversation,
        "--answers",
        answers,
        capsys=capsys,
    )
    assert (status, err) == (0, "")
    assert "= t · q: redacted by the answers file: <secret>" in out
    assert "s3cret-value" not in out


# ------------------------------------------- one-line errors, not tracebacks

LONG = "x" * 300  # longer than any file name the OS takes (NAME_MAX is 255)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        pytest.param(
            f'[backend]\nprovider = "anthropic"\nmodel = "m"\ntimeout = {"9" * 400}\n',
            "backend.timeout: must be a finite number of seconds greater than 0",
            id="backend-timeout",
        ),
        pytest.param(
            f'[workspace]\nseed = "{LONG}"\n',
            "workspace.seed: ",
            id="seed",
        ),
        pytest.param(
            f'[tools.long]\ncommand = ["{LONG}/a.py"]\n',
            "tools.long.command: program ",
            id="command",
        ),
    ],
)
def test_a_value_the_os_or_a_float_cannot_take_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, key: str
) -> None:
    """A 400-digit timeout, a file name too long: exit 2, one line naming the file and the key."""
    scenario_file = scenario(tmp_path, text)
    status, _, err = run(scenario_file, tmp_path / "conversation", capsys)
    assert status == 2
    assert err.count("\n") == 1
    assert err.startswith(f"inquiry: {scenario_file}: {key}")
    if "timeout" not in key:
        assert err.endswith(": File name too long\n")
    assert not (tmp_path / "conversation").exists()


def test_a_huge_integer_timeout_is_refused_by_the_backend_config() -> None:
    """backend_from_config: an integer past the largest float is refused, not an overflow."""
    config = {"provider": "anthropic", "model": "m", "timeout": 10**400}
    with pytest.raises(ProviderConfigError) as raised:
        backend_from_config(config)
    assert raised.value.key == "timeout"


def test_a_conversation_name_too_long_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """-c with a name the OS refuses: exit 2, naming it and the reason."""
    status, _, err = run(scenario(tmp_path), tmp_path / LONG, capsys)
    assert status == 2
    assert err == f"inquiry: {tmp_path / LONG}: cannot be read: File name too long\n"


def test_an_argument_too_long_to_look_up_is_passed_as_it_is(tmp_path: Path) -> None:
    """An argument naming no file the OS can look up is left for the tool, not a traceback."""
    asker = write(tmp_path / "asker.py", ASKER)
    scenario_file = write(
        tmp_path / "scenario.toml",
        f'[tools.t]\ncommand = ["python3", "{asker}", "{LONG}/a"]\n' + ONE_CALL,
    )
    local = load_scenario(scenario_file).tools["t"].local
    assert local is not None
    assert local.command[-1] == f"{LONG}/a"


# ------------------------------------------- inputs that are not files


#: A seed's own directory, as a path relative to it.
TOP = PurePath()


def _not_a_file(path: Path, kind: str) -> str:
    """Make ``path`` a FIFO or a link to /dev/zero; what the refusal calls it."""
    if kind == "fifo":
        os.mkfifo(path)
        return "a FIFO"
    path.symlink_to("/dev/zero")
    return "a character device"


#: `inquiry` in a process that may not grow past 1 GiB: a file read for ever
#: fails it (MemoryError) rather than the machine it runs on.
_BOUNDED_INQUIRY = """
import resource, runpy, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
sys.argv = ["inquiry", *sys.argv[1:]]
runpy.run_module("coordinator", run_name="__main__")
"""


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
@pytest.mark.parametrize("which", ["scenario", "answers"])
def test_a_scenario_or_answers_file_that_is_not_a_file_is_refused_at_once(
    tmp_path: Path, which: str, kind: str
) -> None:
    """A FIFO (waited on for ever) or a link to /dev/zero (read for ever): exit 2, one line."""
    scenario_file = scenario(tmp_path)
    extra: tuple[str, ...] = ()
    if which == "scenario":
        scenario_file.unlink()
        bad = scenario_file
    else:
        bad = tmp_path / "answers.toml"
        extra = ("--answers", str(bad))
    what = _not_a_file(bad, kind)
    conversation = tmp_path / "conversation"
    done = subprocess.run(
        [
            *(sys.executable, "-c", _BOUNDED_INQUIRY, "run", str(scenario_file)),
            *("-c", str(conversation), "--no-tty", *extra),
        ],
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.decode() == (
        f"inquiry: {bad}: (file): is not a regular file but {what}; not reading it\n"
    )
    assert not conversation.exists()


@pytest.mark.parametrize("which", ["scenario", "answers"])
def test_a_scenario_or_answers_file_over_the_size_limit_is_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    which: str,
) -> None:
    """Larger than INQUIRY_MAX_FILE_SIZE: refused before it is read, naming the limit."""
    scenario_file = scenario(tmp_path)
    answers = write(tmp_path / "answers.toml", "# " + "x" * 2000 + "\n")
    bad = scenario_file if which == "scenario" else answers
    limit = bad.stat().st_size - 1
    assert scenario_file.stat().st_size <= limit or which == "scenario"
    monkeypatch.setenv("INQUIRY_MAX_FILE_SIZE", str(limit))
    status, _, err = run(scenario_file, tmp_path / "conversation", capsys, "--answers", answers)
    assert status == 2
    assert err == (
        f"inquiry: {bad}: (file): is {bad.stat().st_size} bytes, more than the {limit} a TOML "
        "file may be (set INQUIRY_MAX_FILE_SIZE to allow more); not reading it\n"
    )


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_what_is_not_a_file_in_a_seed_is_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """A FIFO or a link to /dev/zero in the seed is not copied; the rest is; the run goes on."""
    seed(tmp_path, {"notes.txt": "seed notes\n"})
    _not_a_file(tmp_path / "seed" / "odd", kind)
    conversation = tmp_path / "conversation"
    status, _, err = run(scenario(tmp_path, '[workspace]\nseed = "seed"\n'), conversation, capsys)
    assert (status, err) == (0, "")
    assert [path.name for path in (conversation / "workspace").iterdir()] == ["notes.txt"]


@pytest.mark.timeout(60)
def test_a_seed_file_that_is_no_longer_a_file_when_opened_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listed as a file, a FIFO when opened: exit 2 naming it at once, nothing written."""
    seed(tmp_path, {"notes.txt": "seed notes\n"})
    late = tmp_path / "seed" / "late.txt"
    what = _not_a_file(late, "fifo")
    listed = _run_workspace._seed_entries

    def entries(source: Path, leave_out: Path, relative: PurePath = TOP) -> Any:
        yield from listed(source, leave_out, relative)
        if relative == TOP:
            yield late, PurePath("late.txt"), False  # a file, when it was listed

    monkeypatch.setattr(_run_workspace, "_seed_entries", entries)
    conversation = tmp_path / "conversation"
    status, _, err = run(scenario(tmp_path, '[workspace]\nseed = "seed"\n'), conversation, capsys)
    assert status == 2
    assert err == (
        f"inquiry: {late}: cannot seed the workspace: is not a regular file but {what}; "
        "not reading it\n"
    )
    assert not conversation.exists()


# ---------------------------------------------------- names not UTF-8


def not_utf8(directory: Path, name: bytes) -> Path:
    """``directory / name``, ``name`` holding bytes that are not UTF-8."""
    return Path(os.fsdecode(bytes(directory) + b"/" + name))


def test_a_scenario_named_in_bytes_not_utf8_gets_a_title_with_u_fffd(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No `title`, a file name not UTF-8: the default title has U+FFFD, and the run saves."""
    named = not_utf8(tmp_path, b"caf\xe9.toml")
    scenario(tmp_path).rename(named)
    conversation = tmp_path / "conversation"
    status, _, err = run(named, conversation, capsys)
    assert (status, err) == (0, "")
    metadata = orjson.loads((conversation / "metadata.json").read_bytes())
    assert metadata == {"title": "inquiry run: caf\ufffd"}


def test_a_conversation_named_in_bytes_not_utf8_gives_tools_a_u_fffd_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local tool is given the conversation's name as text JSON can hold: U+FFFD."""
    given: list[str | None] = []

    def watched(*args: Any, **kwargs: Any) -> LocalToolExecutor:
        given.append(kwargs.get("conversation_id"))
        return LocalToolExecutor(*args, **kwargs)

    monkeypatch.setattr("coordinator.cli._run_tools.LocalToolExecutor", watched)
    conversation = not_utf8(tmp_path, b"caf\xe9")
    options = RunOptions(scenario=scenario(tmp_path), conversation=conversation, interactive=False)
    asyncio.run(run_scenario(options, out=io.StringIO()))
    assert given == ["caf\ufffd"]


def test_errors_show_names_not_utf8_with_u_fffd(tmp_path: Path) -> None:
    """The scenario's, the answers file's and the conversation's errors: U+FFFD, no surrogates."""
    directory = not_utf8(tmp_path, b"dir\xff")
    directory.mkdir()
    bad_scenario = write(
        directory / "scenario.toml", '[workspace]\nseed = "nowhere"\n[[turns]]\nmessage = "m"\n'
    )
    with pytest.raises(ConfigError) as scenario_error:
        load_scenario(bad_scenario)
    bad_answers = write(directory / "answers.toml", "bogus = 1\n")
    with pytest.raises(ConfigError) as answers_error:
        load_answer_script(bad_answers)
    a_file = write(directory / "file", "")
    options = RunOptions(scenario=scenario(tmp_path), conversation=a_file, interactive=False)
    with pytest.raises(RunError) as run_error:
        asyncio.run(run_scenario(options, out=io.StringIO()))
    shown = f"{tmp_path}/dir\ufffd"
    assert str(scenario_error.value).startswith(f"{shown}/scenario.toml: workspace.seed: ")
    assert f"{shown}/nowhere is not a directory" in str(scenario_error.value)
    assert str(answers_error.value).startswith(f"{shown}/answers.toml: bogus: unknown key")
    assert str(run_error.value) == f"{shown}/file: is not a directory"
    for error in (scenario_error.value, answers_error.value, run_error.value):
        str(error).encode()  # no lone surrogate: any UTF-8 output can carry it


# ------------------------------------------------------ unknown keys


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        pytest.param("x.y", '"x.y"', id="dotted"),
        pytest.param("a\nb", '"a\\nb"', id="newline"),
        pytest.param("a\x1bb", '"a\\u001bb"', id="escape"),
        pytest.param("a\x85b\u2028c", '"a\\u0085b\\u2028c"', id="line-separators"),
        pytest.param("caf\u00e9", '"caf\u00e9"', id="not-ascii"),
        pytest.param("plain_key-1", "plain_key-1", id="bare"),
    ],
)
def test_an_unknown_key_is_named_as_toml_quotes_it(name: str, shown: str) -> None:
    """`tools.t."x.y"`, not `tools.t.x.y`; and whatever the name holds, the error is one line."""
    with pytest.raises(ConfigError) as raised:
        check_keys({name: 1}, "s.toml", "tools.t", allowed=("command",))
    assert raised.value.key == f"tools.t.{shown}"
    assert len(str(raised.value).splitlines()) == 1


def test_keys_inside_values_and_the_backend_are_quoted_too(tmp_path: Path) -> None:
    """A JSON value's key and an unknown [backend] key are named as TOML quotes them."""
    directory = tmp_path
    options = scenario(directory, '[tools.t.options]\n"a.b\\n" = nan\n', name="options.toml")
    with pytest.raises(ConfigError) as raised:
        load_scenario(options)
    assert raised.value.key == 'tools.t.options."a.b\\n"'
    backend = scenario(
        directory,
        '[backend]\nprovider = "anthropic"\nmodel = "m"\n"x\\ny" = 1\n',
        name="backend.toml",
    )
    with pytest.raises(ConfigError) as raised:
        load_scenario(backend)
    assert raised.value.key == 'backend."x\\ny"'


@pytest.mark.parametrize(
    ("entry", "key"),
    [
        pytest.param(
            '[[answers]]\nvalue = { "zebra-7" = 1979-05-27 }',
            "answers[0].value.zebra-7",
            id="a-bare-key-stays-bare",
        ),
        pytest.param(
            '[[answers]]\nvalue = { "zebra.7" = 1979-05-27 }',
            'answers[0].value."zebra.7"',
            id="dotted",
        ),
        pytest.param(
            '[[answers]]\nvalue = [{ "x y" = { "caf\u00e9" = 1979-05-27 } }]',
            'answers[0].value[0]."x y"."caf\u00e9"',
            id="nested-in-an-array",
        ),
        pytest.param(
            '[[model]]\nvalue = { "a\\nb" = nan }',
            'model[0].value."a\\nb"',
            id="model-newline",
        ),
        pytest.param(
            '[[permissions]]\nreply = "e"\narguments = { "" = 1979-05-27 }',
            'permissions[0].arguments.""',
            id="permission-arguments-empty-key",
        ),
    ],
)
def test_answers_file_errors_name_keys_inside_values_as_toml_quotes_them(
    tmp_path: Path, entry: str, key: str
) -> None:
    """A key inside an answer's value is named as the file must write it: bare or quoted."""
    answers = write(tmp_path / "answers.toml", entry + "\n")
    with pytest.raises(ConfigError) as raised:
        load_answer_script(answers)
    assert raised.value.key == key
    assert len(str(raised.value).splitlines()) == 1


def test_a_local_tool_runs_in_a_conversation_named_in_bytes_not_utf8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its context names the root with U+FFFD (JSON holds no other), and the call succeeds."""
    conversation = not_utf8(tmp_path, b"caf\xe9")
    status, _, error = run(scenario(tmp_path), conversation, capsys)
    assert (status, error) == (0, "")
    (response,) = responses(assert_paired(conversation)).values()
    assert (response.content, response.is_error) == ("done", False)
