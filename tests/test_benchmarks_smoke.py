"""The benchmark runner runs: every metric line of a quick run is well formed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import TYPE_CHECKING

import orjson
from conftest import PROJECT

if TYPE_CHECKING:
    from pathlib import Path

RUNNER = PROJECT / "tests" / "benchmarks" / "run.py"
GROUPS = ("store", "inquiry", "turn", "history", "readers", "startup", "resume", "inbox")


def test_a_quick_run_prints_one_json_object_per_metric() -> None:
    """Each line is a metric with a name, positive figures, and its runs' ratios around it."""
    done = subprocess.run(
        # The peers group builds an environment from the network: see the test below.
        [sys.executable, str(RUNNER), "--quick", "--json", "--skip", "peers"],
        capture_output=True,
        check=True,
        timeout=120,
    )
    metrics = [orjson.loads(line) for line in done.stdout.splitlines()]
    assert metrics
    for metric in metrics:
        assert list(metric)[:4] == ["metric", "value", "baseline", "ratio"]
        assert isinstance(metric["metric"], str)
        for key in ("value", "baseline", "ratio"):
            assert isinstance(metric[key], float | int)
            assert metric[key] > 0, metric
        # A quick run makes two runs of a row (a memory row is measured once);
        # the ratio is their median, within their range.
        assert metric["runs"] == len(metric["pairs"]) >= 1, metric
        assert metric["ratio_min"] <= metric["ratio"] <= metric["ratio_max"], metric
    timed = [metric for metric in metrics if "memory" not in metric["metric"]]
    assert {metric["runs"] for metric in timed} >= {2}
    assert {metric["metric"].split(".")[0] for metric in metrics} == set(GROUPS)
    store = {
        metric["metric"].split(".")[1]
        for metric in metrics
        if metric["metric"].startswith("store.")
    }
    assert store >= {
        "load_save",
        "peak_memory_per_entry",
        "retained_memory_per_entry",
        "per_entry_scaling",
        "machine",
    }
    startup = {metric["metric"] for metric in metrics if metric["metric"].startswith("startup.")}
    assert startup == {
        "startup.version",
        "startup.help",
        "startup.check",
        "startup.floor.argparse_version",
        "startup.floor.dependencies",
    }
    # Each growth figure has the machine's own beside it: the raw pipeline's, the floor pass's;
    # and the load's growth is split, its CPU time in user space beside its wall time.
    scaling = {
        metric["metric"].rsplit(".", 1)[0]
        for metric in metrics
        if metric["metric"].startswith("store.per_entry_scaling.")
    }
    assert scaling == {
        "store.per_entry_scaling",
        "store.per_entry_scaling.user_cpu",
        "store.per_entry_scaling.raw_pipeline",
        "store.per_entry_scaling.raw_pipeline.user_cpu",
    }
    readers = {m["metric"].split(".")[1] for m in metrics if m["metric"].startswith("readers.")}
    assert readers == {"pair_events", "sanitize", "read_payload_ids"}
    # A turn at two later turns against turn 1, in memory and saved as it goes.
    history = {m["metric"] for m in metrics if m["metric"].startswith("history.")}
    assert history == {
        "history.turn_in_memory.100_vs_1",
        "history.turn_in_memory.1000_vs_1",
        "history.turn_durable.100_vs_1",
        "history.turn_durable.1000_vs_1",
    }


def test_markdown_prints_the_readme_table_and_every_row_with_medians_and_ranges() -> None:
    """`--markdown` heads both tables with the run; each row shows its median and range."""
    done = subprocess.run(
        [sys.executable, str(RUNNER), "--quick", "--markdown", "--runs", "3", "--only", "startup"],
        capture_output=True,
        check=True,
        text=True,
        timeout=120,
    )
    readme, performance = done.stdout.split("<!-- docs/performance.md, The figures -->")
    assert readme.startswith("<!-- README.md, How fast -->\nFrom one run of")
    for table in (readme, performance):
        assert "(3 runs a row)" in table
        assert "load average" in table
        assert "| what | value: median (range) | ratio: median (range) | target |" in table
    version_row = next(line for line in readme.splitlines() if "`inquiry --version`" in line)
    # The median, then the range as an en dash joins it; the ratio with its times sign.
    figure = r"[\d.]+ ms \([\d.]+\N{EN DASH}[\d.]+\)"
    ratio = r"[\d.]+\N{MULTIPLICATION SIGN} \([\d.]+\N{EN DASH}[\d.]+\)"
    assert re.search(rf"\| {figure} \| {ratio} \| ≤ 2\N{{MULTIPLICATION SIGN}}", version_row)
    rows = [line for line in performance.splitlines() if line.startswith("| `startup.")]
    assert len(rows) == 5


def test_the_peers_group_is_skipped_saying_why_when_their_environment_cannot_be_built(
    tmp_path: Path,
) -> None:
    """Without the peers' environment the run still succeeds: no peer metric, and the reason."""
    blocker = tmp_path / "a file"
    blocker.write_text("not a directory")
    done = subprocess.run(
        [sys.executable, str(RUNNER), "--quick", "--json", "--only", "peers"],
        capture_output=True,
        check=True,
        timeout=120,
        env=os.environ | {"INQUIRY_PEERS_VENV": str(blocker / "venv")},
    )
    assert done.stdout == b""
    assert b"peers: skipped: making a venv in" in done.stderr
