"""The peers' side by side with ours, run inside the peers' own environment.

Run by ``bench_peers.py`` with the interpreter of ``tests/benchmarks/peers/.venv``
(where the pinned peers are installed beside the project's own dependencies)
and the checkout on ``PYTHONPATH``; prints one JSON metric per line. Each pair
of sides takes turns run by run, in this one process (see
``bench_support.paired_costs``), so the peer is the baseline measured in the
same run, and each run's ratio is ours against the peer's beside it:

- **LangGraph, in memory**: a graph whose one node asks ``questions``
  questions with ``interrupt()``, resumed each time with
  ``Command(resume=True)`` under ``InMemorySaver``, against the same
  questions asked by one tool call through the
  :class:`~coordinator.ToolCoordinator`, each routed to the person and
  answered by a scripted prompter: end to end, every record appended to the
  conversation (in memory, as the peer's checkpoints are). Both re-run their
  asking code from the top on each answer (a node replays its ``interrupt()``
  calls, a tool is run again with the answers so far). Each run asks them in
  ``threads`` fresh threads (conversations); per question is the run over
  ``threads * questions``.
- **LangGraph, durable**: the peer as users meet it. A conversation of
  ``history`` turns (the generated turns of ``bench_support``) kept on disk:
  ours a conversation directory, loaded, saved before each question is shown
  and at the end of the turn; the peer's a thread under ``SqliteSaver`` (a
  SQLite file, its default WAL journal), its state carrying the
  conversation's records as an agent's does (a list channel that each step
  adds to). A run is one more turn on each: its opening records, one tool
  call (one node) asking ``questions`` questions routed to the person, its
  records, the closing message. Each side plays one turn untimed first (our
  first save after a load writes the file whole, once).
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
import operator
import sqlite3
import sys
import tempfile
from contextlib import ExitStack
from itertools import count
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

import attrs
import orjson
from bench_support import (
    Metric,
    Run,
    generated_turns,
    paired,
    paired_times,
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
    ("answer", {"value": True, "remember": False, "from_file": False}),
)


class Answers(TypedDict):
    """The LangGraph graph's state: the answers its node was given."""

    answers: list[bool]


class Records(TypedDict):
    """The durable LangGraph graph's state: the conversation's records, each step adding some."""

    records: Annotated[list[dict[str, Any]], operator.add]


def _peer(module: str) -> Any:
    """A peer's module: imported by name, as the project's own checks never install them."""
    return importlib.import_module(module)


# ------------------------------------------------------------------ questions


def _asked(questions: int) -> list[Question]:
    return [Question.boolean(f"q{number}", f"Question {number}?") for number in range(questions)]


def ours(threads: int, questions: int) -> Run:
    """``threads`` tool calls, each asking ``questions`` questions through the coordinator."""
    executor = BuiltinExecutor(AskInTurn(_asked(questions)))
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


# ------------------------------------------------------------ durable questions


@attrs.define
class _OurTurns:
    """Our side of the durable rows: a loaded conversation, and the turn its next run plays."""

    conversation: Conversation
    questions: int
    number: int = 0
    coordinator: ToolCoordinator | None = None
    request: ToolCallRequest | None = None

    def setup(self) -> None:
        """Open the next turn, up to its tool call, with a fresh script of answers (untimed)."""
        self.number += 1
        stream = self.conversation.stream
        stream.append(TurnStart())
        stream.append(ChatRequest(content=f"Apply patch {self.number}."))
        stream.append(ChatResponse.message("Asking."))
        self.request = ToolCallRequest(id=f"call_{self.number}", name=TOOL, arguments={})
        stream.append(self.request)
        prompter = ScriptedPrompter()
        for _ in range(self.questions):
            prompter.answer(True)
        self.coordinator = ToolCoordinator(
            self.conversation,
            tools={TOOL: BuiltinExecutor(AskInTurn(_asked(self.questions)))},
            config=CONFIG,
            prompter=prompter,
        )

    def play(self) -> None:
        """The tool call, its questions each saved before it is shown, then the turn's end."""
        if self.coordinator is None or self.request is None:
            raise AssertionError("a durable run of ours was not set up")
        [response] = asyncio.run(self.coordinator.run([self.request]))
        if response.is_error:
            raise AssertionError("a durable tool call of the benchmark failed")
        self.conversation.stream.append(ChatResponse.message("Done."))
        save_conversation(self.conversation)


def _our_durable(directory: Path, history: int, questions: int) -> tuple[_OurTurns, Run]:
    conversation = load_conversation(write_conversation(directory, generated_turns(history)))
    turns = _OurTurns(conversation, questions)
    turns.setup()
    turns.play()  # untimed: the first save after a load writes the file whole, once
    return turns, (turns.play, turns.setup)


def _langgraph_durable(database: Path, history: int, questions: int) -> tuple[Any, Run]:
    """A thread of ``history`` turns under ``SqliteSaver``; each run plays one more turn."""
    graph_module = _peer("langgraph.graph")
    types = _peer("langgraph.types")
    sqlite_saver = _peer("langgraph.checkpoint.sqlite")
    interrupt, command = types.interrupt, types.Command

    def ask(state: Records) -> Records:
        call = state["records"][-1]["id"]
        answered: list[dict[str, Any]] = []
        for number in range(questions):
            inquiry = f"{call}.q{number}.1"
            answer = interrupt(f"Question {number}?")
            answered.append({"type": "inquiry_request", "id": inquiry, "question": number})
            answered.append({"type": "inquiry_response", "id": inquiry, "answer": answer})
        done = {"type": "tool_call_response", "id": call, "content": "done"}
        return {"records": [*answered, done, {"type": "chat_response", "message": "Done."}]}

    builder = graph_module.StateGraph(Records)
    builder.add_node("ask", ask)
    builder.add_edge(graph_module.START, "ask")
    builder.add_edge("ask", graph_module.END)
    connection = sqlite3.connect(database, check_same_thread=False)
    graph = builder.compile(checkpointer=sqlite_saver.SqliteSaver(connection))
    config = {"configurable": {"thread_id": "conversation"}}
    graph.update_state(config, {"records": generated_turns(history)})
    turns = count(1)

    def play() -> None:
        number = next(turns)
        opening = [
            {"type": "turn_start"},
            {"type": "chat_request", "content": f"Apply patch {number}."},
            {"type": "chat_response", "message": "Asking."},
            {"type": "tool_call_request", "id": f"call_{number}", "name": TOOL},
        ]
        graph.invoke({"records": opening}, config)
        for _ in range(questions):
            result = graph.invoke(command(resume=True), config)
        if result["records"][-1] != {"type": "chat_response", "message": "Done."}:
            raise AssertionError("a durable graph run of the benchmark did not finish its turn")

    play()  # untimed, as ours
    return connection, (play, None)


def durable_rows(histories: list[int], questions: int, repeats: int) -> list[Metric]:
    """Ours against LangGraph with ``SqliteSaver``, at each of ``histories`` turns.

    Every size and side takes turns run by run, so a slow spell of the disk
    falls on all of them, and ours can be read across the sizes too.
    """
    with tempfile.TemporaryDirectory(prefix="inquiry-bench-peers-") as temp, ExitStack() as open_:
        root = Path(temp)
        runs: dict[tuple[str, int], Run] = {}
        for history in histories:
            ours, runs["ours", history] = _our_durable(
                root / f"ours-{history}", history, questions
            )
            open_.callback(ours.conversation.close)
            connection, runs["langgraph", history] = _langgraph_durable(
                root / f"langgraph-{history}.sqlite", history, questions
            )
            open_.callback(connection.close)
        times = paired_times(runs, repeats=repeats)
    return [
        Metric.from_runs(
            metric=f"peers.langgraph_sqlite.per_question.{history}",
            runs=paired(
                times["ours", history], times["langgraph", history], scale=1e6 / questions
            ),
            unit="us/question",
            note=(
                f"durable: a turn of one tool call asking {questions} questions (routed "
                f"to the person, scripted) on a conversation of {history} turns "
                f"({len(generated_turns(history))} entries): ours saved in its directory vs "
                "LangGraph's thread under SqliteSaver, its state carrying the records "
                f"({_versions()})"
            ),
        )
        for history in histories
    ]


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
        for name in (
            "langgraph",
            "langgraph-checkpoint",
            "langgraph-checkpoint-sqlite",
            "python-statemachine",
        )
    )


def measure(threads: int, questions: int, models: int, repeats: int) -> list[Metric]:
    """The in-memory peer metrics."""
    versions = _versions()
    asked = threads * questions
    per_question = paired_times(
        {"ours": ours(threads, questions), "langgraph": langgraph(threads, questions)},
        repeats=repeats,
    )
    machine = statemachine_class()
    steps = paired_times(
        {"ours": table_steps(models), "statemachine": statemachine_steps(models, machine)},
        repeats=repeats,
    )
    made = paired_times(
        {"ours": new_machines(models, None), "statemachine": new_machines(models, machine)},
        repeats=repeats,
    )
    per_step = len(ROUTED_PATH) * models
    return [
        Metric.from_runs(
            metric="peers.langgraph.per_question",
            runs=paired(per_question["ours"], per_question["langgraph"], scale=1e6 / asked),
            unit="us/question",
            # Issue 34's budget: a question at least ten times cheaper than the peer's.
            target=0.1,
            note=(
                f"in memory: {threads} threads x {questions} questions routed to the person: "
                "ToolCoordinator and a scripted prompter vs interrupt() + "
                f"Command(resume=...) under InMemorySaver ({versions})"
            ),
        ),
        Metric.from_runs(
            metric="peers.python_statemachine.step",
            runs=paired(steps["ours"], steps["statemachine"], scale=1e6 / per_step),
            unit="us/step",
            note=f"the inquiry table's routed path, {models} questions, same guards and actions",
        ),
        Metric.from_runs(
            metric="peers.python_statemachine.new_machine",
            runs=paired(made["ours"], made["statemachine"], scale=1e6 / models),
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
    parser.add_argument("--runs", type=int, required=True)
    parser.add_argument(
        "--history", type=int, action="append", required=True, help="the durable rows' turns"
    )
    args = parser.parse_args(argv)
    metrics = [
        *measure(args.threads, args.questions, args.models, args.runs),
        *durable_rows(args.history, args.questions, args.runs),
    ]
    for metric in metrics:
        sys.stdout.write(orjson.dumps(metric.as_json()).decode() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
