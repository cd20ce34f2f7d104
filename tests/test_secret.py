"""A secret answer never shows its value, and cannot reach disk by accident."""

from __future__ import annotations

import copy
import logging
import pickle
from typing import TYPE_CHECKING

import orjson
import pytest

from machines import SecretValue

if TYPE_CHECKING:
    from collections.abc import Callable

VALUE = "correct horse battery staple"


@pytest.mark.parametrize(
    "render",
    [
        repr,
        str,
        format,
        lambda secret: f"{secret}",
        lambda secret: f"{secret!r}",
        lambda secret: f"{secret:>60}",
        lambda secret: f"{secret:s}",
        lambda secret: "%s %r" % (secret, secret),  # noqa: UP031 - the old operator too
        "{}".format,
        lambda secret: str([secret, {"k": secret}]),
    ],
)
def test_a_secret_never_renders_its_value(render: Callable[[SecretValue], str]) -> None:
    """Every way of turning a SecretValue into text hides the value."""
    text = render(SecretValue(VALUE))
    assert VALUE not in text
    assert "<secret>" in text


def test_a_logged_secret_shows_no_value(caplog: pytest.LogCaptureFixture) -> None:
    """A secret passed to a log call prints as a placeholder."""
    with caplog.at_level(logging.INFO):
        logging.getLogger("test").info("answer: %s", SecretValue(VALUE))
    assert VALUE not in caplog.text
    assert "<secret>" in caplog.text


def test_reveal_gives_the_value_back() -> None:
    """The executor boundary gets the real answer."""
    assert SecretValue(VALUE).reveal() == VALUE


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_a_secret_cannot_be_pickled(protocol: int) -> None:
    """Pickling (a secret on disk) is refused at every protocol."""
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(SecretValue(VALUE), protocol=protocol)


def test_a_secret_does_not_hand_over_its_state() -> None:
    """__getstate__ (object's default returns the slots) refuses, without the value."""
    with pytest.raises(TypeError, match="cannot be pickled") as caught:
        SecretValue(VALUE).__getstate__()
    assert VALUE not in str(caught.value)


def test_a_secret_cannot_be_copied_through_pickling_machinery() -> None:
    """A deep copy goes through __reduce__, which refuses."""
    with pytest.raises(TypeError, match="cannot be pickled"):
        copy.deepcopy({"answer": SecretValue(VALUE)})


@pytest.mark.parametrize("container", [lambda s: s, lambda s: {"answer": s}, lambda s: [s]])
def test_orjson_refuses_a_secret(container: Callable[[SecretValue], object]) -> None:
    """Serializing a secret to JSON fails, and the error does not carry the value."""
    with pytest.raises(orjson.JSONEncodeError) as caught:
        orjson.dumps(container(SecretValue(VALUE)))
    assert VALUE not in str(caught.value)


def test_a_non_string_secret_is_refused_without_echo() -> None:
    """Only strings can be secrets; the error names the type, not the value."""
    with pytest.raises(TypeError) as caught:
        SecretValue(12345678)  # type: ignore[arg-type]
    assert "int" in str(caught.value)
    assert "12345678" not in str(caught.value)


def test_secrets_compare_by_value_and_hash_alike() -> None:
    """Equal secrets are equal; the hash does not depend on the value."""
    assert SecretValue(VALUE) == SecretValue(VALUE)
    assert SecretValue(VALUE) != SecretValue("other")
    assert hash(SecretValue(VALUE)) == hash(SecretValue("other"))
    assert SecretValue(VALUE) != VALUE
