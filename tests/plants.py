"""The planted bugs: plausible mistakes the suite must catch, each with the tests that do.

Each :class:`Plant` is one bug: in ``file``, the text ``old`` (present
exactly once) replaced by ``new``, and ``tests``, the pytest node ids that
must fail with it in and pass without it. ``tests/planted_bugs.py`` plants
each in a copy of the tree and runs its tests; ``tests/test_planted_bugs.py``
checks in the suite that every plant still applies and names tests that
exist; ``docs/testing.md`` shows the list (``planted_bugs.py --docs``).

The list covers what a change most easily breaks unseen: the machines'
rows (a guard inverted, a destination, a record's reason), the turn's
memory and the ``persistence`` flag, attempt counting, inquiry ids,
secrets, the store (append or rewrite, the lock, the undo record, the
log), continuing a turn, exit statuses, the detached policy, parking,
request links (RFD 098), and ``withdrawn`` against ``user``. A bug the
suite missed when it was planted got the test that catches it (named
here); ``docs/testing.md`` says which.

When the code a plant names changes, the plant goes stale and the suite
fails (``test_every_plant_applies_exactly_once``): move the plant to the
new code, keeping the bug it stands for, or drop it if that bug can no
longer be made.
"""

from __future__ import annotations

import attrs

__all__ = ["PLANTS", "Plant"]


def _node_ids(_instance: object, _attribute: object, value: tuple[str, ...]) -> None:
    if not value or not all(isinstance(test, str) and "::" in test for test in value):
        raise ValueError("a plant names at least one test, each as tests/file.py::test_name")


@attrs.frozen(kw_only=True)
class Plant:
    """One planted bug: ``old`` replaced by ``new`` in ``file``; ``tests`` must catch it."""

    name: str
    bug: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...] = attrs.field(validator=_node_ids)


# The turn remembers `no` for a yes/no question it must not remember anything for.
_REMEMBER_NO = (
    "    if m.question.reusable and m.question.answer_type.accepts(False):\n"
    "        m.turn.remember_tool_answer(m.tool_name, m.question, False)\n"
)
_DRIVER_REMEMBERS_NO = (
    "                question = call.inquiry.question if call.inquiry is not None else None\n"
    "                if question is not None and question.reusable"
    " and question.answer_type.accepts(False):\n"
    "                    self._turn.remember_tool_answer(call.name, question, False)\n"
)

_INQUIRY = "machines/_inquiry_machine.py"
_CALL = "machines/_tool_call_machine.py"
_TURN = "machines/_turn_state.py"
_DRIVER = "coordinator/driver/_tool_coordinator.py"
_MEMORY = "tests/test_turn_memory.py"
_UNANSWERED_AT_TERMINAL = (
    f"{_MEMORY}::test_a_question_left_unanswered_at_the_terminal_is_asked_again"
)
_INTERRUPTED_NEXT_BATCH = (
    f"{_MEMORY}::test_an_interrupted_question_is_asked_again_in_the_next_batch"
)
_INTERRUPTED_MODEL = (
    f"{_MEMORY}::test_a_question_interrupted_while_the_model_works_is_asked_of_it_again"
)
_MODEL_FAILED = f"{_MEMORY}::test_a_question_the_model_failed_is_asked_of_it_again"
_PERMISSION_ASKED_AGAIN = (
    f"{_MEMORY}::test_a_permission_given_or_refused_without_remember_is_asked_again"
)

#: The first seventeen were planted by hand for issue 40 (``docs/testing.md``
#: told them before this list); the rest were added with the script.
PLANTS: tuple[Plant, ...] = (
    # ---------------------------------------------------------- the turn's memory
    Plant(
        name="cancel-cached-as-no",
        bug="a person's cancel is remembered as `no`: `_cancel_by_user` remembers `False`",
        file=_INQUIRY,
        old="def _cancel_by_user(m: Inquiry, _: Mapping[str, Any], out: Out) -> None:\n",
        new="def _cancel_by_user(m: Inquiry, _: Mapping[str, Any], out: Out) -> None:\n"
        + _REMEMBER_NO,
        tests=(_UNANSWERED_AT_TERMINAL, _INTERRUPTED_NEXT_BATCH, _MODEL_FAILED),
    ),
    Plant(
        name="call-caches-cancel-as-no",
        bug="a cancelled question is remembered as `no` by its call: `_input_cancelled`",
        file=_CALL,
        old=(
            "def _input_cancelled(m: ToolCall, _: Mapping[str, Any], out: Out) -> None:\n"
            "    m.inquiry = None\n"
        ),
        new=(
            "def _input_cancelled(m: ToolCall, _: Mapping[str, Any], out: Out) -> None:\n"
            "    asked = m.inquiry.question if m.inquiry is not None else None\n"
            "    if asked is not None and asked.reusable and asked.answer_type.accepts(False):\n"
            "        m.turn.remember_tool_answer(m.name, asked, False)\n"
            "    m.inquiry = None\n"
        ),
        tests=(_UNANSWERED_AT_TERMINAL, _INTERRUPTED_NEXT_BATCH),
    ),
    Plant(
        name="model-failure-cached-as-no",
        bug="the model's failure is remembered as `no`: `_backend_failed` remembers `False`",
        file=_INQUIRY,
        old="def _backend_failed(m: Inquiry, payload: Mapping[str, Any], out: Out) -> None:\n",
        new="def _backend_failed(m: Inquiry, payload: Mapping[str, Any], out: Out) -> None:\n"
        + _REMEMBER_NO,
        tests=(_MODEL_FAILED,),
    ),
    Plant(
        name="interrupt-cached-as-no",
        bug="an interrupt remembers `no` for each open yes/no question: `_close_everything`",
        file=_DRIVER,
        old=(
            "    def _close_everything(self, batch: _Batch) -> None:\n"
            "        for index, call in enumerate(batch.calls):\n"
            "            if not call.closed:\n"
        ),
        new=(
            "    def _close_everything(self, batch: _Batch) -> None:\n"
            "        for index, call in enumerate(batch.calls):\n"
            "            if not call.closed:\n" + _DRIVER_REMEMBERS_NO
        ),
        tests=(_INTERRUPTED_NEXT_BATCH, _INTERRUPTED_MODEL),
    ),
    Plant(
        name="prompter-failure-cached-as-no",
        bug="a prompter's failure is remembered as `no`: `_question_done`",
        file=_DRIVER,
        old=(
            '                _LOG.warning("prompt for %s failed: %s", call.name,'
            " self._masks.mask(str(answer)))\n"
        ),
        new=(
            '                _LOG.warning("prompt for %s failed: %s", call.name,'
            " self._masks.mask(str(answer)))\n" + _DRIVER_REMEMBERS_NO
        ),
        tests=(_UNANSWERED_AT_TERMINAL,),
    ),
    Plant(
        name="unfit-answer-remembered",
        bug="an answer that does not fit is remembered when the person asked to: `_question_done`",
        file=_DRIVER,
        old=(
            "        except InvalidAnswerError as error:\n"
            '            _LOG.warning("the prompter\'s answer was refused: %s", error)\n'
        ),
        new=(
            "        except InvalidAnswerError as error:\n"
            '            _LOG.warning("the prompter\'s answer was refused: %s", error)\n'
            "            if answer.remember and call.inquiry is not None"
            " and is_json(answer.value):\n"
            "                self._turn.remember_tool_answer(\n"
            "                    call.name, call.inquiry.question, answer.value\n"
            "                )\n"
        ),
        tests=(_UNANSWERED_AT_TERMINAL,),
    ),
    Plant(
        name="y-remembered-as-Y",
        bug="every answer to a question is remembered, `y` as `Y`: `_take_answer`",
        file=_INQUIRY,
        old='    if payload["remember"]:\n        m.turn.remember_tool_answer(',
        new="    if m.question.reusable:\n        m.turn.remember_tool_answer(",
        tests=(f"{_MEMORY}::test_a_y_or_n_answer_is_not_remembered",),
    ),
    Plant(
        name="model-answer-remembered",
        bug="the model's answer asks to be remembered: `_backend_done` answers `remember=True`",
        file=_DRIVER,
        old=(
            "                return call.answer(event.inquiry_id, value)  # type: ignore[arg-type]"
        ),
        new=(
            "                return call.answer(event.inquiry_id, value, remember=True)"
            "  # type: ignore[arg-type]"
        ),
        tests=(f"{_MEMORY}::test_the_models_answer_is_never_remembered",),
    ),
    Plant(
        name="unfit-static-cached-as-no",
        bug="a static answer that does not fit is remembered as `no`: `_reject_static`",
        file=_INQUIRY,
        old="def _reject_static(m: Inquiry, _: Mapping[str, Any], out: Out) -> None:\n",
        new="def _reject_static(m: Inquiry, _: Mapping[str, Any], out: Out) -> None:\n"
        + _REMEMBER_NO,
        tests=(f"{_MEMORY}::test_a_static_answer_that_does_not_fit_is_refused_every_time",),
    ),
    Plant(
        name="exhausted-cached-as-no",
        bug="a question asked too often is remembered as `no`: `_give_up`",
        file=_INQUIRY,
        old="def _give_up(m: Inquiry, _: Mapping[str, Any], out: Out) -> None:\n",
        new="def _give_up(m: Inquiry, _: Mapping[str, Any], out: Out) -> None:\n" + _REMEMBER_NO,
        tests=(f"{_MEMORY}::test_attempts_exhausted_is_not_remembered",),
    ),
    Plant(
        name="superseded-cached-as-no",
        bug="a question closed when its turn is continued is remembered as `no`: `_supersede`",
        file=_INQUIRY,
        old="def _supersede(m: Inquiry, payload: Mapping[str, Any], out: Out) -> None:\n",
        new="def _supersede(m: Inquiry, payload: Mapping[str, Any], out: Out) -> None:\n"
        + _REMEMBER_NO,
        tests=(f"{_MEMORY}::test_questions_closed_when_a_turn_is_continued_are_not_remembered",),
    ),
    Plant(
        name="cancelled-permission-remembered-as-N",
        bug="a cancelled permission prompt is remembered as `N`: `_permission_done`",
        file=_DRIVER,
        old="            return call.deny(), Told(prompt_cancelled=True)",
        new="            return call.deny(remember=True), Told(prompt_cancelled=True)",
        tests=(_PERMISSION_ASKED_AGAIN,),
    ),
    Plant(
        name="n-remembered-as-N",
        bug="every `n` at a permission prompt is remembered as `N`: `_denied`",
        file=_CALL,
        old='    if payload["remember"]:\n        m.turn.remember_permission(m.name, "n")\n',
        new='    m.turn.remember_permission(m.name, "n")\n',
        tests=(_PERMISSION_ASKED_AGAIN,),
    ),
    Plant(
        name="y-permission-remembered-as-Y",
        bug="every `y` at a permission prompt is remembered as `Y`: `_permitted`",
        file=_CALL,
        old='    if payload["remember"]:\n        m.turn.remember_permission(m.name, "y")\n',
        new='    m.turn.remember_permission(m.name, "y")\n',
        tests=(
            _PERMISSION_ASKED_AGAIN,
            f"{_MEMORY}::test_an_interrupted_permission_prompt_is_asked_again_in_the_next_batch",
        ),
    ),
    Plant(
        name="interrupted-permission-remembered-as-N",
        bug="an interrupted permission prompt on screen is remembered as `N`: `_interrupted`",
        file=_CALL,
        old=(
            "def _interrupted(m: ToolCall, _: Mapping[str, Any], out: Out) -> None:\n"
            "    m.inquiry = None\n"
        ),
        new=(
            "def _interrupted(m: ToolCall, _: Mapping[str, Any], out: Out) -> None:\n"
            "    if m.state is ToolCallState.ASKING_PERMISSION:\n"
            '        m.turn.remember_permission(m.name, "n")\n'
            "    m.inquiry = None\n"
        ),
        tests=(
            f"{_MEMORY}::test_an_interrupted_permission_prompt_is_asked_again_in_the_next_batch",
        ),
    ),
    # ---------------------------------------------------------- running tools
    Plant(
        name="answered-run-jumps-the-queue",
        bug="a tool run again with its answer takes no place, going before the calls waiting",
        file=_DRIVER,
        old="        async with batch.tool_slots:\n",
        new="        async with asyncio.timeout(None) if effect.answers else batch.tool_slots:\n",
        tests=(
            (
                "tests/test_coordinator_saving.py::"
                "test_a_tool_run_again_with_its_answer_waits_behind_the_calls_already_waiting"
            ),
        ),
    ),
    Plant(
        name="places-handed-newest-first",
        bug="the batch's places for running tools go to the newest waiter, not the oldest",
        file=_DRIVER,
        old="        self.tool_slots = asyncio.Semaphore(parallel_tools)\n",
        new=(
            "        self.tool_slots = asyncio.Semaphore(parallel_tools)\n"
            '        self.tool_slots._waiters = type("Newest", (deque,),'
            ' {"append": deque.appendleft})()\n'
        ),
        tests=(
            (
                "tests/test_coordinator_saving.py::"
                "test_at_most_the_limit_of_tools_run_at_once_the_rest_in_order"
            ),
        ),
    ),
    # ---------------------------------------------------------- the machines' rows
    Plant(
        name="permission-from-file-inverted",
        bug="the tool-call machine's `from_file` guard inverted: the person's reply is recorded "
        "as the answers file's, and the file's as the person's",
        file=_CALL,
        old='FROM_FILE = _g("from_file", "the answers file replied", lambda _, p: p["from_file"])',
        new=(
            'FROM_FILE = _g("from_file", "the answers file replied",'
            ' lambda _, p: not p["from_file"])'
        ),
        tests=(
            "tests/test_headless_policy.py::test_every_cell_of_the_detached_policy",
            "tests/test_headless_policy.py::test_the_person_delivers_withholds_or_cancels_a_result",
        ),
    ),
    Plant(
        name="parked-secret-taken-from-file",
        bug="the guard keeping a parked secret a person's inverted: the answers file's secret is "
        "taken, the person's handed back to the detached policy",
        file=_INQUIRY,
        old='    lambda m, p: m.parked_before and _secret(m) and p["from_file"],\n',
        new='    lambda m, p: m.parked_before and _secret(m) and not p["from_file"],\n',
        tests=("tests/test_park.py::test_a_parked_secret_is_a_persons_at_a_terminal",),
    ),
    Plant(
        name="resumed-call-forgets-its-waiting-question",
        bug="a row's destination: a call taken up with a question still open goes to `running`, "
        "not `resuming`, so the recorded request is neither adopted nor closed",
        file=_CALL,
        old='    Row(trigger="resume", source=_S.NEW, dest=_S.RESUMING, guard=WAITING,\n',
        new='    Row(trigger="resume", source=_S.NEW, dest=_S.RUNNING, guard=WAITING,\n',
        tests=(
            "tests/test_continue_turn.py::test_the_waiting_secret_is_adopted_and_answered_under_its_recorded_id",
            "tests/test_continue_turn.py::test_a_waiting_jp_question_asked_exactly_again_is_adopted_whatever_its_id",
        ),
    ),
    Plant(
        name="secret-without-terminal-reason",
        bug="an emitted record's reason: a secret nobody can be asked is closed "
        "`assistant_routing_denied`, not `no_prompt_backend` (copied from the row above)",
        file=_INQUIRY,
        old=(
            "    failure = secret_without_terminal(m.tool_name, m.question)\n"
            "    _cancelled(m, out, CancellationReason.NO_PROMPT_BACKEND, failure)\n"
        ),
        new=(
            "    failure = secret_without_terminal(m.tool_name, m.question)\n"
            "    _cancelled(m, out, CancellationReason.ASSISTANT_ROUTING_DENIED, failure)\n"
        ),
        tests=("tests/test_rfd082_machines.py::test_secret_routing_guard_without_a_terminal",),
    ),
    Plant(
        name="withdrawn-recorded-as-user",
        bug="a question open when its call is settled is closed `Cancelled(user)`, not "
        "`withdrawn`: nobody cancelled it",
        file=_INQUIRY,
        old="    _cancelled(m, out, CancellationReason.WITHDRAWN, None)\n",
        new="    _cancelled(m, out, CancellationReason.USER, None)\n",
        tests=(
            "tests/test_coordinator_driver.py::test_an_explicit_cancel_closes_every_question_and_call",
            "tests/test_coordinator_driver.py::test_cancelling_the_task_closes_everything_and_saves",
        ),
    ),
    # ---------------------------------------------------------- the turn's memory, more
    Plant(
        name="persistence-none-remembered",
        bug="the `persistence` flag ignored: an `ask_user` answer (`persistence = none`) is "
        "remembered and reused in the turn",
        file="machines/_questions.py",
        old=(
            "        return self.persistence is AnswerReusePolicy.TURN"
            " and not self.answer_type.is_secret\n"
        ),
        new="        return not self.answer_type.is_secret\n",
        tests=(
            "tests/test_ask_user.py::test_a_question_not_to_be_reused_is_neither_looked_up_nor_remembered",
            "tests/test_ask_user.py::test_asked_once_per_call_never_answered_from_the_turns_memory",
        ),
    ),
    Plant(
        name="remembered-choice-not-among-options",
        bug="a remembered choice answers the same question id asked with other options, where it "
        "is no answer",
        file=_TURN,
        old="        if not question.answer_type.accepts(value):\n            return None\n",
        new="",
        tests=(
            "tests/test_turn_state.py::test_a_remembered_choice_answers_only_a_question_that_still_offers_it",
        ),
    ),
    Plant(
        name="permission-remembered-for-every-tool",
        bug="a remembered `Y`/`N` is keyed without the tool's name: one tool's decision answers "
        "every tool's permission prompt",
        file=_TURN,
        old='    return f"{tool_name}.{_PERMISSION}"\n',
        new="    return _PERMISSION\n",
        tests=(
            "tests/test_turn_state.py::test_a_remembered_permission_answers_only_its_own_tool",
            "tests/test_turn_state.py::test_tool_answers_and_permissions_live_in_separate_maps",
        ),
    ),
    # ---------------------------------------------------------- attempts
    Plant(
        name="one-attempt-too-many",
        bug="a tool may ask the same question `max_attempts + 1` times: `>` for `>=`",
        file=_CALL,
        old="    if answers >= m.max_attempts:\n",
        new="    if answers > m.max_attempts:\n",
        tests=(
            "tests/test_rfd082_machines.py::test_a_tool_that_keeps_asking_stops_after_max_attempts",
            "tests/test_coordinator_lifecycle.py::test_a_tool_asking_once_too_often_has_that_question_recorded_and_closed",
        ),
    ),
    Plant(
        name="one-question-too-many",
        bug="a tool may ask `max_questions + 1` questions: `>` for `>=`",
        file=_CALL,
        old="    elif (total := m.asked.total()) >= m.max_questions:\n",
        new="    elif (total := m.asked.total()) > m.max_questions:\n",
        tests=(
            "tests/test_rfd082_machines.py::test_a_tool_that_keeps_asking_new_questions_stops_after_max_questions",
            "tests/test_coordinator_lifecycle.py::test_a_tool_asking_too_many_questions_is_stopped",
        ),
    ),
    Plant(
        name="budgets-forgotten-on-resume",
        bug="a call taken up after a restart counts its attempts from zero, not from its "
        "recorded questions",
        file=_CALL,
        old="    m.asked = Counter(recorded.asked)\n",
        new="    m.asked = Counter()\n",
        tests=("tests/test_continue_turn.py::test_the_attempt_budget_counts_what_was_recorded",),
    ),
    # ---------------------------------------------------------- inquiry ids
    Plant(
        name="ids-reused-after-resume",
        bug="a continued turn's state forgets the ids the turn recorded: a new question may "
        "take a recorded request's id",
        file=_DRIVER,
        old="        self._turn = TurnState(recorded_ids=incomplete.recorded_inquiry_ids)\n",
        new="        self._turn = TurnState()\n",
        tests=(
            "tests/test_continue_turn.py::test_a_changed_question_supersedes_the_waiting_one_and_asks_the_next_attempt",
            "tests/test_continue_turn.py::test_a_redacted_secret_is_asked_again_as_the_next_attempt",
        ),
    ),
    Plant(
        name="ids-reused-by-a-later-batch",
        bug="a coordinator entering a turn that already holds requests forgets their ids",
        file=_DRIVER,
        old="        self._turn = TurnState(recorded_ids=recorded)\n",
        new="        self._turn = TurnState()\n",
        tests=(
            "tests/test_coordinator_lifecycle.py::test_a_resumed_turn_never_reuses_recorded_ids",
        ),
    ),
    Plant(
        name="dotted-ids-collide",
        bug="ids handed out this turn are not checked: call `a.b` asking `c` and call `a` asking "
        "`b.c` both get `a.b.c.1`",
        file=_TURN,
        old=(
            '        while (inquiry_id := f"{tool_call_id}.{question_id}.{attempt}")'
            " in self._recorded or (\n"
            "            inquiry_id in self._allocated\n"
            "        ):\n"
        ),
        new=(
            '        while (inquiry_id := f"{tool_call_id}.{question_id}.{attempt}")'
            " in self._recorded:\n"
        ),
        tests=(
            "tests/test_turn_state.py::test_ids_stay_unique_when_dotted_parts_would_join_alike",
        ),
    ),
    # ---------------------------------------------------------- secrets
    Plant(
        name="result-not-masked",
        bug="masking skipped: a tool's result echoing a secret answer is recorded as it is",
        file=_DRIVER,
        old="        content = self._masks.mask(result.content)\n",
        new="        content = result.content\n",
        tests=(
            "tests/test_masking.py::test_a_pasted_token_the_tool_trims_is_masked_in_what_is_recorded",
            "tests/test_coordinator_driver.py::test_a_secret_echoed_by_its_tool_is_masked",
        ),
    ),
    Plant(
        name="secret-not-added-to-masks",
        bug="a secret recorded: the answer handed to the tool is never added to the masks, so "
        "whatever the tool echoes of it is written",
        file=_DRIVER,
        old="                    self._masks.add(secrets)\n",
        new="",
        tests=(
            "tests/test_masking.py::test_a_pasted_token_the_tool_trims_is_masked_in_what_is_recorded",
            "tests/test_coordinator_driver.py::test_a_secret_echoed_by_its_tool_is_masked",
        ),
    ),
    Plant(
        name="static-secret-recorded",
        bug="a secret's static answer from configuration is recorded as `Answered`, in the clear",
        file=_INQUIRY,
        old="    m.delivered = SecretValue(value)\n    _close(m, out, Redacted(id=_id(m)))\n",
        new=(
            "    m.delivered = SecretValue(value)\n"
            "    _close(m, out, Answered(id=_id(m), answer=value))\n"
        ),
        tests=(
            "tests/test_rfd082_machines.py::test_secret_static_answer_is_redacted_and_reaches_the_tool",
        ),
    ),
    Plant(
        name="static-answer-repr-shows-it",
        bug="a static answer's `repr` shows the configured value, a secret's included",
        file=_INQUIRY,
        old='        return "StaticAnswer(<configured>)"\n',
        new='        return f"StaticAnswer({self.value!r})"\n',
        tests=("tests/test_rfd082_machines.py::test_a_configured_answer_never_shows_in_a_repr",),
    ),
    # ---------------------------------------------------------- the store
    Plant(
        name="append-after-a-rewrite",
        bug="a stream replaced since the last save (a sanitize, a park mark) is appended to "
        "instead of rewritten",
        file="coordinator/store/_store.py",
        old="            and stream.replaced_at <= saved.revision\n",
        new="",
        tests=(
            "tests/test_store_append.py::test_a_replaced_stream_longer_than_the_file_is_rewritten_not_appended_to",
        ),
    ),
    Plant(
        name="lock-shared",
        bug="the writer lock taken shared: two processes may write one conversation at once",
        file="coordinator/store/_lock.py",
        old="            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n",
        new="            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)\n",
        tests=(
            "tests/test_store_lock.py::test_a_second_writer_is_refused_naming_the_holder_and_nothing_is_lost",
            "tests/test_store_lock.py::test_inquiry_sanitize_and_run_are_refused_while_another_writes",
        ),
    ),
    Plant(
        name="append-without-undo-record",
        bug="an append in place writes no undo record: one cut short is read as a broken file",
        file="coordinator/store/_append.py",
        old="        lock.write_record(record.encode())\n",
        new="",
        tests=(
            "tests/test_store_append.py::test_a_lock_file_is_synced_into_its_directory_before_its_record_is_relied_on",
            "tests/test_store_append.py::test_a_torn_append_reads_as_a_whole_version_and_the_next_save_restores_it",
        ),
    ),
    Plant(
        name="save-before-work-unsynced",
        bug="the save before a tool, a prompt or the model starts is `WRITTEN`, not `LOGGED`: "
        "a power loss may lose a request whose work began",
        file=_DRIVER,
        old=(
            "                    durability = Durability.LOGGED if batch.save_due"
            " else Durability.WRITTEN\n"
        ),
        new="                    durability = Durability.WRITTEN\n",
        tests=("tests/test_coordinator_saving.py::test_the_save_before_a_tool_starts_is_synced",),
    ),
    Plant(
        name="logged-save-unsynced",
        bug="a `LOGGED` save after the log's first line writes it without syncing it",
        file="coordinator/store/_log.py",
        old=(
            "        elif durability is Durability.LOGGED and not first:\n"
            "            lock.sync()\n"
        ),
        new="",
        tests=(
            "tests/test_store_log.py::test_a_logged_save_syncs_the_lock_file_once_and_writes_the_whole_file",
        ),
    ),
    # ---------------------------------------------------------- continuing a turn
    Plant(
        name="finished-call-run-again",
        bug="a call with its response is taken for open when its turn is continued, and run again",
        file="coordinator/stream/_incomplete.py",
        old=(
            "        open_calls = [call for call in calls"
            " if call.closed_at is None and call.continuable]\n"
        ),
        new="        open_calls = [call for call in calls if call.continuable]\n",
        tests=(
            "tests/test_incomplete_turn.py::test_an_open_tool_call_blocks_the_turn",
            "tests/test_incomplete_turn.py::test_results_without_a_model_response_after_them_await_the_follow_up",
        ),
    ),
    Plant(
        name="changed-question-adopted",
        bug="a continued call adopts a recorded request whose question changed (same id, other "
        "text or options), instead of closing it `interrupted`",
        file="machines/_tool_call_machine.py",
        old="        return question.id == self.question_id and asked == recorded\n",
        new="        return question.id == self.question_id\n",
        tests=(
            "tests/test_continue_turn.py::test_a_changed_question_supersedes_the_waiting_one_and_asks_the_next_attempt",
        ),
    ),
    # ---------------------------------------------------------- exit statuses
    Plant(
        name="run-unanswered-exits-0",
        bug="`inquiry run` exits 0 when a question went unanswered and its call did not fail",
        file="coordinator/cli/_run_result.py",
        old="        if self.problems or self.failed_calls or self.unanswered:\n",
        new="        if self.problems or self.failed_calls:\n",
        tests=("tests/test_run.py::test_a_scripted_cancellation_is_the_users",),
    ),
    Plant(
        name="run-unavailable-tool-exits-0",
        bug="`inquiry run` counts a call to a tool that is not there as no failure",
        file="coordinator/cli/_run_progress.py",
        old="_FAILED_OUTCOMES = frozenset({CallOutcome.FAILED, CallOutcome.UNAVAILABLE})\n",
        new="_FAILED_OUTCOMES = frozenset({CallOutcome.FAILED})\n",
        tests=(
            "tests/test_ask_user.py::test_a_scenario_turning_it_off_plays_the_call_as_unavailable",
        ),
    ),
    Plant(
        name="check-statuses-swapped",
        bug="`inquiry check` exits 4 for a blocked turn and 3 for one awaiting the model",
        file="coordinator/cli/_check.py",
        old='    return EXIT_INCOMPLETE_TURN if incomplete["blocked"] else EXIT_AWAITING_MODEL\n',
        new='    return EXIT_AWAITING_MODEL if incomplete["blocked"] else EXIT_INCOMPLETE_TURN\n',
        tests=(
            "tests/test_cli_readers.py::test_check_prints_pairing_totals",
            "tests/test_cli_readers.py::test_check_json_pairs_per_turn",
        ),
    ),
    # ---------------------------------------------------------- the detached policy
    Plant(
        name="detached-default-auto",
        bug="the detached policy nothing configures is `auto`, not RFD 049's `deny`: nobody to "
        "ask, tools run and the model answers for the person",
        file="coordinator/driver/_config.py",
        old="        return DetachedMode.DENY\n\n    return DetachedPolicy(\n",
        new="        return DetachedMode.AUTO\n\n    return DetachedPolicy(\n",
        tests=(
            "tests/test_headless_policy.py::test_nothing_configured_denies_every_kind",
            "tests/test_headless_config.py::test_the_detached_policy_resolves_in_rfd_049s_order",
        ),
    ),
    Plant(
        name="question-decided-by-run-mode",
        bug="a question nobody can answer is decided by the tool's detached mode for "
        "permissions (`run`), not for questions (`tool`)",
        file="coordinator/driver/_config.py",
        old="            detached=self.detached(tool_name).tool,\n",
        new="            detached=self.detached(tool_name).run,\n",
        tests=(
            "tests/test_headless_policy.py::test_a_question_is_decided_by_the_policy_for_questions_not_for_permissions",
        ),
    ),
    Plant(
        name="exclusive-ignored-by-auto",
        bug="`exclusive` ignored: the detached policy `auto` puts a person's-only question to "
        "the model (the guard tests `secret`, handled rows before)",
        file=_INQUIRY,
        old="    lambda m, _: m.facts.detached is DetachedMode.AUTO and m.question.exclusive,\n",
        new="    lambda m, _: m.facts.detached is DetachedMode.AUTO and _secret(m),\n",
        tests=("tests/test_headless_policy.py::test_every_cell_of_the_detached_policy",),
    ),
    # ---------------------------------------------------------- parking
    Plant(
        name="inbox-answers-a-crashed-question",
        bug="the inbox answers a question a run left open when it died, as if parked: nobody "
        "parked it, and its tool may ask something else",
        file="coordinator/driver/_waiting.py",
        old=(
            "        if isinstance(request, InquiryRequest)"
            " and recorded_park(waiting.entry.metadata):\n"
        ),
        new="        if isinstance(request, InquiryRequest):\n",
        tests=("tests/test_park.py::test_the_inbox_does_not_answer_a_question_a_crash_left_open",),
    ),
    Plant(
        name="parked-answer-recorded-as-person",
        bug="a parked question answered when its turn is continued is recorded as the "
        "person's, not `parked_then_answered`",
        file=_INQUIRY,
        old='    m.parked_before = payload["parked"]\n',
        new="    m.parked_before = False\n",
        tests=(
            "tests/test_park.py::test_a_parked_question_is_answered_later_and_no_finished_tool_runs_again",
            "tests/test_park.py::test_an_answers_file_answers_a_parked_question_and_is_named",
        ),
    ),
    Plant(
        name="park-not-marked",
        bug="a parked prompt's request is never marked parked: a reader takes it for one a "
        "crash left open",
        file=_DRIVER,
        old="        batch.unmarked.append(parked)\n",
        new="",
        tests=(
            "tests/test_park.py::test_a_parked_question_stops_its_call_and_the_rest_of_the_batch_finishes",
        ),
    ),
    # ---------------------------------------------------------- request links
    Plant(
        name="link-crosses-turns",
        bug="a `turn_start` does not clear the active request: a new turn's first events link "
        "to the last turn's `chat_request`",
        file="coordinator/stream/_stream.py",
        old="            self._markers.append(index)\n            self._request = None\n",
        new="            self._markers.append(index)\n",
        tests=(
            "tests/test_request_links.py::test_an_event_before_its_turns_first_request_is_unlinked",
            "tests/test_request_links.py::test_links_hold_for_every_turn_the_coordinator_writes",
        ),
    ),
    Plant(
        name="discard-omits-a-close",
        bug="a discarded call's waiting question is never closed: the call gets its response, "
        "the question's request stays open (`_discard_waiting`)",
        file="machines/_tool_call_machine.py",
        old='    _close_waiting(m, waiting, "discard")\n',
        new="",
        tests=(
            "tests/test_discard_turn.py::test_every_open_question_and_call_is_closed_as_discarded_and_nothing_before_changes",
            "tests/test_discard_turn.py::test_a_discarded_turn_is_finished_reloads_and_resaves_byte_for_byte",
        ),
    ),
    Plant(
        name="duplicated-link-resolved",
        bug="a link to an id two entries carried when loaded is resolved to the first, not "
        "reported `duplicated`",
        file="coordinator/stream/_links.py",
        old="    if target in duplicated:\n        return LinkProblem.DUPLICATED\n",
        new="",
        tests=(
            "tests/test_request_links.py::test_a_link_to_an_id_the_file_repeated_binds_nothing",
        ),
    ),
)
