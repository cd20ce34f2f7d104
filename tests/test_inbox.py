"""The web inbox over HTTP: what it lists, what it writes, and what it refuses.

Each test starts ``inquiry serve`` as a user does, on conversations a real
``inquiry run`` parked, and speaks to it as a browser would (the token's
cookie kept, forms posted); the browser tests (``test_inbox_browser.py``)
drive a real one.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

import pytest
from inbox_helpers import (
    BOOLEAN,
    HOSTILE,
    SECRET,
    SELECT,
    TEXT,
    Client,
    answered,
    continue_turn,
    live_directory,
    requests_of,
    run,
    scenario,
    served,
)
from run_helpers import every_byte

from coordinator.store import load_locked

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def live() -> Iterator[Path]:
    """A live directory of the test's own."""
    with live_directory() as path:
        yield path


def parked(
    root: Path, name: str, live: Path, questions: dict[str, dict[str, object] | None]
) -> Path:
    """A conversation ``root/name`` whose run parked ``questions`` (exit 3)."""
    plan = scenario(root.parent / f"{name}.toml", questions)
    root.mkdir(exist_ok=True)
    done = run("run", plan, "--no-interactive", "--conversation", root / name, live=live)
    assert done.returncode == 3, done.stderr
    return plan


def recorded_route(directory: Path, question_id: str) -> tuple[Any, Any] | None:
    """The answer and route recorded for ``question_id`` (``None``: not answered)."""
    return answered(directory).get(question_id)


def test_parked_questions_are_listed_and_answered_through_the_machine(
    tmp_path: Path, live: Path
) -> None:
    """A parked question answered on the page: parked_then_answered by inbox; the turn goes on."""
    root = tmp_path / "root"
    plan = parked(root, "c1", live, {"b": BOOLEAN, "s": SELECT, "t": TEXT, "done": None})
    with served(root, live, "--no-live") as address:
        client = Client(address)
        page = client.get("/")
        for asked in (BOOLEAN, SELECT, TEXT):
            assert str(asked["text"]) in page
        assert "testers only" in page  # a select's option descriptions
        forms = client.forms()
        for question, value in (("apply", "false"), ("channel", "stable"), ("headline", "Typo")):
            status, body = client.request("/answer", form={**forms[question], "value": value})
            assert status == 200, body
            assert "the answer was taken" in body
        assert client.forms() == {}
    conversation = root / "c1"
    assert recorded_route(conversation, "apply") == (
        False,
        {"route": "parked_then_answered", "by": "inbox"},
    )
    assert recorded_route(conversation, "channel") == (
        "stable",
        {"route": "parked_then_answered", "by": "inbox"},
    )
    assert recorded_route(conversation, "headline") == (
        "Typo",
        {"route": "parked_then_answered", "by": "inbox"},
    )
    notes = continue_turn(plan, conversation, live)
    assert notes == {"b": "false\n", "s": '"stable"\n', "t": '"Typo"\n', "done": "null\n"}


def test_hostile_text_is_escaped_everywhere_it_is_shown(tmp_path: Path, live: Path) -> None:
    """Question text, context, default and option labels from a tool never become markup."""
    root = tmp_path / "root"
    hostile_select: dict[str, Any] = {
        "id": "pick",
        "text": HOSTILE,
        "pre_amble": HOSTILE,
        "answer_type": {
            "type": "select",
            "options": [{"value": HOSTILE, "description": HOSTILE}, "plain"],
        },
        "default": HOSTILE,
    }
    parked(root, "c1", live, {"h": hostile_select})
    with served(root, live, "--no-live") as address:
        client = Client(address)
        page = client.get("/")
        assert "<script>document" not in page
        assert "<img src=x" not in page
        assert "&lt;script&gt;document.title=&#39;owned&#39;&lt;/script&gt;&#34;&gt;" in page
        form = client.forms()["pick"]
        status, body = client.request("/answer", form={**form, "value": HOSTILE})
        assert status == 200, body
    assert recorded_route(root / "c1", "pick") == (
        HOSTILE,
        {"route": "parked_then_answered", "by": "inbox"},
    )


def test_every_request_needs_the_token_and_forms_their_own_origin(
    tmp_path: Path, live: Path
) -> None:
    """Without the token, from another Host or Origin, or without the form's value: refused."""
    root = tmp_path / "root"
    parked(root, "c1", live, {"b": BOOLEAN})
    before = every_byte(root / "c1")
    with served(root, live, "--no-live") as address:
        stranger = Client(address, stranger=True)
        assert stranger.request("/")[0] == 403
        assert stranger.request("/?token=not-it")[0] == 403
        client = Client(address)
        form = client.forms()["apply"]
        answer = {**form, "value": "true"}
        assert client.request("/", headers={"Host": "attacker.example:80"})[0] == 403
        assert (
            client.request("/answer", form=answer, headers={"Origin": "http://evil.example"})[0]
            == 403
        )
        assert client.request("/answer", form={**answer, "csrf": "0" * 64})[0] == 403
        assert stranger.request("/answer", form=answer)[0] == 403
        headers = client.opener.open(client.base + "/").headers
        assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert every_byte(root / "c1") == before


def test_nothing_outside_the_root_is_read_or_written(tmp_path: Path, live: Path) -> None:
    """A link under the root to a conversation elsewhere, or a name with .., reaches nothing."""
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside"
    parked(outside, "c1", live, {"b": BOOLEAN})
    (root / "linked").symlink_to(outside / "c1", target_is_directory=True)
    parked(root, "inner", live, {"b": BOOLEAN})
    (root / "inner" / "escape.json").symlink_to(outside / "c1" / "events.json")
    parked(root, "fine", live, {"t": TEXT})  # a form to take the csrf value from
    before = every_byte(outside / "c1")
    with served(root, live, "--no-live") as address:
        client = Client(address)
        page = client.get("/")
        assert "linked" not in page
        assert "holds a symbolic link" in page  # inner: not read, said why
        for name in ("linked", "..", "../outside/c1", "inner"):
            form = {
                "csrf": _csrf(page),
                "kind": "parked",
                "name": name,
                "inquiry_id": "x",
                "value": "true",
            }
            status, body = client.request("/answer", form=form)
            assert status == 409, (name, body)
    assert every_byte(outside / "c1") == before


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    if found is None:
        pytest.fail("the page holds no form")
    return found.group(1)


def test_an_unfit_answer_a_secret_and_a_busy_conversation_are_refused(
    tmp_path: Path, live: Path
) -> None:
    """Each refusal says why on the page, and nothing is written."""
    root = tmp_path / "root"
    parked(root, "c1", live, {"s": SELECT, "k": SECRET})
    before = every_byte(root / "c1")
    with served(root, live, "--no-live") as address:
        client = Client(address)
        page = client.get("/")
        assert "handed only to a live run" in page  # the parked secret: no form
        form = client.forms()["channel"]
        status, body = client.request("/answer", form={**form, "value": "nightly"})
        assert status == 409
        assert "one of &#39;beta&#39;, &#39;stable&#39;" in body
        secret = {**form, "inquiry_id": form["inquiry_id"].replace("channel", "token")}
        secret["inquiry_id"] = _inquiry_id(root / "c1", "token")
        status, body = client.request("/answer", form={**secret, "value": "hunter2-typed"})
        assert status == 409
        assert "is a secret" in body
        held = load_locked(root / "c1")
        try:
            page = client.get("/")
            assert "is writing it now" in page
            assert client.forms() == {}
            status, body = client.request("/answer", form={**form, "value": "beta"})
            assert status == 409
            assert "is writing this conversation now" in body
        finally:
            held.close()
    assert every_byte(root / "c1") == before
    assert b"hunter2-typed" not in every_byte(root)


def _inquiry_id(directory: Path, question_id: str) -> str:
    found = [key for key, asked in requests_of(directory).items() if asked == question_id]
    if not found:
        pytest.fail(f"no request for {question_id}")
    return found[0]


def test_the_newest_conversation_comes_first(tmp_path: Path, live: Path) -> None:
    """Conversations with questions waiting are listed newest first; those without, not at all."""
    root = tmp_path / "root"
    parked(root, "older", live, {"b": BOOLEAN})
    parked(root, "newer", live, {"t": TEXT})
    plan = scenario(tmp_path / "plain.toml", {"done": None})
    assert (
        run(
            "run", plan, "--no-interactive", "--conversation", root / "finished", live=live
        ).returncode
        == 0
    )
    with served(root, live, "--no-live") as address:
        page = Client(address).get("/")
    assert page.index(">newer<") < page.index(">older<")
    assert ">finished<" not in page


def test_serve_says_what_it_needs(tmp_path: Path, live: Path) -> None:
    """A root that is no directory, or a live directory others may use, is an error naming it."""
    done = run("serve", tmp_path / "missing", "--port", "0", live=live)
    assert done.returncode == 2
    assert "is not a directory of conversations" in done.stderr
    open_to_all = tmp_path / "shared-live"
    open_to_all.mkdir(mode=0o777)
    os.chmod(open_to_all, 0o777)  # noqa: PTH101, S103 - open to all on purpose, past the umask
    done = run("serve", tmp_path, "--port", "0", live=open_to_all)
    assert done.returncode == 2
    assert "may be used by others" in done.stderr


def test_a_run_with_inbox_refuses_a_live_directory_others_could_use(tmp_path: Path) -> None:
    """A run with --inbox checks the live directory before it writes anything (exit 2)."""
    open_to_all = tmp_path / "shared-live"
    open_to_all.mkdir()
    os.chmod(open_to_all, 0o777)  # noqa: PTH101, S103 - open to all on purpose, past the umask
    plan = scenario(tmp_path / "c.toml", {"t": TEXT})
    done = run("run", plan, "--inbox", "--conversation", tmp_path / "c", live=open_to_all)
    assert done.returncode == 2
    assert "--inbox:" in done.stderr
    assert "may be used by others" in done.stderr
    assert not (tmp_path / "c").exists()
