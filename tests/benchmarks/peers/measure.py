"""The peers' side by side with ours, run inside the peers' own environment.

Run by ``bench_peers.py`` with the interpreter of ``tests/benchmarks/peers/.venv``
(where the pinned peers are installed beside the project's own dependencies)
and the checkout on ``PYTHONPATH``; prints one JSON metric per line. Each pair
of sides takes turns run by run, in this one process (see
``bench_support.best_times``), so the peer is the baseline measured in the
same run:

- **LangGraph**: a graph whose one node asks ``questions`` questions with
  ``interrupt()``, resumed each time with ``Command(resume=True)`` under
  ``InMemorySaver``, against the same questions asked by one tool call
  through the :class:`~coordinator.ToolCoordinator`, each routed to the
  person and answered by a scripted prompter: end to end, every record
  appended to the conversation (in memory, as the peer's checkpoints are).
  Both re-run their asking code from the top on each answer (a node replays
  its ``interrupt()`` calls, a tool is run again with the answers so far).
  Each run asks them in ``threads`` fresh threads (conversations); per
  question is the run over ``threads * questions``.
- **python-statemachine**: a machine built from :data:`machines.INQUIRY_ROWS`
  (the inquiry machine's states, its rows in order, its very guards and
  actions, called with the same model and payload), against our
  ``TableMachine`` executing the same table: the path of a question routed
  to the person (``ask``, ``resolve``, ``terminal_ready``, ``answer``), each
  trigger sent on its own on both sides. Per step, with each side's machines
  made beforehand (python-statemachine makes one per model; ours is shared);
  and, apart, what making a question's machine costs.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.metadata
import sys
from itertools import count
from typing import TYPE_CHECKING, Any, TypedDict

import orjson
from bench_support import Metric, Run, best_times
from bench_tools import AskInTurn

from coordinator import (
    BuiltinExecutor,
    Conversation,
    ScriptedPrompter,
    ToolCoordinator,
    parse_tools_config,
)
from machines import (
    INQUIRY_MACHINE,
    INQUIRY_ROWS,
    ChatRequest,
    ChatResponse,
    Inquiry,
    InquiryFacts,
    InquirySource,
    InquiryState,
    Question,
    ToolCallRequest,
    TurnStart,
    TurnState,
)
from machines._table import Out

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping


__all__ = ["main"]

TOOL = "ask_each"
CONFIG = parse_tools_config({"defaults": {"run": "unattended"}})
QUESTION = Question.boolean("apply_changes", "Apply the patch?", default=True)
SOURCE = InquirySource.tool(TOOL)
#: What each thread's conversation holds before its tool call.
PRELUDE = (TurnStart(), ChatRequest(content="apply the patch"), ChatResponse.message("Asking."))
#: The path of a question routed to the person: each trigger and its payload.
ROUTED_PATH: tuple[tuple[str, dict[str, Any]], ...] = (
    ("ask", {}),
    ("resolve", {}),
    ("terminal_ready", {"cached": None}),
    ("answer", {"value": True, "remember": False}),
)


class Answers(TypedDict):
    """The LangGraph graph's state: the answers its node was given."""

    answers: list[bool]


def _peer(module: str) -> Any:
    """A peer's module: imported by name, as the project's own checks never install them."""
    return importlib.import_module(module)


# ------------------------------------------------------------------ questions


def ours(threads: int, questions: int) -> Run:
    """``threads`` tool calls, each asking ``questions`` questions through the coordinator."""
    asked = [Question.boolean(f"q{number}", f"Question {number}?") for number in range(questions)]
    executor = BuiltinExecutor(AskInTurn(asked))
    prepared: list[tuple[Conversation, ToolCallRequest, ScriptedPrompter]] = []

    def setup() -> None:
        prepared.clear()
        for thread in range(threads):
            conversation = Conversation.new()
            for record in PRELUDE:
                conversation.stream.append(record)
            request = ToolCallRequest(id=f"call_{thread}", name=TOOL, arguments={})
            conversation.stream.append(request)
            prompter = ScriptedPrompter()
            for _ in range(questions):
                prompter.answer(True)
            prepared.append((conversation, request, prompter))

    async def ask_all() -> None:
        for conversation, request, prompter in prepared:
            coordinator = ToolCoordinator(
                conversation, tools={TOOL: executor}, config=CONFIG, prompter=prompter
            )
            [response] = await coordinator.run([request])
            # Each question adds its request and its answer, then the call its response.
            if response.is_error or len(conversation.stream) != len(PRELUDE) + 2 * questions + 2:
                raise AssertionError("a tool call of the benchmark did not ask every question")

    return lambda: asyncio.run(ask_all()), setup


def langgraph(threads: int, questions: int) -> Run:
    """``threads`` graph runs, each asking ``questions`` questions with ``interrupt()``."""
    graph_module = _peer("langgraph.graph")
    types = _peer("langgraph.types")
    memory = _peer("langgraph.checkpoint.memory")
    interrupt, command = types.interrupt, types.Command

    def ask(state: Answers) -> Answers:
        del state
        return {"answers": [interrupt(f"Question {number}?") for number in range(questions)]}

    builder = graph_module.StateGraph(Answers)
    builder.add_node("ask", ask)
    builder.add_edge(graph_module.START, "ask")
    builder.add_edge("ask", graph_module.END)
    compiled: list[Any] = []
    ids = count()

    def setup() -> None:
        compiled[:] = [builder.compile(checkpointer=memory.InMemorySaver())]

    def ask_all() -> None:
        graph = compiled[0]
        for _ in range(threads):
            config = {"configurable": {"thread_id": f"thread_{next(ids)}"}}
            result = graph.invoke({"answers": []}, config)
            for _ in range(questions):
                result = graph.invoke(command(resume=True), config)
            if result.get("answers") != [True] * questions:
                raise AssertionError("a graph run of the benchmark did not ask every question")

    return ask_all, setup


# ---------------------------------------------------------------- machine steps


def _inquiry() -> Inquiry:
    return Inquiry(
        turn=TurnState(),
        tool_call_id="call",
        tool_name=TOOL,
        question=QUESTION,
        source=SOURCE,
        facts=InquiryFacts(terminal=True),
    )


def _answered(models: list[Inquiry]) -> None:
    if any(model.state is not InquiryState.ANSWERED for model in models):
        raise AssertionError("a question of the benchmark was not answered")


def table_steps(models: int) -> Run:
    """The routed path, trigger by trigger, through our ``TableMachine``."""
    prepared: list[Inquiry] = []

    def setup() -> None:
        prepared[:] = [_inquiry() for _ in range(models)]

    def steps() -> None:
        fire = INQUIRY_MACHINE.fire
        for model in prepared:
            for trigger, payload in ROUTED_PATH:
                fire(model, trigger, chain=False, **payload)
            model.buffer.take()
        _answered(prepared)

    return steps, setup


def _callback(test: Callable[[Any, Mapping[str, Any]], Any], name: str) -> Callable[..., Any]:
    """A guard or action as python-statemachine calls it: the model, and the payload by name."""

    def callback(model: Any, **payload: Any) -> Any:
        return test(model, payload)

    # python-statemachine caches each callback's signature by qualified name.
    callback.__qualname__ = f"row_{name}"
    return callback


def _action(action: Callable[[Any, Mapping[str, Any], Out], None]) -> Callable[[Any, Any], None]:
    def run(model: Any, payload: Mapping[str, Any]) -> None:
        action(model, payload, Out())

    return run


def statemachine_class() -> type[Any]:
    """A python-statemachine machine with the inquiry machine's states and rows, in order."""
    statemachine = _peer("statemachine")
    states = {
        state: statemachine.State(
            state.value,
            value=state,
            initial=state is INQUIRY_MACHINE.start,
            final=state in INQUIRY_MACHINE.final,
        )
        for state in InquiryState
    }
    events: dict[str, Any] = {}
    for number, row in enumerate(INQUIRY_ROWS):
        options: dict[str, Any] = {}
        if row.guard is not None:
            options["cond"] = _callback(row.guard.test, f"{number}_guard")
        if row.action is not None:
            options["on"] = _callback(_action(row.action), f"{number}_action")
        source = states[row.source]
        if row.dest is None:
            transition = source.to.itself(internal=True, **options)
        else:
            transition = source.to(states[row.dest], **options)
        trigger = row.trigger
        events[trigger] = events[trigger] | transition if trigger in events else transition
    namespace = {state.name.lower(): declared for state, declared in states.items()} | events
    return type("InquiryStateMachine", (statemachine.StateMachine,), namespace)


def statemachine_steps(models: int, machine: type[Any]) -> Run:
    """The routed path, trigger by trigger, through python-statemachine."""
    prepared: list[tuple[Inquiry, Any]] = []

    def setup() -> None:
        inquiries = [_inquiry() for _ in range(models)]
        prepared[:] = [(model, machine(model=model, state_field="state")) for model in inquiries]

    def steps() -> None:
        for _, instance in prepared:
            for trigger, payload in ROUTED_PATH:
                instance.send(trigger, **payload)
        _answered([model for model, _ in prepared])

    return steps, setup


def new_machines(models: int, machine: type[Any] | None) -> Run:
    """Making ``models`` questions' machines: python-statemachine's, or our models."""
    made: list[object] = []

    def make() -> None:
        if machine is None:
            made[:] = [_inquiry() for _ in range(models)]
        else:
            made[:] = [machine(model=_inquiry(), state_field="state") for _ in range(models)]

    return make, made.clear


# ----------------------------------------------------------------------- main


def _versions() -> str:
    return ", ".join(
        f"{name} {importlib.metadata.version(name)}"
        for name in ("langgraph", "langgraph-checkpoint", "python-statemachine")
    )


def measure(threads: int, questions: int, models: int, repeats: int) -> list[Metric]:
    """Every peer metric."""
    versions = _versions()
    asked = threads * questions
    per_question = best_times(
        {"ours": ours(threads, questions), "langgraph": langgraph(threads, questions)},
        repeats=repeats,
    )
    machine = statemachine_class()
    steps = best_times(
        {"ours": table_steps(models), "statemachine": statemachine_steps(models, machine)},
        repeats=repeats,
    )
    made = best_times(
        {"ours": new_machines(models, None), "statemachine": new_machines(models, machine)},
        repeats=repeats,
    )
    per_step = len(ROUTED_PATH) * models
    return [
        Metric(
            metric="peers.langgraph.per_question",
            value=per_question["ours"] / asked * 1e6,
            baseline=per_question["langgraph"] / asked * 1e6,
            unit="us/question",
            target=0.1,
            note=(
                f"{threads} threads x {questions} questions: ToolCoordinator and a scripted "
                f"prompter vs interrupt() + Command(resume=...) under InMemorySaver ({versions})"
            ),
        ),
        Metric(
            metric="peers.python_statemachine.step",
            value=steps["ours"] / per_step * 1e6,
            baseline=steps["statemachine"] / per_step * 1e6,
            unit="us/step",
            note=f"the inquiry table's routed path, {models} questions, same guards and actions",
        ),
        Metric(
            metric="peers.python_statemachine.new_machine",
            value=made["ours"] / models * 1e6,
            baseline=made["statemachine"] / models * 1e6,
            unit="us/question",
            note="a question's machine: our model (the table's machine is shared) vs an instance",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    """Measure and print one JSON metric per line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--questions", type=int, required=True)
    parser.add_argument("--models", type=int, required=True)
    parser.add_argument("--repeats", type=int, required=True)
    args = parser.parse_args(argv)
    for metric in measure(args.threads, args.questions, args.models, args.repeats):
        sys.stdout.write(orjson.dumps(metric.as_json()).decode() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
