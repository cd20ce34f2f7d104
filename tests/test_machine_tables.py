"""Transition-table tests, parametrized over the machines' own tables.

Every row reaches its destination and emits exactly what it declares; every
(state, trigger) pair the table does not list raises and changes nothing;
every simple path from the start to a final state, generated from the table,
runs. A row added without a witness here fails the suite.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest
from machine_drivers import (
    DRIVERS,
    INVALID,
    QUESTIONS,
    RECORDED,
    RECORDED_APPLY,
    TIMEOUT,
    VALID,
    InquiryCase,
    ToolCallCase,
    realize,
)

from machines import (
    INQUIRY_MACHINE,
    MACHINES,
    TOOL_CALL_MACHINE,
    Answered,
    CachedAnswer,
    CallOutcome,
    Cancelled,
    DetachedMode,
    DetachedPolicy,
    IllegalTransitionError,
    InquiryRequest,
    InquirySource,
    InquiryState,
    OnTimeout,
    Redacted,
    Resolution,
    ResultMode,
    RunMode,
    Target,
    ToolCallResponse,
    ToolCallState,
)


@attrs.frozen
class Witness:
    """How to make one row fire: a case, the triggers that reach its source, its payload."""

    case: Any
    prelude: tuple[tuple[str, dict[str, Any]], ...]
    payload: Callable[[Any], dict[str, Any]]


def _fixed(payload: dict[str, Any]) -> Callable[[Any], dict[str, Any]]:
    return lambda _: payload


def _answer(model: Any, *, from_file: bool = False) -> dict[str, Any]:
    value = VALID[model.question.answer_type.kind.value]
    return dict(model.checked_answer(value, remember=False, from_file=from_file))


def _answer_from_file(model: Any) -> dict[str, Any]:
    return _answer(model, from_file=True)


def _misfit_from_file(model: Any) -> dict[str, Any]:
    value = INVALID[model.question.answer_type.kind.value]
    return dict(model.checked_answer(value, remember=True, from_file=True))


#: The triggers that take a question to ``routed``.
ASKED: tuple[tuple[str, dict[str, Any]], ...] = (("ask", {}), ("resolve", {}))
#: The triggers that put a question routed to the user on screen.
SHOWN = (*ASKED, ("terminal_ready", {"cached": None}))


ROUTED = InquiryCase(terminal=True, target=Target.USER)
SECRET_ROUTED = InquiryCase(answer_type="secret", terminal=True, target=Target.USER)
TO_MODEL = InquiryCase(target=Target.ASSISTANT)
#: Nobody to ask: the detached policy decides, in each of its modes.
NOBODY = InquiryCase(terminal=False)
#: The triggers that hand a question to the detached policy.
DETACHED: tuple[tuple[str, dict[str, Any]], ...] = (("ask", {}), ("resolve", {}))

RECORDED_ID = {"inquiry_id": RECORDED_APPLY.request.id}
#: The triggers that put a question parked before the restart on screen again.
PARKED_SHOWN: tuple[tuple[str, dict[str, Any]], ...] = (
    ("adopt", {**RECORDED_ID, "parked": True}),
    ("resolve", {}),
    ("terminal_ready", {"cached": None}),
)
AFTER = {"after": TIMEOUT}


def _answered_later(model: Any) -> dict[str, Any]:
    return {**RECORDED_ID, **_answer(model)}


INQUIRY_WITNESSES: dict[str, Witness] = {
    "ask:new->requested": Witness(InquiryCase(), (), _fixed({})),
    "adopt:new->requested": Witness(InquiryCase(), (), _fixed({**RECORDED_ID, "parked": False})),
    "answer_later:new->answered[plain]": Witness(InquiryCase(), (), _answered_later),
    "supersede:new->cancelled": Witness(InquiryCase(), (), _fixed(RECORDED_ID)),
    "discard:new->cancelled": Witness(InquiryCase(), (), _fixed(RECORDED_ID)),
    "resolve:requested->cancelled[exhausted]": Witness(
        InquiryCase(exhausted=True), (("ask", {}),), _fixed({})
    ),
    "resolve:requested->cached[cached]": Witness(
        InquiryCase(cached=True), (("ask", {}),), _fixed({})
    ),
    "resolve:requested->static[static]": Witness(
        InquiryCase(static="valid"), (("ask", {}),), _fixed({})
    ),
    "resolve:requested->cancelled[secret_for_assistant]": Witness(
        InquiryCase(answer_type="secret", target=Target.ASSISTANT), (("ask", {}),), _fixed({})
    ),
    "resolve:requested->cancelled[exclusive_for_assistant]": Witness(
        InquiryCase(target=Target.ASSISTANT, exclusive=True), (("ask", {}),), _fixed({})
    ),
    "resolve:requested->routed[to_user]": Witness(ROUTED, (("ask", {}),), _fixed({})),
    "resolve:requested->routed[to_assistant]": Witness(
        InquiryCase(target=Target.ASSISTANT), (("ask", {}),), _fixed({})
    ),
    "resolve:requested->detached[nobody]": Witness(NOBODY, (("ask", {}),), _fixed({})),
    "apply_policy:detached->cancelled[secret]": Witness(
        InquiryCase(answer_type="secret", terminal=False, detached=DetachedMode.AUTO),
        DETACHED,
        _fixed({}),
    ),
    "apply_policy:detached->cancelled[exclusive_auto]": Witness(
        InquiryCase(terminal=False, detached=DetachedMode.AUTO, exclusive=True),
        DETACHED,
        _fixed({}),
    ),
    "apply_policy:detached->routed[auto]": Witness(
        InquiryCase(terminal=False, detached=DetachedMode.AUTO), DETACHED, _fixed({})
    ),
    "apply_policy:detached->answered[default]": Witness(
        InquiryCase(terminal=False, detached=DetachedMode.DEFAULTS), DETACHED, _fixed({})
    ),
    "apply_policy:detached->cancelled[no_default]": Witness(
        InquiryCase(answer_type="text", terminal=False, detached=DetachedMode.DEFAULTS),
        DETACHED,
        _fixed({}),
    ),
    "apply_policy:detached->cancelled[deny]": Witness(NOBODY, DETACHED, _fixed({})),
    "apply_policy:detached->parked[park]": Witness(
        InquiryCase(terminal=False, detached=DetachedMode.PARK), DETACHED, _fixed({})
    ),
    "use_cached:cached->answered": Witness(
        InquiryCase(cached=True), (("ask", {}), ("resolve", {})), _fixed({})
    ),
    "use_static:static->cancelled[invalid]": Witness(
        InquiryCase(static="invalid"), (("ask", {}), ("resolve", {})), _fixed({})
    ),
    "use_static:static->redacted[secret]": Witness(
        InquiryCase(answer_type="secret", static="valid"),
        (("ask", {}), ("resolve", {})),
        _fixed({}),
    ),
    "use_static:static->answered[plain]": Witness(
        InquiryCase(static="valid"), (("ask", {}), ("resolve", {})), _fixed({})
    ),
    "terminal_ready:routed->cached[remembered_meanwhile]": Witness(
        ROUTED, ASKED, _fixed({"cached": CachedAnswer(True)})
    ),
    "terminal_ready:routed->shown[uncached]": Witness(ROUTED, ASKED, _fixed({"cached": None})),
    "answer:routed->answered[from_model]": Witness(TO_MODEL, ASKED, _answer),
    "fail:routed->cancelled[with_model]": Witness(TO_MODEL, ASKED, _fixed({"error": "HTTP 500"})),
    "cancel:routed->cancelled": Witness(ROUTED, ASKED, _fixed({})),
    "withdraw:routed->cancelled": Witness(ROUTED, ASKED, _fixed({})),
    "answer:shown->detached[parked_secret_from_file]": Witness(
        SECRET_ROUTED, PARKED_SHOWN, _answer_from_file
    ),
    "answer:shown->cancelled[misfit_from_file]": Witness(ROUTED, SHOWN, _misfit_from_file),
    "answer:shown->redacted[parked_secret]": Witness(SECRET_ROUTED, PARKED_SHOWN, _answer),
    "answer:shown->answered[parked_before]": Witness(ROUTED, PARKED_SHOWN, _answer),
    "time_out:shown->detached[timeout_to_policy]": Witness(
        InquiryCase(on_timeout=OnTimeout.DETACHED), SHOWN, _fixed(AFTER)
    ),
    "time_out:shown->cancelled": Witness(ROUTED, SHOWN, _fixed(AFTER)),
    "answer:shown->redacted[secret_from_file]": Witness(SECRET_ROUTED, SHOWN, _answer_from_file),
    "answer:shown->answered[plain_from_file]": Witness(ROUTED, SHOWN, _answer_from_file),
    "answer:shown->redacted[secret]": Witness(SECRET_ROUTED, SHOWN, _answer),
    "answer:shown->answered[plain]": Witness(ROUTED, SHOWN, _answer),
    "cancel:shown->cancelled": Witness(ROUTED, SHOWN, _fixed({})),
    "unanswered:shown->detached": Witness(ROUTED, SHOWN, _fixed({})),
    "withdraw:shown->cancelled": Witness(ROUTED, SHOWN, _fixed({})),
}


def _needs_input(case: InquiryCase) -> tuple[str, dict[str, Any]]:
    return (
        "needs_input",
        {
            "question": case.question,
            "source": InquirySource.tool("fs_modify_file"),
            "accumulated": {},
            "facts": case.facts(),
        },
    )


ASK = ToolCallCase(run_mode=RunMode.ASK, terminal=True)
#: A call whose permission was parked earlier in the turn, asked again at the terminal.
PARKED_ASK = ToolCallCase(run_mode=RunMode.ASK, terminal=True, permission_parked=True)
UNATTENDED = ToolCallCase(run_mode=RunMode.UNATTENDED)
BEGUN = (("begin", {"remembered": None, "available": True}),)
AWAITING_INPUT = (*BEGUN, _needs_input(ROUTED))
AWAITING_MODEL = (*BEGUN, _needs_input(TO_MODEL))
PERMISSION_SHOWN = (*BEGUN, ("terminal_ready", {"remembered": None, "cached": None}))
QUESTION_SHOWN = (*AWAITING_INPUT, ("terminal_ready", {"remembered": None, "cached": None}))


def _nobody_to_ask(mode: DetachedMode) -> ToolCallCase:
    """A call of run mode ask, and result mode ask, with nobody to ask and ``mode`` for both."""
    policy = DetachedPolicy(run=mode, deliver=mode)
    return ToolCallCase(terminal=False, detached=policy, result_mode=ResultMode.ASK)


#: A call whose result waits for the person (result mode ask), a prompt being there.
DELIVERING = ToolCallCase(run_mode=RunMode.UNATTENDED, result_mode=ResultMode.ASK)
DONE = ("completed", {"content": "done", "is_error": False})
DELIVERY_SHOWN = (*BEGUN, DONE, ("terminal_ready", {"remembered": None, "cached": None}))
#: Nobody to confirm a finished call's result: its delivery left to the policy (auto).
AUTO_DELIVERING = attrs.evolve(_nobody_to_ask(DetachedMode.AUTO), run_mode=RunMode.UNATTENDED)


def _tool_answer(model: Any) -> dict[str, Any]:
    return _answer(model.inquiry)


def _resumed(name: str, *, available: bool = True) -> Callable[[Any], dict[str, Any]]:
    return _fixed({"recorded": RECORDED[name], "available": available})


RESUMED_WAITING = (("resume", {"recorded": RECORDED["waiting"], "available": True}),)


TOOL_CALL_WITNESSES: dict[str, Witness] = {
    "begin:new->failed[unavailable]": Witness(
        UNATTENDED, (), _fixed({"remembered": None, "available": False})
    ),
    "begin:new->running[unattended]": Witness(
        UNATTENDED, (), _fixed({"remembered": None, "available": True})
    ),
    "begin:new->skipped[skip]": Witness(
        ToolCallCase(run_mode=RunMode.SKIP), (), _fixed({"remembered": "y", "available": True})
    ),
    "begin:new->running[remembered_y]": Witness(
        ASK, (), _fixed({"remembered": "y", "available": True})
    ),
    "begin:new->skipped[remembered_n]": Witness(
        ASK, (), _fixed({"remembered": "n", "available": True})
    ),
    "begin:new->permission_detached[nobody]": Witness(
        ToolCallCase(terminal=False), (), _fixed({"remembered": None, "available": True})
    ),
    "apply_policy:permission_detached->running[run_auto]": Witness(
        _nobody_to_ask(DetachedMode.AUTO), BEGUN, _fixed({})
    ),
    "apply_policy:permission_detached->failed[run_defaults]": Witness(
        _nobody_to_ask(DetachedMode.DEFAULTS), BEGUN, _fixed({})
    ),
    "apply_policy:permission_detached->failed[run_deny]": Witness(
        _nobody_to_ask(DetachedMode.DENY), BEGUN, _fixed({})
    ),
    "apply_policy:permission_detached->parked[run_park]": Witness(
        ToolCallCase(terminal=False, detached=DetachedPolicy(run=DetachedMode.PARK)),
        BEGUN,
        _fixed({}),
    ),
    "begin:new->awaiting_permission[ask]": Witness(
        ASK, (), _fixed({"remembered": None, "available": True})
    ),
    "interrupt:new->cancelled": Witness(ASK, (), _fixed({})),
    "resume:new->cancelled[declined_by_user]": Witness(ASK, (), _resumed("declined_by_user")),
    "resume:new->failed[declined]": Witness(ASK, (), _resumed("declined")),
    "resume:new->failed[unavailable]": Witness(ASK, (), _resumed("ran", available=False)),
    "resume:new->resuming[waiting]": Witness(ASK, (), _resumed("waiting")),
    "resume:new->running[ran]": Witness(ASK, (), _resumed("ran")),
    "needs_input:resuming->awaiting_input[adopts]": Witness(
        ASK, RESUMED_WAITING, lambda _: _needs_input(ROUTED)[1]
    ),
    "supersede:resuming->running": Witness(ASK, RESUMED_WAITING, _fixed({})),
    "discard:new->discarding[waiting]": Witness(
        ASK, (), _fixed({"recorded": RECORDED["waiting"]})
    ),
    "discard:new->cancelled": Witness(ASK, (), _fixed({"recorded": RECORDED["ran"]})),
    "inquiry_closed:discarding->cancelled": Witness(
        ASK, (("discard", {"recorded": RECORDED["waiting"]}),), _fixed({})
    ),
    "terminal_ready:awaiting_permission->running[remembered_y]": Witness(
        ASK, BEGUN, _fixed({"remembered": "y", "cached": None})
    ),
    "terminal_ready:awaiting_permission->skipped[remembered_n]": Witness(
        ASK, BEGUN, _fixed({"remembered": "n", "cached": None})
    ),
    "terminal_ready:awaiting_permission->asking_permission[undecided]": Witness(
        ASK, BEGUN, _fixed({"remembered": None, "cached": None})
    ),
    "interrupt:awaiting_permission->cancelled": Witness(ASK, BEGUN, _fixed({})),
    "permit:asking_permission->running[parked_permission]": Witness(
        PARKED_ASK,
        PERMISSION_SHOWN,
        _fixed({"remember": False, "arguments": None, "from_file": False}),
    ),
    "deny:asking_permission->skipped[parked_permission]": Witness(
        PARKED_ASK,
        PERMISSION_SHOWN,
        _fixed({"remember": False, "reason": None, "from_file": True}),
    ),
    "time_out:asking_permission->permission_detached[timeout_to_policy]": Witness(
        attrs.evolve(ASK, on_timeout=OnTimeout.DETACHED), PERMISSION_SHOWN, _fixed(AFTER)
    ),
    "time_out:asking_permission->failed": Witness(ASK, PERMISSION_SHOWN, _fixed(AFTER)),
    "permit:asking_permission->running[from_file]": Witness(
        ASK, PERMISSION_SHOWN, _fixed({"remember": True, "arguments": None, "from_file": True})
    ),
    "permit:asking_permission->running": Witness(
        ASK, PERMISSION_SHOWN, _fixed({"remember": True, "arguments": None, "from_file": False})
    ),
    "deny:asking_permission->skipped[from_file]": Witness(
        ASK, PERMISSION_SHOWN, _fixed({"remember": False, "reason": None, "from_file": True})
    ),
    "deny:asking_permission->skipped": Witness(
        ASK, PERMISSION_SHOWN, _fixed({"remember": False, "reason": None, "from_file": False})
    ),
    "unanswered:asking_permission->permission_detached": Witness(
        ASK, PERMISSION_SHOWN, _fixed({})
    ),
    "interrupt:asking_permission->cancelled": Witness(ASK, PERMISSION_SHOWN, _fixed({})),
    "completed:running->succeeded[ok]": Witness(
        UNATTENDED, BEGUN, _fixed({"content": "done", "is_error": False})
    ),
    "completed:running->failed[error]": Witness(
        UNATTENDED, BEGUN, _fixed({"content": "boom", "is_error": True})
    ),
    "completed:running->awaiting_delivery[confirm]": Witness(DELIVERING, BEGUN, _fixed(DONE[1])),
    "completed:running->delivery_detached[nobody_to_confirm]": Witness(
        AUTO_DELIVERING, BEGUN, _fixed(DONE[1])
    ),
    "needs_input:running->awaiting_input": Witness(
        UNATTENDED, BEGUN, lambda _: _needs_input(ROUTED)[1]
    ),
    "interrupt:running->cancelled": Witness(UNATTENDED, BEGUN, _fixed({})),
    "terminal_ready:awaiting_input->awaiting_input": Witness(
        UNATTENDED, AWAITING_INPUT, _fixed({"remembered": None, "cached": None})
    ),
    "answer:awaiting_input->awaiting_input": Witness(UNATTENDED, AWAITING_MODEL, _tool_answer),
    "cancel_input:awaiting_input->awaiting_input": Witness(UNATTENDED, AWAITING_INPUT, _fixed({})),
    "fail_input:awaiting_input->awaiting_input": Witness(
        UNATTENDED, AWAITING_MODEL, _fixed({"error": "HTTP 500"})
    ),
    "unanswered_input:awaiting_input->awaiting_input": Witness(
        UNATTENDED, QUESTION_SHOWN, _fixed({})
    ),
    "interrupt:awaiting_input->awaiting_input": Witness(UNATTENDED, AWAITING_INPUT, _fixed({})),
    "time_out_input:awaiting_input->awaiting_input": Witness(
        UNATTENDED, QUESTION_SHOWN, _fixed(AFTER)
    ),
    "inquiry_closed:awaiting_input->parked[parked]": Witness(
        UNATTENDED,
        (*BEGUN, _needs_input(InquiryCase(terminal=False, detached=DetachedMode.PARK))),
        _fixed({}),
    ),
    "inquiry_closed:awaiting_input->running[answered]": Witness(
        UNATTENDED, (*BEGUN, _needs_input(InquiryCase(static="valid"))), _fixed({})
    ),
    "inquiry_closed:awaiting_input->cancelled[cancelled_by_user]": Witness(
        UNATTENDED, (*AWAITING_INPUT, ("cancel_input", {})), _fixed({})
    ),
    "inquiry_closed:awaiting_input->cancelled[withdrawn]": Witness(
        UNATTENDED, (*AWAITING_INPUT, ("interrupt", {})), _fixed({})
    ),
    "inquiry_closed:awaiting_input->failed[failed]": Witness(
        UNATTENDED, (*BEGUN, _needs_input(InquiryCase(static="invalid"))), _fixed({})
    ),
    "terminal_ready:awaiting_delivery->confirming_delivery": Witness(
        DELIVERING, (*BEGUN, DONE), _fixed({"remembered": None, "cached": None})
    ),
    "interrupt:awaiting_delivery->cancelled": Witness(DELIVERING, (*BEGUN, DONE), _fixed({})),
    "deliver:confirming_delivery->delivered[from_file]": Witness(
        DELIVERING, DELIVERY_SHOWN, _fixed({"from_file": True})
    ),
    "deliver:confirming_delivery->delivered": Witness(
        DELIVERING, DELIVERY_SHOWN, _fixed({"from_file": False})
    ),
    "withhold:confirming_delivery->withheld[from_file]": Witness(
        DELIVERING, DELIVERY_SHOWN, _fixed({"from_file": True})
    ),
    "withhold:confirming_delivery->withheld": Witness(
        DELIVERING, DELIVERY_SHOWN, _fixed({"from_file": False})
    ),
    "cancel_delivery:confirming_delivery->cancelled": Witness(
        DELIVERING, DELIVERY_SHOWN, _fixed({})
    ),
    "unanswered:confirming_delivery->delivery_detached": Witness(
        DELIVERING, DELIVERY_SHOWN, _fixed({})
    ),
    "interrupt:confirming_delivery->cancelled": Witness(DELIVERING, DELIVERY_SHOWN, _fixed({})),
    "time_out:confirming_delivery->delivery_detached[timeout_to_policy]": Witness(
        attrs.evolve(DELIVERING, on_timeout=OnTimeout.DETACHED), DELIVERY_SHOWN, _fixed(AFTER)
    ),
    "time_out:confirming_delivery->failed": Witness(DELIVERING, DELIVERY_SHOWN, _fixed(AFTER)),
    "apply_policy:delivery_detached->delivered[deliver_auto]": Witness(
        AUTO_DELIVERING, (*BEGUN, DONE), _fixed({})
    ),
    "apply_policy:delivery_detached->failed[deliver_defaults]": Witness(
        attrs.evolve(_nobody_to_ask(DetachedMode.DEFAULTS), run_mode=RunMode.UNATTENDED),
        (*BEGUN, DONE),
        _fixed({}),
    ),
    "apply_policy:delivery_detached->failed[deliver_deny]": Witness(
        attrs.evolve(_nobody_to_ask(DetachedMode.DENY), run_mode=RunMode.UNATTENDED),
        (*BEGUN, DONE),
        _fixed({}),
    ),
    "settle:delivered->succeeded[result_ok]": Witness(
        AUTO_DELIVERING, (*BEGUN, DONE, ("apply_policy", {})), _fixed({})
    ),
    "settle:delivered->failed[result_error]": Witness(
        AUTO_DELIVERING,
        (*BEGUN, ("completed", {"content": "boom", "is_error": True}), ("apply_policy", {})),
        _fixed({}),
    ),
}

WITNESSES = {"inquiry": INQUIRY_WITNESSES, "tool_call": TOOL_CALL_WITNESSES}

#: How a question comes to be requested: recorded now, or adopted after a restart.
_REQUESTED = ("ask:new->requested", "adopt:new->requested")
#: How a question on screen can end.
_ON_SCREEN = (
    "answer:shown->answered[plain]",
    "answer:shown->answered[plain_from_file]",
    "answer:shown->redacted[secret]",
    "answer:shown->redacted[secret_from_file]",
    "cancel:shown->cancelled",
    "withdraw:shown->cancelled",
)
#: How the detached policy ends a question (once it did not put it to the model).
_POLICY_ENDS = (
    "apply_policy:detached->answered[default]",
    "apply_policy:detached->cancelled[deny]",
    "apply_policy:detached->cancelled[exclusive_auto]",
    "apply_policy:detached->cancelled[no_default]",
    "apply_policy:detached->cancelled[secret]",
)

#: Simple paths the table admits but the guards rule out, and why.
INFEASIBLE: dict[str, str] = {
    **{
        f"{start} > resolve:requested->routed[to_assistant] > "
        "terminal_ready:routed->cached[remembered_meanwhile] > use_cached:cached->answered": (
            "a question routed to the assistant never waits for the terminal"
        )
        for start in _REQUESTED
    },
    **{
        f"{start} > resolve:requested->routed[to_assistant] > {rest}": (
            "a question routed to the assistant is never shown at the terminal"
        )
        for start in _REQUESTED
        for rest in (
            "terminal_ready:routed->shown[uncached] > answer:shown->redacted[secret]",
            "terminal_ready:routed->shown[uncached] > answer:shown->answered[plain]",
            "terminal_ready:routed->shown[uncached] > cancel:shown->cancelled",
        )
    },
    **{
        f"{start} > resolve:requested->detached[nobody] > apply_policy:detached->routed[auto]"
        f" > {rest}": "a question the policy puts to the model never waits for the terminal"
        for start in _REQUESTED
        for rest in (
            "terminal_ready:routed->cached[remembered_meanwhile] > use_cached:cached->answered",
            *(f"terminal_ready:routed->shown[uncached] > {end}" for end in _ON_SCREEN),
        )
    },
    **{
        f"{start} > resolve:requested->routed[to_assistant] > terminal_ready:routed->shown"
        f"[uncached] > {end}": "a question routed to the assistant is never shown at the terminal"
        for start in _REQUESTED
        for end in (
            "answer:shown->answered[plain_from_file]",
            "answer:shown->redacted[secret_from_file]",
            "withdraw:shown->cancelled",
            *(f"unanswered:shown->detached > {row}" for row in _POLICY_ENDS),
        )
    },
    **{
        f"{start} > resolve:requested->routed[to_user] > {rest}": (
            "a question routed to the user never hears from the model"
        )
        for start in _REQUESTED
        for rest in (
            "answer:routed->answered[from_model]",
            "fail:routed->cancelled[with_model]",
        )
    },
}


#: The rows only a question parked before the restart, and taken up again, can take.
_PARKED_BEFORE = (
    "answer:shown->detached[parked_secret_from_file]",
    "answer:shown->redacted[parked_secret]",
    "answer:shown->answered[parked_before]",
)
#: What the detached policy does with a secret: parks it, or refuses it.
_SECRET_POLICY = (
    "apply_policy:detached->parked[park]",
    "apply_policy:detached->cancelled[secret]",
)


def _inquiry_infeasible(ids: list[str]) -> str | None:
    """Why the guards rule out the inquiry path of rows ``ids``, if they do."""
    if "resolve:requested->routed[to_assistant]" in ids and any(
        row.startswith("terminal_ready:") for row in ids
    ):
        return "a question routed to the assistant is never shown at the terminal"
    if "apply_policy:detached->routed[auto]" in ids and any(
        row.startswith("terminal_ready:") for row in ids
    ):
        return "a question the policy puts to the model never waits for the terminal"
    if ids[0] == "ask:new->requested" and any(row in _PARKED_BEFORE for row in ids):
        return "a question asked now was not parked before"
    if _PARKED_BEFORE[0] in ids and not any(row in _SECRET_POLICY for row in ids):
        return "the detached policy parks a secret or refuses it, nothing else"
    return None


INFEASIBLE.update(
    {
        " > ".join(ids): why
        for ids in ([row.id for row in path] for path in INQUIRY_MACHINE.paths())
        if (why := _inquiry_infeasible(ids)) is not None and " > ".join(ids) not in INFEASIBLE
    }
)


def _prompt_for_a_part(path: tuple[Any, ...]) -> bool:
    """Whether ``path`` finds a prompt for one part of a call and none for another.

    Whether a prompt is there (a person, or an answers file) is a fact of the
    whole call: one asked its permission at the terminal is never without a
    prompt for its result's delivery, and one that had nobody to ask never has one.
    """
    ids = {row.id for row in path}
    prompted = "begin:new->awaiting_permission[ask]" in ids
    nobody = "begin:new->permission_detached[nobody]" in ids
    return (prompted and "completed:running->delivery_detached[nobody_to_confirm]" in ids) or (
        nobody and "completed:running->awaiting_delivery[confirm]" in ids
    )


INFEASIBLE.update(
    {
        " > ".join(row.id for row in path): (
            "a prompt is there for the whole call, or for none of it"
        )
        for path in TOOL_CALL_MACHINE.paths()
        if _prompt_for_a_part(path)
    }
)


def _two_timeouts(path: tuple[Any, ...]) -> bool:
    """Whether ``path`` times out one prompt to the policy and closes another: one setting."""
    guards = {row.guard.name if row.guard else None for row in path if row.trigger == "time_out"}
    return guards == {"timeout_to_policy", None}


INFEASIBLE.update(
    {
        " > ".join(row.id for row in path): "on_timeout is one setting for all of a call's prompts"
        for path in TOOL_CALL_MACHINE.paths()
        if _two_timeouts(path)
    }
)

ROWS = [pytest.param(machine.name, row, id=row.id) for machine in MACHINES for row in machine.rows]


def _path_id(path: Any) -> str:
    return " > ".join(row.id for row in path)


PATHS = [
    pytest.param(machine.name, path, id=f"{machine.name}:{_path_id(path)}")
    for machine in MACHINES
    for path in machine.paths()
]


@pytest.mark.parametrize("machine", MACHINES, ids=lambda m: m.name)
def test_every_row_has_a_witness(machine: Any) -> None:
    """Each row of each table has a witness here, and no witness names a missing row."""
    assert set(WITNESSES[machine.name]) == {row.id for row in machine.rows}


def _prepare(name: str, witness: Witness) -> Any:
    machine = DRIVERS[name].machine
    model = witness.case.make()
    for trigger, payload in witness.prelude:
        machine.fire(model, trigger, chain=False, **payload)
    model.buffer.take()
    return model


@pytest.mark.parametrize(("name", "row"), ROWS)
def test_row_reaches_its_destination_and_emits_what_it_declares(name: str, row: Any) -> None:
    """Firing a row's trigger in its source moves to its target and emits its declared types."""
    machine = DRIVERS[name].machine
    witness = WITNESSES[name][row.id]
    model = _prepare(name, witness)
    assert model.state is row.source
    machine.fire(model, row.trigger, chain=False, **witness.payload(model))
    step = model.buffer.take()
    assert model.state is row.target
    own = step.fired[0]
    assert (own.machine, own.row) == (name, row)
    assert tuple(type(record) for record in own.records) == row.emits
    assert tuple(type(effect) for effect in own.effects) == row.effects
    if row.delegates:
        delegated_machine, delegated_trigger = row.delegates.split(".")
        assert step.fired[1].machine == delegated_machine
        assert step.fired[1].row.trigger == delegated_trigger
    else:
        assert len(step.fired) == 1


ILLEGAL = [
    pytest.param(machine.name, state, trigger, id=f"{machine.name}:{state.value}:{trigger}")
    for machine in MACHINES
    for state in machine.states
    for trigger in machine.triggers
    if not machine.rows_for(state, trigger)
]


@pytest.mark.parametrize(("name", "state", "trigger"), ILLEGAL)
def test_trigger_not_in_table_raises_and_changes_nothing(
    name: str, state: Any, trigger: str
) -> None:
    """A (state, trigger) pair with no row raises; state, records and turn state stay."""
    driver = DRIVERS[name]
    model = driver.cases()[0].make()
    model.state = state
    before = (dict(model.turn._attempts), dict(model.turn.remembered_tool_answers))
    with pytest.raises(IllegalTransitionError, match=f"can't handle trigger '{trigger}'"):
        driver.machine.fire(model, trigger)
    assert model.state is state
    assert len(model.buffer) == 0
    assert (dict(model.turn._attempts), dict(model.turn.remembered_tool_answers)) == before


def test_no_guard_holding_raises_and_changes_nothing() -> None:
    """A trigger whose rows' guards all fail raises and leaves the machine where it was."""
    model = InquiryCase(target=Target.ASSISTANT).make()
    INQUIRY_MACHINE.fire(model, "ask")
    model.buffer.take()
    with pytest.raises(IllegalTransitionError, match="no row's guard holds"):
        INQUIRY_MACHINE.fire(model, "terminal_ready", cached=None)
    assert model.state is InquiryState.ROUTED
    assert len(model.buffer) == 0


@pytest.mark.parametrize(("name", "path"), PATHS)
def test_every_simple_path_runs(name: str, path: Any) -> None:
    """Each simple path from start to a final state runs, or is declared infeasible."""
    path_id = _path_id(path)
    run = realize(DRIVERS[name], path)
    if path_id in INFEASIBLE:
        assert run is None, f"declared infeasible but runs: {path_id}"
        return
    assert run is not None, f"no run takes this path: {path_id}"
    records = [record for fired in run.fired for record in fired.records]
    requests = [r for r in records if isinstance(r, InquiryRequest)]
    responses = [r for r in records if isinstance(r, Answered | Cancelled | Redacted)]
    # Whatever the path, each question recorded has exactly one response, same id; so
    # does one recorded before a restart once adopted or superseded (its request is on
    # disk already), and no id is answered twice.
    taken_up = any(
        fired.machine == "inquiry"
        and fired.row.trigger in {"adopt", "supersede", "discard", "answer_later"}
        for fired in run.fired
    )
    recorded = [RECORDED_APPLY.request.id] if taken_up else []
    # A parked question (the one the path ends with) waits for its response.
    parked = any(fired.row.resolution is Resolution.PARKED for fired in run.fired)
    asked = recorded + [r.id for r in requests]
    assert {r.id for r in responses} <= set(asked)
    assert len(responses) == len(asked) - parked
    assert len({r.id for r in responses}) == len(responses)
    machine = DRIVERS[name].machine
    final = machine.rows[[row.id for row in machine.rows].index(path[-1].id)].target
    assert final in machine.final
    if name == "tool_call":
        expected = 0 if final is ToolCallState.PARKED else 1
        assert sum(isinstance(r, ToolCallResponse) for r in records) == expected


def test_infeasible_paths_are_paths_of_the_tables() -> None:
    """Every path declared infeasible is still a path of a table (no stale declarations)."""
    all_paths = {_path_id(path) for machine in MACHINES for path in machine.paths()}
    assert set(INFEASIBLE) <= all_paths


def test_resolve_guards_are_exhaustive() -> None:
    """Whatever the facts, a newly asked question resolves: no combination is left unrouted."""
    for case in DRIVERS["inquiry"].cases():
        model = case.make()
        INQUIRY_MACHINE.fire(model, "ask")
        assert model.state is not InquiryState.REQUESTED


def test_final_states_are_exactly_the_outcomes() -> None:
    """The final states are the three responses and the five ways a tool call ends, and parked."""
    assert {s.value for s in INQUIRY_MACHINE.final} == {
        "answered",
        "redacted",
        "cancelled",
        "parked",
    }
    assert {s.value for s in TOOL_CALL_MACHINE.final} == {
        "succeeded",
        "failed",
        "skipped",
        "withheld",
        "cancelled",
        "parked",
    }
    assert ToolCallState.NEW not in TOOL_CALL_MACHINE.final
    assert QUESTIONS["secret"].answer_type.is_secret


# ------------------------------------------------------------ what rows mean


@pytest.mark.parametrize(("name", "row"), ROWS)
def test_a_row_into_a_final_state_says_how_its_model_ended(name: str, row: Any) -> None:
    """A tool call's ending row has an outcome, a question's a resolution; no other row has."""
    machine = DRIVERS[name].machine
    ends = row.target in machine.final
    if name == "tool_call":
        assert (isinstance(row.outcome, CallOutcome), row.resolution) == (ends, None)
    else:
        assert (isinstance(row.resolution, Resolution), row.outcome) == (ends, None)


@pytest.mark.parametrize(("name", "row"), ROWS)
def test_only_a_tool_call_row_that_runs_or_skips_the_call_says_who_decided(
    name: str, row: Any
) -> None:
    """Ruled by the row that runs a call, skips it, or (the detached policy) refuses it."""
    if name == "inquiry":
        assert row.permission is None
        return
    assert (row.permission is not None) == _decides(row)
    if row.permission is not None:
        assert row.permission.run == (row.target in _RUNS)


#: A call in these states has not been let run, nor been skipped.
_UNDECIDED = {
    ToolCallState.NEW,
    ToolCallState.AWAITING_PERMISSION,
    ToolCallState.ASKING_PERMISSION,
}
#: A call in these states was let run, or skipped.
_DECIDED = {ToolCallState.RUNNING, ToolCallState.RESUMING, ToolCallState.SKIPPED}
#: A call in these states was let run.
_RUNS = {ToolCallState.RUNNING, ToolCallState.RESUMING}


def _decides(row: Any) -> bool:
    """Whether ``row`` decides a call's permission: runs or skips it, or refuses it.

    The detached policy refuses it, or its prompt's timeout does; parked, it is not decided.
    """
    from_undecided = row.source in _UNDECIDED | {ToolCallState.PERMISSION_DETACHED}
    refused = row.target is ToolCallState.FAILED and row.trigger in {"apply_policy", "time_out"}
    return from_undecided and (row.target in _DECIDED or refused)


@pytest.mark.parametrize("path", list(TOOL_CALL_MACHINE.paths()), ids=_path_id)
def test_every_call_that_runs_or_is_skipped_was_ruled_once(path: Any) -> None:
    """On each path of the tool-call table, one row says who let it run or skipped it, or none."""
    ruled = [row for row in path if row.permission is not None]
    decided = [row for row in path if _decides(row)]
    assert ruled == decided[:1]


@pytest.mark.parametrize(("name", "row"), ROWS)
def test_a_row_says_the_detached_policy_decided_only_from_a_detached_state(
    name: str, row: Any
) -> None:
    """Only a row out of a state where nobody can be asked names a detached policy mode."""
    detached_states = {"detached", "permission_detached", "delivery_detached"}
    assert (row.detached is not None) == (
        row.source.value in detached_states
        and row.guard is not None
        and row.guard.name != "secret"
    ), name


@pytest.mark.parametrize("machine", MACHINES, ids=lambda m: m.name)
def test_each_guard_name_has_one_definition(machine: Any) -> None:
    """Within a table, rows naming the same guard share one definition of it."""
    definitions: dict[str, set[Any]] = {}
    for row in machine.rows:
        if row.guard is not None:
            definitions.setdefault(row.guard.name, set()).add(row.guard)
    assert {name: len(guards) for name, guards in definitions.items()} == dict.fromkeys(
        definitions, 1
    )
