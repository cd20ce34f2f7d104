"""What the web inbox tests share: scenarios that ask each answer type, a served inbox, a browser.

``served`` starts ``inquiry serve`` as a user does (a process of its own,
on a free port, with a live directory of the test's own) and gives its
address with the token; ``browser`` is Debian's chromium, headless, driven
by selenium through Debian's chromedriver. Without them the browser tests
skip, saying why; under ``CI=true`` they fail (``.ci/run`` installs them).
"""

from __future__ import annotations

import contextlib
import http.cookiejar
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from conftest import IN_CI
from process_helpers import reaped, wait_for

from coordinator import EventEntry, load_conversation
from machines import Answered, InquiryRequest, Redacted

if TYPE_CHECKING:
    from collections.abc import Iterator

    from selenium.webdriver.remote.webdriver import WebDriver

PROJECT = Path(__file__).resolve().parent.parent
TOOL = Path(__file__).resolve().parent / "inbox_tool.py"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
#: What Chromium needs to run headless as root on these machines (docs/testing.md).
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1100,900",
)

BOOLEAN: dict[str, Any] = {
    "id": "apply",
    "text": "Apply the change to notes.txt?",
    "answer_type": {"type": "boolean"},
    "default": True,
    "pre_amble": "--- a/notes.txt\n+++ b/notes.txt\n-teh plan\n+the plan",
}
SELECT: dict[str, Any] = {
    "id": "channel",
    "text": "Publish notes.txt where?",
    "answer_type": {
        "type": "select",
        "options": [
            {"value": "beta", "description": "testers only"},
            {"value": "stable", "description": "everyone"},
        ],
    },
    "default": "beta",
}
TEXT: dict[str, Any] = {
    "id": "headline",
    "text": "The changelog headline?",
    "answer_type": {"type": "text"},
}
SECRET: dict[str, Any] = {
    "id": "token",
    "text": "The deploy token?",
    "answer_type": {"type": "secret"},
}
#: The inbox tool's parameters' properties, as TOML.
PROPERTIES = '{ note = { type = "string" }, question = { type = "object" } }'
#: Text no page may run or let out of its attribute.
HOSTILE = "<script>document.title='owned'</script>\"><img src=x onerror=alert(1)>'"


def scenario(
    path: Path, questions: dict[str, dict[str, Any] | None], *, detached: str = "park"
) -> Path:
    """A scenario whose one cycle calls one tool per entry of ``questions``, named by its key.

    Each tool asks its question (``None``: asks nothing) and notes its runs
    in ``<key>.txt`` of the workspace. (One tool each: the questions of
    parallel calls of one tool are not told apart when a turn is continued.)
    """
    calls = ", ".join(
        f'{{ tool = "{name}", arguments = '
        + _toml_inline({"note": f"{name}.txt", **({"question": q} if q else {})})
        + " }"
        for name, q in questions.items()
    )
    command = f"[{json.dumps(sys.executable)}, {json.dumps(str(TOOL))}]"
    tools = "".join(
        f"""
[tools.{name}]
description = "Ask what it is told to, then note it ran."
command = {command}
timeout = 30
parameters = {{ type = "object", required = ["note"], properties = {PROPERTIES} }}
"""
        for name in questions
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"""
title = "Inbox test"

[defaults]
run = "unattended"
detached = "{detached}"
{tools}
[[turns]]
message = "Ask away."
reply = "All answered."

[[turns.cycles]]
message = "The calls, together."
calls = [{calls}]
""",
        encoding="utf-8",
    )
    return path


def _toml_inline(value: object) -> str:
    """``value`` as a TOML inline value (JSON's strings are TOML's basic strings)."""
    if isinstance(value, dict):
        return (
            "{ "
            + ", ".join(f"{json.dumps(k)} = {_toml_inline(v)}" for k, v in value.items())
            + " }"
        )
    if isinstance(value, list):
        return "[" + ", ".join(_toml_inline(item) for item in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value)


def inquiry(*args: str | Path, live: Path, **kwargs: Any) -> subprocess.Popen[str]:
    """``inquiry ARGS`` started as a user does, its live directory ``live``."""
    environment = {**os.environ, "INQUIRY_LIVE_DIR": str(live), "INQUIRY_NONINTERACTIVE": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "coordinator", *map(str, args)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
        start_new_session=True,
        **kwargs,
    )


def run(*args: str | Path, live: Path) -> subprocess.CompletedProcess[str]:
    """``inquiry ARGS`` to its end: its status and output."""
    with reaped(inquiry(*args, live=live)) as process:
        out, err = process.communicate(timeout=90)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def continue_turn(plan: Path, conversation: Path, live: Path) -> dict[str, str]:
    """Continue a parked turn, nobody at the terminal (it must end: exit 0); each tool's notes."""
    done = run(
        "run",
        plan,
        "--no-interactive",
        "--continue-turn",
        "--conversation",
        conversation,
        live=live,
    )
    assert done.returncode == 0, done.stderr
    return {note.stem: note.read_text() for note in (conversation / "workspace").glob("*.txt")}


@contextlib.contextmanager
def live_directory() -> Iterator[Path]:
    """A live directory of the test's own, short enough for a socket's path."""
    path = Path(tempfile.mkdtemp(prefix="inq-live-"))
    path.chmod(0o700)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def served(root: Path, live: Path, *extra: str) -> Iterator[str]:
    """``inquiry serve ROOT`` running on a free port; the address it printed, token included."""
    # Served from beside the root, named as a person would: the page shows the name given.
    started = inquiry("serve", root.name, "--port", "0", *extra, live=live, cwd=root.parent)
    with reaped(started) as process:
        assert process.stdout is not None
        address = wait_for(
            lambda: _address(process.stdout.readline() if process.stdout else ""),
            "the inbox's address",
            process=process,
        )
        try:
            yield address
        finally:
            process.terminate()
            process.wait(timeout=30)


def _address(line: str) -> str | None:
    found = re.search(r"open (http://\S+)", line)
    return found.group(1) if found else None


class Client:
    """A browser's requests without a browser: the token's cookie kept, forms posted."""

    def __init__(self, address: str, *, stranger: bool = False) -> None:
        """Open ``address`` (token and all), keeping its cookie; a ``stranger`` does not."""
        parts = urllib.parse.urlsplit(address)
        self.base = f"{parts.scheme}://{parts.netloc}"
        self.cookies = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies))
        if not stranger:
            self.get(address)

    def request(
        self,
        path: str,
        *,
        form: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, str]:
        """Status and body of ``path`` (a ``POST`` of ``form`` when given)."""
        url = path if path.startswith("http") else self.base + path
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        request = urllib.request.Request(url, data=data, headers=headers or {})  # noqa: S310
        try:
            with self.opener.open(request, timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def get(self, path: str) -> str:
        """The page at ``path`` (it must be served)."""
        status, body = self.request(path)
        assert status == 200, body
        return body

    def forms(self) -> dict[str, dict[str, str]]:
        """Each answer form of the inbox's page, by its question id: its hidden fields."""
        page = self.get("/")
        found = {}
        for article in re.findall(r"<article .*?</article>", page, flags=re.DOTALL):
            question = re.search(r'data-question="([^"]*)"', article)
            fields = dict(re.findall(r'type="hidden" name="(\w+)" value="([^"]*)"', article))
            if question and fields:
                found[question.group(1)] = fields
        return found


def requests_of(directory: Path) -> dict[str, str]:
    """Each question id asked in the conversation in ``directory``, by inquiry id."""
    return {
        entry.payload.id: str(entry.payload.question.id)
        for entry in load_conversation(directory).stream
        if isinstance(entry, EventEntry) and isinstance(entry.payload, InquiryRequest)
    }


def answered(directory: Path) -> dict[str, tuple[Any, Any]]:
    """Each question answered in ``directory``, by its id: its answer (or redaction) and route."""
    asked = requests_of(directory)
    found: dict[str, tuple[Any, Any]] = {}
    for entry in load_conversation(directory).stream:
        if not isinstance(entry, EventEntry):
            continue
        payload = entry.payload
        if isinstance(payload, Answered | Redacted) and payload.id in asked:
            value = payload.answer if isinstance(payload, Answered) else "<redacted>"
            found[asked[payload.id]] = (value, entry.metadata.get("inquiry"))
    return found


def chromium_problem() -> str | None:
    """Why the browser tests cannot run here (``None``: they can)."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not Path(path).exists():
            return f"{path} is missing (apt-get install chromium chromium-driver; .ci/run does)"
    try:
        import selenium  # noqa: F401, PLC0415 - only the browser tests need it
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    return None


@contextlib.contextmanager
def browser() -> Iterator[WebDriver]:
    """Headless chromium, a fresh profile, driven by selenium; skipped without (in CI: failed)."""
    problem = chromium_problem()
    if problem is not None:
        if IN_CI:
            pytest.fail(f"the browser tests need chromium: {problem}")
        pytest.skip(f"the browser tests need chromium: {problem}")
    from selenium import webdriver  # noqa: PLC0415 - only the browser tests need it
    from selenium.webdriver.chrome.service import Service  # noqa: PLC0415

    profile = tempfile.mkdtemp(prefix="inq-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    try:
        driver.set_page_load_timeout(30)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
