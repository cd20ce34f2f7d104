"""Benchmark 1: load and save a conversation, against the raw lossless pipeline.

The baseline reads each file, parses it with ``orjson``, decodes the base64
storage fields of ``events.json``, encodes them again, dumps the JSON as JP
writes it and replaces the file durably (the same atomic write the store
uses, so both sides pay the same ``fsync``). The engine side is
``load_conversation`` then ``save_conversation`` to a fresh directory, so
every file is really written.
"""

from __future__ import annotations

import base64
import binascii
import mmap
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
from bench_support import (
    Cost,
    Metric,
    Sizes,
    best_costs,
    fixture_dirs,
    generated_entries,
    peak_memory,
    retained_memory,
    write_conversation,
)

from coordinator import load_conversation, save_conversation
from coordinator._atomic import atomic_write

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


# ------------------------------------------------------------------- timing


def _compare(
    name: str, source: Path, *, entries: int, scratch: Path, repeats: int, note: str = ""
) -> tuple[Metric, dict[str, Cost]]:
    """The load+save metric for ``source``, and each side's cost per entry."""
    target = scratch / "out"

    def clear() -> None:
        shutil.rmtree(target, ignore_errors=True)

    costs = best_costs(
        {
            "baseline": (lambda: raw_pipeline(source, target), clear),
            "engine": (lambda: engine_pipeline(source, target), clear),
        },
        repeats=repeats,
    )
    clear()
    metric = Metric(
        metric=f"store.load_save.{name}",
        value=costs["engine"].wall * 1e3,
        baseline=costs["baseline"].wall * 1e3,
        unit="ms",
        target=1.5,
        note=note or f"{entries} entries",
    )
    return metric, {side: cost.per(entries) for side, cost in costs.items()}


def _memory(name: str, source: Path, entries: int, scratch: Path) -> list[Metric]:
    """Peak memory during load+save, and what a loaded conversation keeps."""
    target = scratch / "out"
    baseline = peak_memory(lambda: raw_pipeline(source, target))
    shutil.rmtree(target, ignore_errors=True)
    value = peak_memory(lambda: engine_pipeline(source, target))
    shutil.rmtree(target, ignore_errors=True)
    # The raw pipeline's peak is orjson's parse of the whole file, which holds
    # several times what it returns; the store parses a stream in pieces, so
    # its peak is near what it keeps. What a loaded conversation keeps, against
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


def _repeats(sizes: Sizes, count: int) -> int:
    """How many runs of each side for a stream of ``count`` entries.

    A run of ten thousand entries lasts a tenth of a second, which a slow
    spell of a shared machine often fills: those get many runs, so that the
    best of them finds the machine as quiet as a long run's best does. A run
    of a million lasts tens of seconds: fewer, but never one alone (a single
    run's page faults and fsync vary by a third).
    """
    if count <= 10_000:
        return sizes.repeats * 4
    if count <= 100_000:
        return sizes.repeats
    return max(2, sizes.repeats // 2)


def run(sizes: Sizes) -> list[Metric]:
    """Every store metric."""
    metrics: list[Metric] = []
    with tempfile.TemporaryDirectory(prefix="inquiry-bench-") as temp:
        scratch = Path(temp)
        fixtures = fixture_dirs()
        if fixtures:
            largest = max(fixtures, key=lambda path: (path / "events.json").stat().st_size)
            count = len(orjson.loads((largest / "events.json").read_bytes()))
            note = f"{largest.name}: {count} entries"
            metric, _ = _compare(
                "largest_fixture",
                largest,
                entries=count,
                scratch=scratch,
                repeats=sizes.repeats * 3,
                note=note,
            )
            metrics.append(metric)
            metrics.extend(_memory("largest_fixture", largest, count, scratch))

        per_entry: dict[int, dict[str, Cost]] = {}
        for count in sizes.streams:
            source = write_conversation(scratch / f"gen{count}", generated_entries(count))
            metric, per_entry[count] = _compare(
                _label(count),
                source,
                entries=count,
                scratch=scratch,
                repeats=_repeats(sizes, count),
            )
            metrics.append(metric)
            if count == sizes.memory_stream:
                metrics.extend(_memory(_label(count), source, count, scratch))
            shutil.rmtree(source)
        metrics.extend(_scaling(per_entry))
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
    recent = returned = float("inf")
    for _ in range(_repeats(sizes, max(sizes.streams))):  # as many as that stream's runs
        recent = min(recent, _touch(size))
        time.sleep(sizes.freed_pause)
        returned = min(returned, _touch(size))
    return Metric(
        metric="store.machine.page_freed_a_while_ago",
        value=returned / pages * 1e6,
        baseline=recent / pages * 1e6,
        unit="us/page",
        note=(
            f"writing {size >> 20} MB of fresh memory freed {sizes.freed_pause:g} s before,"
            " against freed just before"
        ),
    )


def _scaling(per_entry: dict[int, dict[str, Cost]]) -> list[Metric]:
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
        Metric(
            metric=f"store.per_entry_scaling.{prefix}{measure_prefix}{scaling}",
            value=getattr(per_entry[large][side], measure) * 1e6,
            baseline=getattr(per_entry[small][side], measure) * 1e6,
            unit="us/entry",
            target=1.2 if side == "engine" and measure == "wall" else None,
            note=f"{who} {what} per entry at {large} vs {small} entries",
        )
        for side, who, prefix in sides
        for measure, measure_prefix, what in measures
    ]
