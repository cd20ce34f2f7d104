"""The web inbox in a real browser (Debian's chromium, headless, through selenium).

A person answers, from the page, the questions a CI run parked (each
answer type), sees each leave the page, and the turn then continues; and
answers a live run's questions, a secret among them, as they are asked.
The conversation on disk is checked after each. With
``INQUIRY_INBOX_SCREENSHOTS=DIR`` the tests also save the screenshots the
docs show (``docs/inbox.md`` says how they are made again).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from inbox_helpers import (
    BOOLEAN,
    SECRET,
    SELECT,
    TEXT,
    answered,
    browser,
    continue_turn,
    inquiry,
    live_directory,
    run,
    scenario,
    served,
)
from process_helpers import reaped, wait_for
from run_helpers import every_byte

if TYPE_CHECKING:
    import subprocess

    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement

pytestmark = pytest.mark.timeout(300)

SCREENSHOTS = os.environ.get("INQUIRY_INBOX_SCREENSHOTS")
DEPLOY_TOKEN = "s3cret-typed-in-the-browser"


def _question(driver: WebDriver, question_id: str) -> WebElement | None:
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - the browser tests' own

    found = driver.find_elements(By.CSS_SELECTOR, f'article[data-question="{question_id}"]')
    return found[0] if found else None


def _answer(driver: WebDriver, question_id: str, value: str | bool) -> str:
    """Answer ``question_id`` on the page as a person does; the notice the page then shows."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415

    article = wait_for(lambda: _question(driver, question_id), f"{question_id} on the page")
    if isinstance(value, bool):
        article.find_element(By.CSS_SELECTOR, f'input[value="{str(value).lower()}"]').click()
    elif article.get_attribute("data-kind") == "select":
        article.find_element(By.CSS_SELECTOR, f'input[value="{value}"]').click()
    else:
        field = article.find_element(By.CSS_SELECTOR, "textarea, input[type=password]")
        field.clear()
        field.send_keys(value)
    before = driver.find_elements(By.ID, "notice")
    article.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    shown = wait_for(
        lambda: next((n for n in driver.find_elements(By.ID, "notice") if n not in before), None),
        "the notice",
    )
    return str(shown.text)


def _wait_question(driver: WebDriver, question_id: str, process: subprocess.Popen[str]) -> None:
    """Wait until ``question_id`` is on the page, with no reload (the page is told)."""
    wait_for(lambda: _question(driver, question_id), f"{question_id} live", process=process)


def _shot(driver: WebDriver, name: str) -> None:
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(Path(SCREENSHOTS) / name))


def test_a_question_a_ci_run_parked_is_answered_in_the_browser_and_the_turn_completes(
    tmp_path: Path,
) -> None:
    """Each answer type answered on the page leaves it, recorded by inbox; the turn then ends."""
    root = tmp_path / "root"
    root.mkdir()
    with live_directory() as live, browser() as driver:
        plan = scenario(
            tmp_path / "c.toml", {"fix": BOOLEAN, "publish": SELECT, "release": TEXT, "lint": None}
        )
        conversation = root / "yesterday"
        ci = run("run", plan, "--no-interactive", "--conversation", conversation, live=live)
        assert ci.returncode == 3, ci.stderr
        with served(root, live, "--no-live") as address:
            driver.get(address)
            assert driver.title == "Inquiry inbox (3)"
            _shot(driver, "inbox-parked.png")
            for question, value in (("apply", True), ("channel", "stable"), ("headline", "Typo")):
                notice = _answer(driver, question, value)
                assert notice == "Answered: the answer was taken."
                assert _question(driver, question) is None
                recorded = answered(conversation)
                assert recorded[question] == (
                    value,
                    {"route": "parked_then_answered", "by": "inbox"},
                )
            assert driver.title == "Inquiry inbox (0)"
        notes = continue_turn(plan, conversation, live)
    # Each tool ran to its end once, with its answer; lint, finished before, was not run again.
    assert notes == {
        "fix": "true\n",
        "publish": '"stable"\n',
        "release": '"Typo"\n',
        "lint": "null\n",
    }


def test_a_live_runs_questions_show_together_and_its_secret_is_answered_from_the_browser(
    tmp_path: Path,
) -> None:
    """Live questions show together; one answered leaves the rest; a secret reaches the tool."""
    root = tmp_path / "root"
    root.mkdir()
    plan = scenario(tmp_path / "live.toml", {"deploy": SECRET, "release": TEXT, "fix": BOOLEAN})
    conversation = root / "live"
    with live_directory() as live, browser() as driver, served(root, live) as address:
        driver.get(address)
        assert driver.title == "Inquiry inbox (0)"
        started = inquiry(
            "run", plan, "--no-interactive", "--inbox", "--conversation", conversation, live=live
        )
        with reaped(started) as process:
            # The page is told: no reload.
            for question in ("token", "headline", "apply"):
                _wait_question(driver, question, process)
            _shot(driver, "inbox-live.png")
            typed = driver.find_element(
                "css selector", 'article[data-question="headline"] textarea'
            )
            typed.send_keys("half-typed")
            assert _answer(driver, "apply", False) == "Answered: the answer was taken."
            assert _question(driver, "apply") is None
            assert _question(driver, "token") is not None
            assert _question(driver, "headline") is not None
            assert typed.get_attribute("value") == "half-typed"  # left alone
            assert _answer(driver, "token", DEPLOY_TOKEN) == "Answered: the answer was taken."
            assert _answer(driver, "headline", "Live") == "Answered: the answer was taken."
            _, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
        wait_for(lambda: driver.title == "Inquiry inbox (0)" or None, "an empty inbox")
    workspace = conversation / "workspace"
    assert (workspace / "deploy.txt").read_text() == f"{len(DEPLOY_TOKEN)} characters\n"
    recorded = answered(conversation)
    assert recorded["token"] == ("<redacted>", {"route": "person", "by": "inbox"})
    assert recorded["apply"] == (False, {"route": "person", "by": "inbox"})
    assert DEPLOY_TOKEN.encode() not in every_byte(tmp_path)
