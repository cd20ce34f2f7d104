"""Benchmark 4: pairing and ``sanitize()`` on long streams of many turns.

Both are single passes, so their cost per entry should not grow with the
stream: the metric is the cost per entry on the longest stream, against the
cost per entry on the shortest, measured in the same run. The streams are the
generated conversations of the store benchmark (turns of eleven to sixteen
entries) with every hundredth tool-call response missing, so that
``sanitize()`` has repairs to make.
"""

from __future__ import annotations

from bench_support import Metric, Sizes, best_time, generated_entries

from coordinator import ConversationStream, pair_events, sanitize

__all__ = ["run"]


def _stream(count: int) -> ConversationStream:
    entries = generated_entries(count)
    responses = [i for i, entry in enumerate(entries) if entry["type"] == "tool_call_response"]
    for index in reversed(responses[::100]):
        del entries[index]
    return ConversationStream.from_wire(entries)[0]


def _per_entry(stream: ConversationStream, repeats: int) -> tuple[float, float]:
    """Seconds per entry of ``pair_events`` and of ``sanitize`` (on a fresh copy each run)."""
    pairing = best_time(lambda: pair_events(stream), repeats=repeats)
    copies: list[ConversationStream] = []

    def fresh() -> None:
        copies[:] = [ConversationStream(stream)]

    repairing = best_time(lambda: sanitize(copies[0]), repeats=repeats, setup=fresh)
    copies.clear()
    return pairing / len(stream), repairing / len(stream)


def run(sizes: Sizes) -> list[Metric]:
    """Every reader metric."""
    small, large = min(sizes.reader_streams), max(sizes.reader_streams)
    repeats = {small: sizes.repeats * 2, large: max(2, sizes.repeats // 2)}
    figures = {count: _per_entry(_stream(count), repeats[count]) for count in (small, large)}
    return [
        Metric(
            metric=f"readers.{name}.per_entry.{large}_vs_{small}",
            value=figures[large][which] * 1e9,
            baseline=figures[small][which] * 1e9,
            unit="ns/entry",
            target=1.2,
            note=f"{name} per entry on {large} entries vs {small}",
        )
        for which, name in enumerate(("pair_events", "sanitize"))
    ]
