"""Benchmark 4: pairing and ``sanitize()`` on long streams of many turns.

Both are single passes, so their cost per entry should not grow with the
stream: the metric is the cost per entry on the longest stream, against the
cost per entry on shorter ones, measured in the same run. The stream is the
generated conversation of the store benchmark (turns of eleven to sixteen
entries) with every hundredth tool-call response missing, so that
``sanitize()`` has repairs to make.

A shorter stream is a slice of the longest: a run at ten thousand entries
passes over each of the longest stream's hundred slices of ten thousand in
turn, so every run reads the same million entries, from the same places in
memory. One short stream read over and over would sit in the CPU's caches
after its first pass, and the comparison would measure the step from cache
to memory (what the least a reader does, below, shows is most of a
reader's growth) rather than whether the pass grows with the stream. For
the same reason each run keeps what its passes return until it is over
(see :func:`_reader_runs`). Beside them, with no target, the same figures
for the least any reader does: a pass reading each entry's payload and its
id.

Each timed run reads as many entries at every size, and the runs take
turns: one pass over a million entries lasts seconds, long enough to be
caught by a slow spell of a shared machine, so the short streams' runs must
be as exposed to them, or the comparison measures the machine.
"""

from __future__ import annotations

from bench_support import Metric, Run, Sizes, generated_entries, paired, paired_times

from coordinator import ConversationStream, pair_events, sanitize
from coordinator.wire import decode_stream

#: Each pass measured, and its target (the floor has none: it shows the machine).
_READERS = {"pair_events": 1.2, "sanitize": 1.2, "read_payload_ids": None}

__all__ = ["run"]


def _stream(count: int) -> ConversationStream:
    entries = generated_entries(count)
    responses = [i for i, entry in enumerate(entries) if entry["type"] == "tool_call_response"]
    for index in reversed(responses[::100]):
        del entries[index]
    return decode_stream(entries)[0]


def _slices(stream: ConversationStream, count: int) -> list[ConversationStream]:
    """``stream`` cut into streams of ``count`` entries (the last may be shorter).

    A cut inside a turn makes the turn's start the next slice's implicit
    leading turn: one turn in ``count`` entries, read as any stream's is.
    """
    entries = list(stream)
    return [
        ConversationStream(entries[start : start + count])
        for start in range(0, len(entries), count)
    ]


def _reader_runs(streams: list[ConversationStream]) -> dict[str, Run]:
    """For each reader, a timed run of one pass over each of ``streams``, and its setup.

    A run keeps what each pass returns until the run is over, as a caller
    keeps the pairing it asked for; the setup of the next run lets it go.
    Dropped at once, a pass's result would leave its memory to the next
    pass, still in the CPU's caches, which the result of ten thousand
    entries fits in and that of a million does not: the comparison would
    measure the caches again.
    """
    kept: list[object] = []
    copies: list[ConversationStream] = []

    def forget() -> None:
        kept.clear()

    def pair() -> None:
        kept.extend(pair_events(stream) for stream in streams)

    def fresh() -> None:  # sanitize changes the stream it is given: a copy per pass
        kept.clear()
        copies[:] = [ConversationStream(stream) for stream in streams]

    def repair() -> None:
        kept.extend(sanitize(copy) for copy in copies)

    def read() -> None:
        kept.extend(
            [getattr(getattr(entry, "payload", None), "id", None) for entry in stream]
            for stream in streams
        )

    return {
        "pair_events": (pair, forget),
        "sanitize": (repair, fresh),
        "read_payload_ids": (read, forget),
    }


def run(sizes: Sizes) -> list[Metric]:
    """Every reader metric: the longest stream against each shorter one."""
    large = max(sizes.reader_streams)
    longest = _stream(large)
    streams = {count: _slices(longest, count) for count in sizes.reader_streams}
    runs = {count: _reader_runs(streams[count]) for count in streams}
    measured = {
        name: paired_times({count: runs[count][name] for count in streams}, repeats=sizes.runs)
        for name in _READERS
    }
    return [
        Metric.from_runs(
            metric=f"readers.{name}.per_entry.{large}_vs_{small}",
            # Every run reads the same entries at every size: the ratio per entry is the run's.
            runs=paired(measured[name][large], measured[name][small], scale=1e9 / len(longest)),
            unit="ns/entry",
            target=target,
            note=(
                f"{name} per entry on {large} entries vs {small}"
                f" (each of {len(streams[small])} slices in turn)"
            ),
        )
        for name, target in _READERS.items()
        for small in sorted(streams)
        if small != large
    ]
