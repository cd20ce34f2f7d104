"""The one way a URL from outside is shown: no user name, password, query string or fragment."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coordinator._text import shown_links, shown_url, unshown_url_parts

#: What shown_url says in place of a query string or fragment it left out.
CUT = " (query string not shown)"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://example.com/x", "https://example.com/x"),
        ("https://example.com", "https://example.com"),
        ("http://127.0.0.1:8000/mcp", "http://127.0.0.1:8000/mcp"),
        (
            "https://user:pw@auth.example.com:8443/authorize",
            "https://auth.example.com:8443/authorize",
        ),
        ("https://token@host.example/p", "https://host.example/p"),
        ("http://a:b@[::1]:80/p?q=1", f"http://[::1]:80/p{CUT}"),
        ("https://e.com/cb?code=T0KEN&state=S", f"https://e.com/cb{CUT}"),
        ("https://e.com/cb#access_token=T0KEN", f"https://e.com/cb{CUT}"),
        ("https://e.com/cb?#", "https://e.com/cb"),  # empty: nothing was left out
        ("myapp://callback/?code=T0KEN", f"myapp://callback/{CUT}"),
    ],
)
def test_a_url_keeps_its_scheme_host_port_and_path_only(url: str, shown: str) -> None:
    """User name, password, query string and fragment are left out, the cut said."""
    assert shown_url(url) == shown


def test_a_url_that_cannot_be_read_is_not_shown() -> None:
    """A URL the parser refuses (a broken IPv6 host) is named as such, none of it shown."""
    assert shown_url("http://[::1/cb?code=T0KEN") == "<a link that cannot be read>"


def test_any_object_is_shown_by_its_text() -> None:
    """An SDK's URL object is shown as its text is (a provider's base_url is one)."""

    class Url:
        def __str__(self) -> str:
            return "https://u:p@api.example.com/v1?key=K"

    assert shown_url(Url()) == f"https://api.example.com/v1{CUT}"


def test_the_parts_left_out_are_given_for_redacting() -> None:
    """unshown_url_parts gives the user information and the query, whole; nothing when clean."""
    assert unshown_url_parts("https://u:pw@e.com/p?code=T#frag") == ("u:pw", "code=T", "frag")
    assert unshown_url_parts("https://e.com/p") == ()


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (
            "Please open https://auth.example.invalid/cb?code=LEAKY-TOKEN-123 to sign in",
            f"Please open https://auth.example.invalid/cb{CUT} to sign in",
        ),
        (
            "Open https://u:pw@a.example/x?t=1. Then https://b.example/y#z, and done",
            f"Open https://a.example/x{CUT}. Then https://b.example/y{CUT}, and done",
        ),
        ("(see <https://e.com/a?k=v>)", f"(see <https://e.com/a{CUT}>)"),
        ('"https://e.com/a?k=v"', f'"https://e.com/a{CUT}"'),
        ("[sign in](https://e.com/a?k=v)", f"[sign in](https://e.com/a{CUT})"),
        ("https://e.com/a?k=it's-all-token", f"https://e.com/a{CUT}"),
        ("no link here: example.com?x=1", "no link here: example.com?x=1"),
        ("HTTPS://E.COM/a?k=v", f"HTTPS://E.COM/a{CUT}"),
        ("Go...https://e.com/a?k=v", f"Go...https://e.com/a{CUT}"),
        ("1https://e.com/a?k=v", f"1https://e.com/a{CUT}"),
        (
            f"{'x' * 40}://e.com/a?k=v",
            f"{'x' * 40}://e.com/a{CUT}",
        ),
    ],
)
def test_every_link_in_a_text_is_shown_as_shown_url_shows_it(text: str, shown: str) -> None:
    """Each scheme://... run in a text is cut as shown_url cuts it; punctuation after it stays."""
    assert shown_links(text) == shown


#: Text around a link in the property below: anything but the letter marking the token.
_AROUND = st.text(alphabet=st.characters(exclude_characters="Q"))


@given(before=_AROUND, token=st.text(alphabet="0123456789-_.~%", min_size=1), after=_AROUND)
def test_a_token_in_a_links_query_never_survives(before: str, token: str, after: str) -> None:
    """Whatever text surrounds a link, no character of its query string is shown."""
    text = f"{before} https://e.com/cb?code=Q{token}Q {after}"
    assert "Q" not in shown_links(text)
