"""What every benchmark shares: metrics, timing, and generated conversations.

A metric compares a measured ``value`` with a ``baseline`` measured in the
same run; ``ratio`` is ``value / baseline``, and a metric with a ``target``
passes when the ratio is at most the target. Where an issue bounds the value
itself (so many microseconds a question), the bound is its ``ceiling``, in
the metric's unit, and the value must not exceed it either.

A row is measured in several runs, ours and the baseline's taking turns in
one process (:func:`paired_costs`): each run gives a value and the baseline
measured beside it, and so a ratio. The figures are the medians of the
runs, and the ratio's range (its least and greatest) says how far the runs
spread: on a shared machine one draw is not a figure (issue 37). Memory is
measured in a separate pass, once, since ``tracemalloc`` slows everything
it watches and counts bytes, not time.
"""

from __future__ import annotations

import base64
import gc
import os
import resource
import statistics
import time
import tracemalloc
from collections.abc import Callable, Hashable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

import attrs
import orjson

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "JP_FIXTURES",
    "PROJECT",
    "Cost",
    "Metric",
    "Run",
    "Sizes",
    "fixture_dirs",
    "generated_entries",
    "generated_turns",
    "paired",
    "paired_costs",
    "paired_times",
    "peak_memory",
    "retained_memory",
    "write_conversation",
]

PROJECT = Path(__file__).resolve().parents[2]
JP_FIXTURES = Path(
    os.environ.get(
        "INQUIRY_JP_FIXTURES", PROJECT.parent / "shared" / "fixtures" / "jp-conversations"
    )
)


@attrs.frozen(kw_only=True)
class Metric:
    """One measured figure and the baseline it is compared with, over one run or several.

    Made with :meth:`from_runs`, ``value`` and ``baseline`` are the medians
    of the runs' and ``runs`` keeps each run's pair; made with a value and a
    baseline alone, it is one run (a memory figure, measured once).
    """

    metric: str
    value: float
    baseline: float
    unit: str
    target: float | None = None
    ceiling: float | None = None
    note: str = ""
    #: Each run's (value, baseline), in the order they ran; empty: the one pair above.
    runs: tuple[tuple[float, float], ...] = ()

    @classmethod
    def from_runs(
        cls,
        *,
        metric: str,
        runs: Sequence[tuple[float, float]],
        unit: str,
        target: float | None = None,
        ceiling: float | None = None,
        note: str = "",
    ) -> Metric:
        """The metric of ``runs``, each run's (value, baseline): its figures the medians."""
        if not runs:
            raise ValueError(f"{metric}: no runs to make a metric of")
        return cls(
            metric=metric,
            value=statistics.median(value for value, _ in runs),
            baseline=statistics.median(baseline for _, baseline in runs),
            unit=unit,
            target=target,
            ceiling=ceiling,
            note=note,
            runs=tuple(runs),
        )

    @property
    def ratios(self) -> tuple[float, ...]:
        """Each run's ``value / baseline``, in the order they ran."""
        return tuple(value / baseline for value, baseline in self.runs or [self.pair])

    @property
    def pair(self) -> tuple[float, float]:
        """``(value, baseline)``."""
        return (self.value, self.baseline)

    @property
    def ratio(self) -> float:
        """The median of the runs' ratios: how many times the baseline's cost."""
        return statistics.median(self.ratios)

    @property
    def ratio_range(self) -> tuple[float, float]:
        """The least and the greatest of the runs' ratios."""
        return (min(self.ratios), max(self.ratios))

    @property
    def value_range(self) -> tuple[float, float]:
        """The least and the greatest of the runs' values."""
        values = [value for value, _ in self.runs or [self.pair]]
        return (min(values), max(values))

    @property
    def passed(self) -> bool | None:
        """Whether the median ratio meets the target and the median value its ceiling.

        ``None`` when neither is set.
        """
        if self.target is None and self.ceiling is None:
            return None
        return (self.target is None or self.ratio <= self.target) and (
            self.ceiling is None or self.value <= self.ceiling
        )

    def as_json(self) -> dict[str, Any]:
        """The JSON line: ``metric``, ``value``, ``baseline``, ``ratio``, then extras."""
        least, greatest = self.ratio_range
        return {
            "metric": self.metric,
            "value": self.value,
            "baseline": self.baseline,
            "ratio": self.ratio,
            "ratio_min": least,
            "ratio_max": greatest,
            "runs": len(self.ratios),
            "unit": self.unit,
            "target": self.target,
            "ceiling": self.ceiling,
            "passed": self.passed,
            "note": self.note,
            "pairs": [list(pair) for pair in self.runs or [self.pair]],
        }

    @classmethod
    def from_json(cls, fields: Mapping[str, Any]) -> Metric:
        """The metric :meth:`as_json` wrote (a metric measured in another process: the peers')."""
        return cls(
            metric=fields["metric"],
            value=fields["value"],
            baseline=fields["baseline"],
            unit=fields["unit"],
            target=fields["target"],
            ceiling=fields["ceiling"],
            note=fields["note"],
            runs=tuple((value, baseline) for value, baseline in fields.get("pairs", ())),
        )


@attrs.frozen(kw_only=True)
class Sizes:
    """How big the generated workloads are (full run or ``--quick``), and how many runs of each."""

    streams: tuple[int, ...]
    #: The stream whose memory is measured: one of ``streams``, which are generated.
    memory_stream: int = attrs.field()
    inquiries: tuple[int, ...]
    tool_calls: tuple[int, ...]
    reader_streams: tuple[int, ...]
    #: How many runs of each row, ours and the baseline's taking turns
    #: (``--runs``); a row of short runs makes a multiple of them (see its group).
    runs: int
    #: How long, in seconds, memory stays freed before the machine's own page
    #: measure touches it again (a host takes freed memory back after a while).
    freed_pause: float
    #: The peers group: how many threads (conversations), each asking how
    #: many questions; and how many questions' machines step side by side.
    peer_threads: int = 100
    peer_questions: int = 10
    peer_models: int = 1_000
    #: The peers' durable rows: the turns a conversation holds before the
    #: questions asked, in our store and in LangGraph's ``SqliteSaver``.
    peer_history: tuple[int, ...] = (300, 1_000)
    #: The history group: the turns a conversation holds before the measured
    #: one (the smallest is the baseline), and how many turns a run plays.
    history_turns: tuple[int, ...] = (0, 999, 9_999)
    history_block: int = 5

    @memory_stream.validator
    def _generated(self, _: attrs.Attribute[int], value: int) -> None:
        if value not in self.streams:
            raise ValueError(f"memory_stream {value} is not one of the streams {self.streams}")


@attrs.frozen
class Cost:
    """What a run of some work costs, in seconds.

    ``wall`` is the time the run took. ``user`` is the CPU time the process
    spent in user space: its own code and the libraries', waits for memory
    included. The rest of ``wall`` is the kernel's (page faults, writing,
    returning memory) and the disk's.
    """

    wall: float
    user: float

    def per(self, count: int) -> Cost:
        """Each measure divided by ``count`` (the cost per entry, say)."""
        return Cost(self.wall / count, self.user / count)


def _user_time() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_utime


def _cost(work: Callable[[], object], setup: Callable[[], object] | None) -> Cost:
    """One run of ``work``, after ``setup`` and a collection (neither measured)."""
    if setup is not None:
        setup()
    gc.collect()  # a run does not pay for the garbage of the one before
    user = _user_time()
    start = time.perf_counter()
    work()
    wall = time.perf_counter() - start
    return Cost(wall, _user_time() - user)


#: A timed run, and what to do untimed before it (``None``: nothing).
Run: TypeAlias = tuple[Callable[[], object], Callable[[], object] | None]

_Name = TypeVar("_Name", bound=Hashable)


def paired_costs(runs: Mapping[_Name, Run], *, repeats: int) -> dict[_Name, list[Cost]]:
    """``repeats`` timed runs of each of ``runs``, by name: the i-th of each list ran in round i.

    The runs take turns (a, b, a, b, ...): a slow spell of the machine, which
    on a shared host can last seconds, then falls on each of them rather than
    on whichever was running, and the i-th runs of two names, side by side
    in time, make the i-th ratio. Each run's setup runs untimed before it.
    """
    costs: dict[_Name, list[Cost]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, (work, setup) in runs.items():
            costs[name].append(_cost(work, setup))
    return costs


def paired_times(runs: Mapping[_Name, Run], *, repeats: int) -> dict[_Name, list[float]]:
    """As :func:`paired_costs`, each run's wall time alone, in seconds."""
    return {
        name: [cost.wall for cost in costs]
        for name, costs in paired_costs(runs, repeats=repeats).items()
    }


def paired(
    values: Sequence[float], baselines: Sequence[float], *, scale: float = 1.0
) -> list[tuple[float, float]]:
    """Each run's (value, baseline), both times ``scale`` (1e3: seconds to milliseconds)."""
    return [
        (value * scale, baseline * scale)
        for value, baseline in zip(values, baselines, strict=True)
    ]


def peak_memory(work: Callable[[], object]) -> int:
    """The peak of memory allocated while ``work`` runs, in bytes (``tracemalloc``)."""
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        work()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - base


def retained_memory(build: Callable[[], object]) -> int:
    """The memory still allocated for what ``build`` returns, in bytes (``tracemalloc``)."""
    gc.collect()
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        kept = build()
        gc.collect()
        current, _ = tracemalloc.get_traced_memory()
        del kept
    finally:
        tracemalloc.stop()
    return current - base


def fixture_dirs() -> list[Path]:
    """The real conversations available on this machine (maybe none)."""
    if not JP_FIXTURES.is_dir():
        return []
    return sorted(path for path in JP_FIXTURES.iterdir() if (path / "events.json").is_file())


# ------------------------------------------------------------ generated streams


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode("ascii")


_WORDS = (
    "the tool reads the file and applies the patch before it runs the tests again; "
    "a question is recorded before anything decides where its answer comes from. "
)


def _text(seed: int, length: int) -> str:
    start = seed % len(_WORDS)
    return ((_WORDS[start:] + _WORDS) * (length // len(_WORDS) + 2))[:length]


def _stamp(counter: int) -> str:
    seconds = counter // 1000
    fraction = f"{counter % 1000 * 1000 + 7:06d}".rstrip("0") or "0"
    minute, second = divmod(seconds, 60)
    hour, minute = divmod(minute, 60)
    day, hour = divmod(hour, 24)
    return f"2026-03-{1 + day % 28:02d} {hour:02d}:{minute:02d}:{second:02d}.{fraction}"


def _turn(number: int, first_id: int, calls: int) -> Iterator[dict[str, Any]]:
    """One realistic turn: a request, reasoning, tool calls with a question each, an answer."""
    serial = first_id

    def envelope(kind: str) -> dict[str, Any]:
        nonlocal serial
        serial += 1
        return {"event_id": f"g{serial:09d}", "timestamp": _stamp(serial), "type": kind}

    yield envelope("turn_start")
    yield envelope("chat_request") | {"content": _text(number, 120)}
    reasoning = envelope("chat_response") | {"reasoning": _text(number + 3, 300)}
    yield reasoning | {"metadata": {"anthropic_thinking_signature": _b64(_text(number, 40))}}
    for call in range(calls):
        call_id = f"toolu_{number:07d}_{call}"
        arguments = {"path": _b64(f"src/module_{call}.rs"), "patch": _b64(_text(call, 200))}
        yield envelope("tool_call_request") | {
            "id": call_id,
            "name": "fs_modify_file",
            "arguments": arguments | {"dry_run": False},
            "metadata": {"rendered_arguments": _b64(_text(call + 1, 80))},
        }
        if call % 2 == 0:
            inquiry_id = f"{call_id}.apply_changes"
            yield envelope("inquiry_request") | {
                "id": inquiry_id,
                "source": {"source": "tool", "name": "fs_modify_file"},
                "question": {
                    "text": "Do you want to apply the following patch?",
                    "answer_type": {"type": "boolean"},
                    "default": True,
                },
            }
            yield envelope("inquiry_response") | {"id": inquiry_id, "answer": True}
        yield envelope("tool_call_response") | {
            "id": call_id,
            "content": _b64(_text(call + 2, 250)),
            "is_error": False,
        }
    yield envelope("chat_response") | {"message": _text(number + 5, 200)}


def generated_entries(count: int) -> list[dict[str, Any]]:
    """``count`` wire entries: turns of four tool calls, two of which ask a question."""
    entries: list[dict[str, Any]] = []
    number = 0
    while len(entries) < count:
        entries.extend(_turn(number, len(entries), calls=4))
        number += 1
    del entries[count:]
    return entries


def generated_turns(turns: int) -> list[dict[str, Any]]:
    """The wire entries of ``turns`` whole turns, each as :func:`generated_entries` makes them."""
    entries: list[dict[str, Any]] = []
    for number in range(turns):
        entries.extend(_turn(number, len(entries), calls=4))
    return entries


def write_conversation(directory: Path, entries: list[dict[str, Any]]) -> Path:
    """Write ``entries`` as a conversation in JP's current layout; return the directory."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "events.json").write_bytes(
        orjson.dumps(entries, option=orjson.OPT_INDENT_2) + b"\n"
    )
    (directory / "metadata.json").write_bytes(b'{\n  "title": "generated"\n}\n')
    config = {"assistant": {"name": "bench", "model": {"id": "anthropic/claude"}}}
    (directory / "base_config.json").write_bytes(
        orjson.dumps(config, option=orjson.OPT_INDENT_2) + b"\n"
    )
    return directory
