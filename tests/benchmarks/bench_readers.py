"""Benchmark 4: pairing and ``sanitize()`` on long streams of many turns.

Both are single passes, so their cost per entry should not grow with the
stream: the metric is the cost per entry on the longest stream, against the
cost per entry on the shortest, measured in the same run. The streams are the
generated conversations of the store benchmark (turns of eleven to sixteen
entries) with every hundredth tool-call response missing, so that
``sanitize()`` has repairs to make.

The longest stream is compared with each shorter one: with the shortest,
which fits in the CPU caches, the figure includes the step from cache to
memory; with the next, which is already far beyond the caches, it shows
how the pass itself grows. Beside them, with no target, the same figures for
the least any reader does: a pass reading each entry's payload and its id.
What that costs more per entry on the long stream is the memory's, not the
readers'.

Each timed run reads as many entries on a short stream as on the long one
(the short one, over and over), and the runs take turns: one pass over a
million entries lasts seconds, long enough to be caught by a slow spell of
a shared machine, so the short streams' runs must be as exposed to them, or
the comparison measures the machine.
"""

from __future__ import annotations

from bench_support import Metric, Run, Sizes, best_times, generated_entries

from coordinator import ConversationStream, pair_events, sanitize

#: Each pass measured, and its target (the floor has none: it shows the machine).
_READERS = {"pair_events": 1.2, "sanitize": 1.2, "read_payload_ids": None}

__all__ = ["run"]


def _stream(count: int) -> ConversationStream:
    entries = generated_entries(count)
    responses = [i for i, entry in enumerate(entries) if entry["type"] == "tool_call_response"]
    for index in reversed(responses[::100]):
        del entries[index]
    return ConversationStream.from_wire(entries)[0]


def _reader_runs(stream: ConversationStream, passes: int) -> dict[str, Run]:
    """For each reader, a timed run of ``passes`` passes over ``stream`` and its setup."""
    copies: list[ConversationStream] = []

    def pair() -> None:
        for _ in range(passes):
            pair_events(stream)

    def fresh() -> None:  # sanitize changes the stream it is given: a copy per pass
        copies[:] = [ConversationStream(stream) for _ in range(passes)]

    def repair() -> None:
        for copy in copies:
            sanitize(copy)

    def read() -> None:
        for _ in range(passes):
            [getattr(getattr(entry, "payload", None), "id", None) for entry in stream]

    return {
        "pair_events": (pair, None),
        "sanitize": (repair, fresh),
        "read_payload_ids": (read, None),
    }


def run(sizes: Sizes) -> list[Metric]:
    """Every reader metric: the longest stream against each shorter one."""
    large = max(sizes.reader_streams)
    passes = {count: max(1, large // count) for count in sizes.reader_streams}
    streams = {count: _stream(count) for count in passes}
    runs = {count: _reader_runs(streams[count], passes[count]) for count in passes}
    best = {
        name: best_times(
            {count: runs[count][name] for count in passes}, repeats=max(2, sizes.repeats)
        )
        for name in _READERS
    }
    # Per entry: each run read ``passes[count]`` times the stream of ``count``.
    per_entry = {
        (name, count): seconds / (passes[count] * len(streams[count]))
        for name, times in best.items()
        for count, seconds in times.items()
    }
    return [
        Metric(
            metric=f"readers.{name}.per_entry.{large}_vs_{small}",
            value=per_entry[name, large] * 1e9,
            baseline=per_entry[name, small] * 1e9,
            unit="ns/entry",
            target=target,
            note=f"{name} per entry on {large} entries vs {small} ({passes[small]} passes)",
        )
        for name, target in _READERS.items()
        for small in sorted(passes)
        if small != large
    ]
