"""`inquiry run` with a real model backend: the SDKs over loopback to the local fake API."""

from __future__ import annotations

import shutil
import socket
from typing import TYPE_CHECKING

import pytest
from fake_api import KEY, PROVIDER_KITS, FakeAPI, ProviderKit
from run_helpers import (
    TOUR,
    TOUR_SECRET,
    answering,
    assert_paired,
    cli,
    every_byte,
    outcomes,
    write,
)

from machines import Answered, CancellationReason, Cancelled

if TYPE_CHECKING:
    from pathlib import Path

#: The tour's person, without its [[model]] entries: the model is the real backend.
PERSON = """
[[permissions]]
reply = "y"
[[answers]]
question = "apply_changes"
value = true
remember = true
[[answers]]
question = "bump"
value = "patch"
[[answers]]
question = "headline"
value = "Tidied"
[[answers]]
question = "token"
value = "tour-s3cret-token"
[[answers]]
tool = "ask_user"
value = true
"""


def fix_answer(directory: Path) -> Answered:
    """The recorded answer to lint's `fix` question (the one put to the model)."""
    conversation = assert_paired(directory)
    (answer,) = [r for i, r in outcomes(conversation).items() if ".fix." in i]
    assert isinstance(answer, Answered)
    return answer


def run_with_backend(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kit: ProviderKit, base_url: str
) -> tuple[int, str, str, Path]:
    """The tour with the person scripted and ``kit``'s provider at ``base_url`` as the model."""
    directory = tmp_path / "conversation"
    status, out, err = cli(
        "run",
        TOUR / "scenario.toml",
        "--answers",
        write(tmp_path / "person.toml", PERSON),
        "--conversation",
        directory,
        "--backend",
        kit.name,
        "--model",
        "test-model",
        "--base-url",
        base_url + kit.url_suffix,
        capsys=capsys,
    )
    return status, out, err, directory


@pytest.mark.parametrize("kit", PROVIDER_KITS, ids=lambda kit: kit.name)
def test_the_command_lines_backend_answers_for_the_model(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    kit: ProviderKit,
) -> None:
    """--backend: the tour's assistant-targeted question is answered by the SDK, once."""
    monkeypatch.setenv(f"{kit.name.upper()}_API_KEY", KEY)
    with FakeAPI(answering(kit)) as api:
        status, out, err, directory = run_with_backend(tmp_path, capsys, kit, api.base_url)
    assert (status, err) == (0, "")
    assert fix_answer(directory).answer is True
    (request,) = api.requests
    assert request.path == kit.path
    sent = request.json()
    names = [tool.get("name") or tool["function"]["name"] for tool in sent["tools"]]
    assert names == ["fs_modify_file", "lint", "release", "deploy", "ask_user", "answer_inquiry"]
    assert "Strip the trailing whitespace" in request.text()
    assert f"model: {kit.name} test-model (from the command line)" in out
    assert "= lint · fix: answered by the model: true" in out
    for text in (KEY, TOUR_SECRET):
        assert text not in out
        assert text.encode() not in every_byte(directory)
        assert text not in request.text()


def test_the_scenarios_backend_answers_when_the_answers_file_has_no_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A [backend] table in the scenario is used when neither --backend nor [[model]] is given."""
    monkeypatch.setenv("TOUR_MODEL_KEY", KEY)
    tour = tmp_path / "tour"
    shutil.copytree(TOUR, tour)
    kit = PROVIDER_KITS[0]
    answers = write(tmp_path / "person.toml", PERSON)
    directory = tmp_path / "conversation"
    with FakeAPI(answering(kit)) as api:
        scenario = tour / "scenario.toml"
        scenario.write_text(
            scenario.read_text()
            + "\n[backend]\n"
            + f'provider = "{kit.name}"\nmodel = "scenario-model"\n'
            + f'base_url = "{api.base_url}{kit.url_suffix}"\napi_key_env = "TOUR_MODEL_KEY"\n'
        )
        status, out, err = cli(
            "run", scenario, "--answers", answers, "--conversation", directory, capsys=capsys
        )
    assert (status, err) == (0, "")
    assert fix_answer(directory).answer is True
    assert len(api.requests) == 1
    assert "scenario-model (from the scenario)" in out


def test_a_tool_name_the_provider_refuses_is_named_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dotted tool name and a real provider: the scenario's tool is named, nothing is run."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    tour = tmp_path / "tour"
    shutil.copytree(TOUR, tour)
    scenario = tour / "scenario.toml"
    text = scenario.read_text().replace("[tools.lint", '[tools."code.lint"')
    scenario.write_text(text.replace('tool = "lint"', 'tool = "code.lint"'))
    answers = write(tmp_path / "person.toml", PERSON)
    directory = tmp_path / "conversation"
    status, _, err = cli(
        "run", scenario, "--answers", answers, "--conversation", directory,
        "--backend", "anthropic", "--model", "m", "--base-url", "http://127.0.0.1:9",
        capsys=capsys,
    )  # fmt: skip
    assert status == 2
    assert f'{scenario}: tools."code.lint": every tool is sent to anthropic' in err
    assert not directory.exists()


def test_a_failing_provider_is_a_backend_error_on_the_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The provider answering 500: the question is cancelled as backend_error, the run goes on."""
    kit = PROVIDER_KITS[0]
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with FakeAPI() as api:
        api.reply(kit.error(500, "the fake is down"))
        status, out, _, directory = run_with_backend(tmp_path, capsys, kit, api.base_url)
    assert status == 1  # the turn completed, but a question went unanswered
    conversation = assert_paired(directory)
    (fix,) = [r for i, r in outcomes(conversation).items() if ".fix." in i]
    assert fix == Cancelled(id=fix.id, reason=CancellationReason.BACKEND_ERROR)
    assert "x lint · fix: cancelled (backend_error)" in out


def test_a_missing_key_names_the_unset_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the key, the command says which environment variable is not set."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    status, _, err, _ = run_with_backend(tmp_path, capsys, PROVIDER_KITS[0], "http://127.0.0.1:9")
    assert status != 0
    assert "the environment variable ANTHROPIC_API_KEY is not set" in err
    assert "pass api_key" not in err


def test_a_key_given_for_the_variables_name_is_not_echoed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A key pasted as --api-key-env is not shown back, and the message says what to give."""
    pasted = "sk-ant-api03-Zx81kQ-pasted-by-mistake"
    status, out, err = cli(
        "run",
        TOUR / "scenario.toml",
        "--answers",
        write(tmp_path / "person.toml", PERSON),
        "--conversation",
        tmp_path / "conversation",
        "--backend",
        "anthropic",
        "--model",
        "test-model",
        "--api-key-env",
        pasted,
        capsys=capsys,
    )
    assert status != 0
    assert "--api-key-env: no API key" in err
    assert "name of the variable" in err
    assert "Zx81kQ" not in err + out


def test_a_backend_that_cannot_connect_shows_the_providers_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing listens at the base URL: the cause line under the cancelled question names it."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with socket.socket() as unused:  # a port nothing listens on once it is closed
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}"
    status, out, err, _ = run_with_backend(tmp_path, capsys, PROVIDER_KITS[0], base_url)
    assert status == 1
    assert err == (
        "inquiry: 1 of 6 tool calls failed and 1 question was not answered "
        "(the summary lists them)\n"
    )
    lines = out.splitlines()
    cancelled = lines.index(
        "    x lint · fix: cancelled (backend_error): the model could not answer"
    )
    cause = lines[cancelled + 1]
    assert cause.startswith("      cause: The tool 'lint' asked a follow-up question")
    assert f"anthropic: could not connect to {base_url}" in cause
    assert "..." not in cause  # whole: not cut
    assert lines[cancelled + 2] == "  <- lint failed: its question fix was not answered"
