"""Diagrams and tables of a machine, rendered from the table the machine runs.

The output is deterministic: rows in table order, states in enum order, no
styling that depends on a model's current state. ``coordinator`` writes these
to ``diagrams/`` and into ``docs/machines.md``; a test fails when a file is
stale. A row's meaning columns (``outcome``, ``resolution``, ``permission``,
``delivery``, ``detached``)
are shown on its arrow as ``column=value``, and in a table as columns of
their own, for the columns some row of that table fills.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from machines._table import Row, TableMachine

__all__ = ["render_dot", "render_markdown_table", "render_mermaid"]


#: A row's meaning columns, as the tables head them.
_MEANINGS = {
    "outcome": "Outcome",
    "resolution": "Resolution",
    "permission": "Permission",
    "delivery": "Delivery",
    "detached": "Detached policy",
}


def _meanings(row: Row[Any, Any]) -> dict[str, str]:
    """The meaning columns ``row`` fills, shown as words (``skipped by configuration``)."""
    values = {
        "outcome": row.outcome,
        "resolution": row.resolution,
        "permission": row.permission,
        "delivery": row.delivery,
        "detached": row.detached,
    }
    return {
        column: value.value if isinstance(value, Enum) else str(value)
        for column, value in values.items()
        if value is not None
    }


def _label(row: Row[Any, Any]) -> str:
    trigger = f"{row.trigger} (auto)" if row.auto else row.trigger
    parts = [trigger]
    if row.guard is not None:
        parts.append(f"[{row.guard.name}]")
    produced = [kind.__name__ for kind in (*row.emits, *row.effects)]
    if row.delegates:
        produced.append(f"→ {row.delegates}")
    if produced:
        parts.append("/ " + ", ".join(produced))
    parts.extend(f"· {column}={value}" for column, value in _meanings(row).items())
    return " ".join(parts)


def render_mermaid(machine: TableMachine[Any, Any]) -> str:
    """A Mermaid ``stateDiagram-v2`` of ``machine``."""
    lines = [
        "---",
        f"title: {machine.name} machine",
        "---",
        "stateDiagram-v2",
        "    direction LR",
        f"    [*] --> {machine.start.value}",
    ]
    lines.extend(
        f"    {row.source.value} --> {row.target.value}: {_label(row)}" for row in machine.rows
    )
    lines.extend(
        f"    {state.value} --> [*]" for state in machine.states if state in machine.final
    )
    return "\n".join(lines) + "\n"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_dot(machine: TableMachine[Any, Any]) -> str:
    """A Graphviz DOT digraph of ``machine``."""
    lines = [
        f"digraph {machine.name} {{",
        "    rankdir=LR;",
        '    node [shape=box, style=rounded, fontname="Helvetica"];',
        '    edge [fontname="Helvetica", fontsize=10];',
        '    __start__ [shape=point, label=""];',
    ]
    for state in machine.states:
        final = ", peripheries=2" if state in machine.final else ""
        lines.append(f"    {_quote(state.value)} [label={_quote(state.value)}{final}];")
    lines.append(f"    __start__ -> {_quote(machine.start.value)};")
    lines.extend(
        f"    {_quote(row.source.value)} -> {_quote(row.target.value)} "
        f"[label={_quote(_label(row))}];"
        for row in machine.rows
    )
    lines.append("}")
    return "\n".join(lines) + "\n"


def _code(text: str) -> str:
    return f"`{text}`"


def render_markdown_table(machine: TableMachine[Any, Any]) -> str:
    """The transition table of ``machine`` as Markdown, one line per row."""
    meanings = [_meanings(row) for row in machine.rows]
    columns = [column for column in _MEANINGS if any(column in row for row in meanings)]
    heads = ["#", "Trigger", "From", "To", "When", "Emits", "Effects"]
    heads += [_MEANINGS[column] for column in columns]
    lines = ["| " + " | ".join(heads) + " |", "|" + " --- |" * len(heads)]
    for number, (row, meaning) in enumerate(zip(machine.rows, meanings, strict=True), start=1):
        trigger = _code(row.trigger) + (" (auto)" if row.auto else "")
        target = _code(row.dest.value) if row.dest is not None else "(stays)"
        when = row.guard.description if row.guard is not None else "always"
        emits = ", ".join(_code(kind.__name__) for kind in row.emits) or "—"
        effects = [_code(kind.__name__) for kind in row.effects]
        if row.delegates:
            effects.append(f"→ {_code(row.delegates)}")
        cells = [str(number), trigger, _code(row.source.value), target, when, emits]
        cells.append(", ".join(effects) or "—")
        cells += [meaning.get(column, "—") for column in columns]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"Final states: {_states(machine, machine.final)}.")
    if machine.transient:
        lines.append(
            f"Transient states (an automatic row must fire on entry): "
            f"{_states(machine, machine.transient)}."
        )
    return "\n".join(lines) + "\n"


def _states(machine: TableMachine[Any, Any], chosen: frozenset[Any]) -> str:
    """``chosen`` in the order the machine declares its states."""
    return ", ".join(_code(state.value) for state in machine.states if state in chosen)
