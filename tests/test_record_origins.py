"""Only machine transitions produce inquiry records, proven from the source.

Every call that constructs an ``InquiryRequest``, ``Answered``, ``Cancelled``
or ``Redacted`` in ``machines/`` and ``coordinator/`` is found by walking the
syntax tree. The only
places allowed are functions of the inquiry machine's module that its table
rows' actions reach, and the codec's reader (which rebuilds records from disk
rather than producing new ones).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import TYPE_CHECKING

from machines import INQUIRY_ROWS

if TYPE_CHECKING:
    from collections.abc import Iterator

PROJECT = Path(__file__).resolve().parent.parent
INQUIRY_RECORDS = {"InquiryRequest", "Answered", "Cancelled", "Redacted"}
MACHINE_MODULE = "machines/_inquiry_machine.py"
#: Reading from disk rebuilds records; it does not produce new ones.
READERS = {
    ("coordinator/wire/_codec.py", "_structure_response"),
    ("coordinator/wire/_codec.py", "_structure_inquiry_request"),
}


def _sources() -> Iterator[tuple[str, ast.Module]]:
    for package in ("machines", "coordinator"):
        for path in sorted((PROJECT / package).rglob("*.py")):
            yield path.relative_to(PROJECT).as_posix(), ast.parse(path.read_text(), str(path))


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _functions(tree: ast.Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _built_records(node: ast.AST) -> Iterator[tuple[str, int]]:
    """(record, line) for each inquiry record constructed in ``node``."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call) and (name := _called_name(inner)) in INQUIRY_RECORDS:
            yield str(name), inner.lineno


def _constructions(tree: ast.Module) -> Iterator[tuple[str, str, int]]:
    """(enclosing function, record, line) for each construction of an inquiry record."""
    for function in _functions(tree):
        for record, line in _built_records(function):
            yield function.name, record, line
    # A construction at module level (outside any function) is never allowed.
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for record, line in _built_records(node):
            yield "<module>", record, line


def _reachable_from_actions(tree: ast.Module) -> set[str]:
    calls: dict[str, set[str]] = {}
    for function in _functions(tree):
        calls[function.name] = {
            name
            for node in ast.walk(function)
            if isinstance(node, ast.Call) and (name := _called_name(node)) is not None
        }
    reachable = {row.action.__name__ for row in INQUIRY_ROWS if row.action is not None}
    frontier = list(reachable)
    while frontier:
        for callee in calls.get(frontier.pop(), ()):
            if callee in calls and callee not in reachable:
                reachable.add(callee)
                frontier.append(callee)
    return reachable


def test_inquiry_records_are_produced_only_by_inquiry_machine_transitions() -> None:
    """No code outside the inquiry machine's row actions constructs an inquiry record."""
    offenders = []
    found_in_machine = set()
    for module, tree in _sources():
        allowed = _reachable_from_actions(tree) if module == MACHINE_MODULE else set()
        for function, record, line in _constructions(tree):
            if module == MACHINE_MODULE and function in allowed:
                found_in_machine.add(record)
            elif (module, function) not in READERS:
                offenders.append(f"{module}:{line} {function}() constructs {record}")
    assert offenders == []
    # And the scan does see the machine producing every one of them.
    assert found_in_machine == INQUIRY_RECORDS


def test_the_scan_would_catch_a_construction_elsewhere() -> None:
    """The scanner flags a record built outside an action (so the test above can fail)."""
    tree = ast.parse("def handler():\n    return Answered(id='x', answer=True)\n")
    assert list(_constructions(tree)) == [("handler", "Answered", 2)]
    assert "handler" not in _reachable_from_actions(tree)
