"""Benchmark 1: load and save a conversation, against the raw lossless pipeline.

The baseline reads each file, parses it with ``orjson``, decodes the base64
storage fields of ``events.json``, encodes them again, dumps the JSON as JP
writes it and replaces the file durably (the same atomic write the store
uses, so both sides pay the same ``fsync``). The engine side is
``load_conversation`` then ``save_conversation`` to a fresh directory, so
every file is really written.

The durable question (issue 37): a turn whose one tool call asks one
question, answered at once, through the driver on a conversation on disk:
the time its saves take, and the whole turn, against the single-append
floor measured in the same run (one ``write`` and ``fsync`` of the bytes
the turn saves, appended to a file in the same directory). The note says
how many syncs a turn makes.

Two rows measure the check at load that refuses what a save would not write
back as read (a repeated key, an integer beyond 64 bits; see
``coordinator.wire._json_read``): the engine with the check against the engine
with it switched off, for a file as JP lays it out (proven by writing it once
more), and the raw pipeline against the engine for the same conversation laid
out otherwise (compact, as a hand or another tool may write it), which the
standard library reads a second time.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import mmap
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

import orjson
from bench_support import (
    Cost,
    Metric,
    Run,
    Sizes,
    fixture_dirs,
    generated_entries,
    paired,
    paired_costs,
    paired_times,
    peak_memory,
    retained_memory,
    write_conversation,
)
from bench_tools import AskInTurn

from coordinator import (
    BuiltinExecutor,
    Conversation,
    ScriptedPrompter,
    ToolCoordinator,
    load_conversation,
    parse_tools_config,
    save_conversation,
)
from coordinator.driver import _tool_coordinator
from coordinator.store._atomic import atomic_write
from coordinator.wire import _json_read
from machines import (
    AnswerType,
    ChatRequest,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
    Question,
    ToolCallRequest,
    TurnStart,
)

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["run"]

_FILES = ("events.json", "metadata.json", "base_config.json")


# ------------------------------------------------------------------ baseline


def _decode(value: Any) -> Any:
    kind = type(value)
    if kind is str:
        try:
            return base64.b64decode(value, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            return value  # not encoded: kept as it is (a UnicodeDecodeError is a ValueError)
    if kind is dict:
        return {key: _decode(child) for key, child in value.items()}
    if kind is list:
        return [_decode(child) for child in value]
    return value


def _encode(decoded: Any, raw: Any) -> Any:
    """Encode again what ``_decode`` decoded; what it kept stays exactly as it was."""
    kind = type(decoded)
    if kind is str:
        return raw if decoded is raw else base64.b64encode(decoded.encode()).decode("ascii")
    if kind is dict:
        return {key: _encode(child, raw[key]) for key, child in decoded.items()}
    if kind is list:
        return [_encode(child, old) for child, old in zip(decoded, raw, strict=True)]
    return decoded


def _storage_fields(entry: dict[str, Any]) -> list[str]:
    kind = entry.get("type")
    fields = ["metadata"] if "metadata" in entry else []
    if kind == "tool_call_request":
        fields.append("arguments")
    elif kind == "tool_call_response":
        fields.append("content")
    return fields


def raw_pipeline(source: Path, target: Path) -> None:
    """Read, decode, encode and write back every file of ``source`` into ``target``."""
    target.mkdir(parents=True, exist_ok=True)
    for name in _FILES:
        path = source / name
        if not path.is_file():
            continue
        value = orjson.loads(path.read_bytes())
        if name == "events.json":
            decoded = [
                {field: _decode(entry[field]) for field in _storage_fields(entry)}
                for entry in value
            ]
            for entry, fields in zip(value, decoded, strict=True):
                for field, plain in fields.items():
                    entry[field] = _encode(plain, entry[field])
        atomic_write(target / name, orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n")


def engine_pipeline(source: Path, target: Path) -> None:
    """``load_conversation`` then ``save_conversation`` into ``target``."""
    save_conversation(load_conversation(source), target)


def unchecked_pipeline(source: Path, target: Path) -> None:
    """:func:`engine_pipeline` with the load's check of the text switched off (for its cost)."""
    with mock.patch.object(_json_read, "_checked", return_value=None):
        engine_pipeline(source, target)


# ------------------------------------------------------------------- timing


def _compare_fixture(source: Path, entries: int, scratch: Path, repeats: int) -> Metric:
    """The load+save metric for a real conversation: short runs, many of them, taking turns."""
    target = scratch / "out"

    def clear() -> None:
        shutil.rmtree(target, ignore_errors=True)

    times = paired_times(
        {
            "baseline": (lambda: raw_pipeline(source, target), clear),
            "engine": (lambda: engine_pipeline(source, target), clear),
        },
        repeats=repeats,
    )
    clear()
    return Metric.from_runs(
        metric="store.load_save.largest_fixture",
        runs=paired(times["engine"], times["baseline"], scale=1e3),
        unit="ms",
        # Issue 34's budget: every entry and timestamp built by its constructor, validators on.
        target=1.5,
        note=(
            f"durable: load + save of {source.name} ({entries} entries) to a new directory, "
            "every file replaced with fsync, vs the raw pipeline writing the same way"
        ),
    )


def _text_check(
    name: str, source: Path, entries: int, scratch: Path, repeats: int
) -> list[Metric]:
    """What the check of the text at load costs: as JP lays a file out, and laid out otherwise.

    The first row is the engine's load+save against the same with the check
    switched off; the second, the raw pipeline against the engine, for the
    same conversation written compact (every file), whose check is the
    standard library's second parse.
    """
    target = scratch / "out"
    compact = scratch / "compact"
    compact.mkdir()
    for file in _FILES:
        if (source / file).is_file():
            value = orjson.loads((source / file).read_bytes())
            (compact / file).write_bytes(orjson.dumps(value) + b"\n")

    def clear() -> None:
        shutil.rmtree(target, ignore_errors=True)

    times = paired_times(
        {
            "checked": (lambda: engine_pipeline(source, target), clear),
            "unchecked": (lambda: unchecked_pipeline(source, target), clear),
            "compact": (lambda: engine_pipeline(compact, target), clear),
            "compact_raw": (lambda: raw_pipeline(compact, target), clear),
        },
        repeats=repeats,
    )
    clear()
    shutil.rmtree(compact)
    rows = (
        ("load_save_text_check", "checked", "unchecked", "as JP lays them out: check on vs off"),
        ("load_save", "compact", "compact_raw", "written compact: the text is parsed twice"),
    )
    return [
        Metric.from_runs(
            metric=f"store.{row}.{name}" + ("_laid_out_otherwise" if side == "compact" else ""),
            runs=paired(times[side], times[baseline], scale=1e3),
            unit="ms",
            note=f"{entries} entries {what}",
        )
        for row, side, baseline, what in rows
    ]


def _memory(name: str, source: Path, entries: int, scratch: Path) -> list[Metric]:
    """Peak memory during load+save, and what a loaded conversation keeps."""
    target = scratch / "out"
    baseline = peak_memory(lambda: raw_pipeline(source, target))
    shutil.rmtree(target, ignore_errors=True)
    value = peak_memory(lambda: engine_pipeline(source, target))
    shutil.rmtree(target, ignore_errors=True)
    # Both sides' peak is orjson's parse of the whole file, which holds
    # several times what it returns. What a loaded conversation keeps, against
    # the parsed file, shows the engine's own cost in memory.
    events = source / "events.json"
    parsed = retained_memory(lambda: orjson.loads(events.read_bytes()))
    loaded = retained_memory(lambda: load_conversation(source))
    return [
        Metric(
            metric=f"store.peak_memory_per_entry.{name}",
            value=value / entries,
            baseline=baseline / entries,
            unit="bytes/entry",
            note=f"tracemalloc peak during load+save of {entries} entries",
        ),
        Metric(
            metric=f"store.retained_memory_per_entry.{name}",
            value=loaded / entries,
            baseline=parsed / entries,
            unit="bytes/entry",
            note="a loaded conversation against the parsed events.json alone",
        ),
    ]


def _label(count: int) -> str:
    if count >= 1_000_000 and count % 1_000_000 == 0:
        return f"{count // 1_000_000}m"
    if count >= 1000 and count % 1000 == 0:
        return f"{count // 1000}k"
    return str(count)


def _passes(
    pipeline: Callable[[Path, Path], None], source: Path, targets: Path, passes: int
) -> Run:
    """A timed run of ``passes`` load+saves of ``source``, each to a fresh directory.

    A fresh directory each: a save over the files of the pass before would
    find them holding its bytes already and write nothing. The setup, not
    timed, removes the directories of the run before.
    """

    def work() -> None:
        for index in range(passes):
            pipeline(source, targets / str(index))

    def clear() -> None:
        shutil.rmtree(targets, ignore_errors=True)

    return work, clear


def _generated(sizes: Sizes, scratch: Path) -> list[Metric]:
    """Load+save of every generated stream against the raw pipeline, and how it grows.

    Every timed run reads as many entries as the longest stream holds (a
    shorter stream, over and over), and the runs of every size and side take
    turns, as the readers' benchmark does. A run over a million entries
    lasts tens of seconds, so a slow spell of a shared machine falls within
    it; the best of twenty runs of a tenth of a second each can fall between
    two, and the growth from the short stream to the long one would then
    measure the machine's quiet moments rather than the store.
    """
    longest = max(sizes.streams)
    passes = {count: max(1, longest // count) for count in sizes.streams}
    sources = {
        count: write_conversation(scratch / f"gen{count}", generated_entries(count))
        for count in sizes.streams
    }
    pipelines = {"baseline": raw_pipeline, "engine": engine_pipeline}
    targets = {count: scratch / f"out{count}" for count in sizes.streams}
    runs = {
        (count, side): _passes(pipeline, sources[count], targets[count], passes[count])
        for count in sizes.streams
        for side, pipeline in pipelines.items()
    }
    costs = paired_costs(runs, repeats=sizes.runs)
    for target in targets.values():
        shutil.rmtree(target, ignore_errors=True)
    metrics: list[Metric] = []
    per_entry: dict[int, dict[str, list[Cost]]] = {}
    for count in sizes.streams:
        read = count * passes[count]
        engine, baseline = costs[count, "engine"], costs[count, "baseline"]
        metrics.append(
            Metric.from_runs(
                metric=f"store.load_save.{_label(count)}",
                runs=paired(
                    [run.wall for run in engine],
                    [run.wall for run in baseline],
                    scale=1e3 / passes[count],
                ),
                unit="ms",
                # No target: how far a generated stream's load+save is from the
                # raw pipeline's depends on how much of it the generator made
                # base64 (the raw pipeline's main cost). The real conversation's
                # row holds the budget, and the growth rows below hold the size.
                note=f"durable: {count} generated entries ({passes[count]} passes a run)",
            )
        )
        per_entry[count] = {
            "engine": [run.per(read) for run in engine],
            "baseline": [run.per(read) for run in baseline],
        }
        if count == sizes.memory_stream:
            metrics.extend(_memory(_label(count), sources[count], count, scratch))
            metrics.extend(_text_check(_label(count), sources[count], count, scratch, sizes.runs))
    for source in sources.values():
        shutil.rmtree(source)
    return [*metrics, *_scaling(per_entry)]


def run(sizes: Sizes) -> list[Metric]:
    """Every store metric."""
    metrics: list[Metric] = []
    with tempfile.TemporaryDirectory(prefix="inquiry-bench-") as temp:
        scratch = Path(temp)
        fixtures = fixture_dirs()
        if fixtures:
            largest = max(fixtures, key=lambda path: (path / "events.json").stat().st_size)
            count = len(orjson.loads((largest / "events.json").read_bytes()))
            # A load+save of it lasts milliseconds: three runs a run of the others'.
            metrics.append(_compare_fixture(largest, count, scratch, sizes.runs * 3))
            metrics.extend(_text_check("largest_fixture", largest, count, scratch, sizes.runs * 3))
            metrics.extend(_memory("largest_fixture", largest, count, scratch))
        metrics.extend(_generated(sizes, scratch))
        metrics.extend(_question_saves(sizes, scratch))
        metrics.extend(_durable_question(sizes, scratch))
    metrics.append(_freed_pages(sizes))
    return metrics


#: About the fresh memory a load and save touches for an entry: half a page.
_FRESH_PER_ENTRY = 2048


def _touch(size: int) -> float:
    """Seconds to write to every page of ``size`` bytes of newly mapped memory."""
    memory = mmap.mmap(-1, size)
    start = time.perf_counter()
    for offset in range(0, size, mmap.PAGESIZE):
        memory[offset] = 1
    seconds = time.perf_counter() - start
    memory.close()
    return seconds


def _freed_pages(sizes: Sizes) -> Metric:
    """The machine's own: a page freed a while ago against one freed just before.

    Under a hypervisor that takes back the memory a guest has freed (free
    page reporting, a balloon), the guest's kernel gets such a page back
    from the host the next time it is touched, which costs several times an
    ordinary page fault. A run over a short stream reuses the memory its
    process has just freed; a run over the longest frees and touches again
    more than the kernel keeps at hand, seconds apart, so its fresh pages
    cost what the value here costs. Both sides touch as much memory as a
    load and save of the longest stream, each right after the other side
    freed it or ``freed_pause`` seconds after; on a machine that keeps freed
    memory the ratio is about 1.
    """
    size = max(sizes.streams) * _FRESH_PER_ENTRY // mmap.PAGESIZE * mmap.PAGESIZE
    pages = size // mmap.PAGESIZE
    _touch(size)  # the memory the measured runs free and take again
    recent: list[float] = []
    returned: list[float] = []
    for _ in range(sizes.runs):  # as many as each generated stream's runs
        recent.append(_touch(size))
        time.sleep(sizes.freed_pause)
        returned.append(_touch(size))
    return Metric.from_runs(
        metric="store.machine.page_freed_a_while_ago",
        runs=paired(returned, recent, scale=1e6 / pages),
        unit="us/page",
        note=(
            f"writing {size >> 20} MB of fresh memory freed {sizes.freed_pause:g} s before,"
            " against freed just before"
        ),
    )


def _scaling(per_entry: dict[int, dict[str, list[Cost]]]) -> list[Metric]:
    """Each side's growth per entry from the shortest stream to the longest.

    Beside the engine's growth (the target), the raw pipeline's: what a
    stream beyond the CPU caches costs on this machine, whoever reads it.
    And for each, the growth of its CPU time in user space alone (its own
    code, waits for memory included): what the wall time grows beyond that
    is the kernel's (page faults, writing) and the disk's.
    """
    small, large = min(per_entry), max(per_entry)
    scaling = f"{_label(large)}_vs_{_label(small)}"
    sides = (("engine", "engine", ""), ("baseline", "the raw pipeline", "raw_pipeline."))
    measures = (
        ("wall", "", "load+save"),
        ("user", "user_cpu.", "load+save CPU time in user space"),
    )
    return [
        Metric.from_runs(
            metric=f"store.per_entry_scaling.{prefix}{measure_prefix}{scaling}",
            runs=paired(
                [getattr(run, measure) for run in per_entry[large][side]],
                [getattr(run, measure) for run in per_entry[small][side]],
                scale=1e6,
            ),
            unit="us/entry",
            target=1.2 if side == "engine" and measure == "wall" else None,
            note=f"{who} {what} per entry at {large} vs {small} entries",
        )
        for side, who, prefix in sides
        for measure, measure_prefix, what in measures
    ]


# ------------------------------------------------- the save before each question

#: The streams a question is saved on, by a full run: 1k and 100k entries.
_QUESTION_STREAMS = (1_000, 100_000)
#: Questions saved in one timed run, by each side; a full rewrite of a long
#: stream takes long enough that fewer of them measure it as well.
_QUESTIONS = {"append": 200, "rewrite": 20}


def _question(number: int) -> InquiryRequest:
    return InquiryRequest(
        id=f"call_{number}.apply.1",
        source=InquirySource.tool("fs_modify_file"),
        question=InquiryQuestion(text="Apply the patch?", answer_type=AnswerType.boolean()),
    )


def _asking(conversation: Conversation, questions: int, *, rewrite: bool) -> Callable[[], None]:
    """``questions`` times: append a question's request, save (what the driver does).

    With ``rewrite``, each save is the store's full rewrite, as every save was
    before appends: the store is made to forget that it wrote the file itself,
    which is what allows an append.
    """
    marks = conversation._events_mark  # the old path, for contrast

    def work() -> None:
        for number in range(questions):
            conversation.stream.append(_question(number))
            if rewrite:
                marks.clear()
            save_conversation(conversation)

    return work


def _question_saves(sizes: Sizes, scratch: Path) -> list[Metric]:
    """The save before each question, on a short and a long stream: flat, and what it was.

    Each side asks its questions of the same loaded conversation, saved once
    before the runs (so that the store knows the file as its own). ``append``
    is the store as it is; ``rewrite`` is every save rewriting the whole file,
    as it did before. Target: the append's cost at the long stream within
    1.2x of the short one's.
    """
    full = max(sizes.streams) >= max(_QUESTION_STREAMS)
    counts = _QUESTION_STREAMS if full else (min(sizes.streams), max(sizes.streams))
    runs: dict[tuple[int, str], Run] = {}
    conversations: list[Conversation] = []
    for count in counts:
        for side, questions in _QUESTIONS.items():
            source = write_conversation(scratch / f"ask{count}{side}", generated_entries(count))
            conversation = load_conversation(source)
            conversation.stream.append(_question(0))
            save_conversation(conversation)  # the store's own file from here on
            conversations.append(conversation)
            runs[count, side] = (_asking(conversation, questions, rewrite=side == "rewrite"), None)
    times = paired_times(runs, repeats=sizes.runs)
    for conversation in conversations:
        conversation.close()
    per_question = {
        name: [seconds / _QUESTIONS[name[1]] for seconds in measured]
        for name, measured in times.items()
    }
    small, large = counts
    metrics = [
        Metric.from_runs(
            metric=f"store.question_save.{_label(count)}",
            runs=paired(per_question[count, "append"], per_question[count, "rewrite"], scale=1e6),
            unit="us/question",
            note=f"append a question's request and save, {count} entries: appended vs rewritten",
        )
        for count in counts
    ]
    growth = f"{_label(large)}_vs_{_label(small)}"
    return [
        *metrics,
        Metric.from_runs(
            metric=f"store.question_save.scaling.{growth}",
            runs=paired(per_question[large, "append"], per_question[small, "append"], scale=1e6),
            unit="us/question",
            # Issue 34's budget: the durable question flat in the conversation's size.
            target=1.2,
            note=(
                f"durable: the save before a question is shown, at {large} vs {small} entries "
                "(append a question's request, save)"
            ),
        ),
        Metric.from_runs(
            metric=f"store.question_save.scaling.full_rewrite.{growth}",
            runs=paired(per_question[large, "rewrite"], per_question[small, "rewrite"], scale=1e6),
            unit="us/question",
            note=f"every save rewriting the file (as before appends), {large} vs {small} entries",
        ),
    ]


# ------------------------------------------------------------ the durable question

#: One-question turns in a timed run of the durable question.
_TURNS = 40
#: The question each turn's tool asks, answered at once by the scripted person.
_APPLY = Question.boolean("apply", "Apply the patch?")
_UNATTENDED = parse_tools_config({"defaults": {"run": "unattended"}})


class _Turns:
    """One-question turns through the driver, on a conversation on disk (see the module)."""

    def __init__(self, directory: Path) -> None:
        """Save a conversation of 1,000 entries to ``directory``, loaded and saved once."""
        source = write_conversation(directory, generated_entries(1_000))
        self.conversation = load_conversation(source)
        save_conversation(self.conversation)  # the store's own file from here on
        self.events = source / "events.json"
        self.calls = 0
        self.saving = 0.0

    def run(self, turns: int) -> float:
        """Play ``turns`` turns of one call asking one question, answered at once; their time.

        :attr:`saving` adds up the time spent in the driver's saves meanwhile.
        """
        prompter = ScriptedPrompter()
        for _ in range(turns):
            prompter.answer(True)
        coordinator = ToolCoordinator(
            self.conversation,
            tools={"fs_modify_file": BuiltinExecutor(AskInTurn([_APPLY]))},
            config=_UNATTENDED,
            prompter=prompter,
        )

        def timed_save(conversation: Conversation, **options: Any) -> object:
            start = time.perf_counter()
            try:
                return save_conversation(conversation, **options)
            finally:
                self.saving += time.perf_counter() - start

        async def play() -> float:
            start = time.perf_counter()
            for _ in range(turns):
                # A turn of its own each: the person's message, the model's call, its run.
                self.conversation.stream.append(TurnStart())
                self.conversation.stream.append(ChatRequest(content="Apply the patch."))
                self.calls += 1
                call = ToolCallRequest(
                    id=f"toolu_{self.calls:06d}", name="fs_modify_file", arguments={}
                )
                self.conversation.stream.append(call)
                await coordinator.run([call])
            return time.perf_counter() - start

        with mock.patch.object(_tool_coordinator, "save_conversation", timed_save):
            return asyncio.run(play())

    def bytes_and_syncs(self) -> tuple[int, int]:
        """What one turn adds to events.json, and how many syncs it makes (played, untimed)."""
        before = self.events.stat().st_size
        syncs: list[int] = []
        real_fsync = os.fsync

        def counted(fd: int) -> None:
            syncs.append(fd)
            real_fsync(fd)

        with mock.patch.object(os, "fsync", counted):
            self.run(1)
        return self.events.stat().st_size - before, len(syncs)


def _floor(path: Path, payload: bytes) -> float:
    """Seconds for :data:`_TURNS` appends of ``payload`` to ``path``, each synced."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
    try:
        start = time.perf_counter()
        for _ in range(_TURNS):
            os.write(fd, payload)
            os.fsync(fd)
        return time.perf_counter() - start
    finally:
        os.close(fd)


def _durable_question(sizes: Sizes, scratch: Path) -> list[Metric]:
    """A one-question turn's saves, and the whole turn, against one write + fsync of its bytes.

    Every turn of a timed run is a turn of its own (the person's message,
    the model's call, the call run, its question answered at once), through
    the driver, on one conversation of 1,000 entries before the first. The
    first row is the time the driver spends in its saves (the durable path
    issue 37 is about); the second, the whole turn, the engine's work with it.
    The baseline of both is the single-append floor, measured in the same
    runs, taking turns with them.
    """
    turns = _Turns(scratch / "durable")
    turns.run(2)  # warmed up: the log begun, the code paths taken
    size, syncs = turns.bytes_and_syncs()
    payload = b"x" * size
    # Each round: the turns, then the floor, side by side in time (one ratio a round).
    rounds: list[tuple[float, float, float]] = []
    for _ in range(sizes.runs):
        turns.saving = 0.0
        wall = turns.run(_TURNS)
        floor = _floor(scratch / "durable" / "floor", payload)
        rounds.append((turns.saving, wall, floor))
    turns.conversation.close()
    scale = 1e6 / _TURNS  # seconds for the run's turns -> microseconds a turn
    what = (
        f"a turn of one call asking one question, answered at once, on a conversation on disk "
        f"({size} bytes, {syncs} syncs a turn) vs one write+fsync of {size} bytes"
    )
    return [
        Metric.from_runs(
            metric="store.durable_question",
            runs=[(saves * scale, floor * scale) for saves, _, floor in rounds],
            unit="us/turn",
            target=8.0,
            note=f"the driver's saves of {what}",
        ),
        Metric.from_runs(
            metric="store.durable_question.whole_turn",
            runs=[(wall * scale, floor * scale) for _, wall, floor in rounds],
            unit="us/turn",
            note=f"the whole of {what}, the engine's work with its saves",
        ),
    ]
