"""Optional sign-in for a team server: Streamlit's own authentication (``st.login`` with an OIDC
provider configured in ``.streamlit/secrets.toml``), off unless the ``app_sign_in`` setting is
set, and the operator's mapping from users and groups to the roots each may read
(``app_user_roots``, see :mod:`indexcore.config`).

The mapping is JSON, inline or in a file: ``{"alice@example.com": ["s3://lake/sales"],
"group:analysts": ["/data/wh"], "*": ["/data/public"]}``. A signed-in user reads the union of
the roots listed under their e-mail, under ``group:G`` for each group in the provider's
``groups`` claim, and under ``*``; a user with none is told so and sees nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

import streamlit as st

from indexcore.config import settings, variable
from indexcore.errors import IndexCoreError
from indexcore.frames.text import md

ANYONE, GROUP = "*", "group:"


def parse_user_roots(text: str) -> dict[str, tuple[str, ...]]:
    """The operator's mapping (JSON text, or the path of a JSON file) as ``{who: roots}``; an
    :class:`IndexCoreError` names what is wrong."""
    text = text.strip()
    if not text:
        return {}
    source = "the setting"
    if not text.startswith("{"):
        source = text
        try:
            text = Path(text).read_text(encoding="utf-8")
        except OSError as exc:
            raise IndexCoreError(f"{variable('app_user_roots')}: cannot read {source}: {exc.strerror}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise IndexCoreError(f"{variable('app_user_roots')} ({source}) is not JSON: {exc.msg} at line "
                             f"{exc.lineno}, column {exc.colno}") from None
    if not isinstance(doc, dict) or not all(
            isinstance(k, str) and isinstance(v, list) and all(isinstance(r, str) and r.strip() for r in v)
            for k, v in doc.items()):
        raise IndexCoreError(f"{variable('app_user_roots')} ({source}) must map each user, group:NAME or * "
                             "to a list of roots (non-empty strings)")
    return {k.strip().lower(): tuple(r.strip() for r in v) for k, v in doc.items()}


def roots_for(mapping: Mapping[str, tuple[str, ...]], email: str | None, groups: Iterable[str] = ()) -> tuple[str, ...]:
    """The roots a user may read: theirs (by e-mail, case-insensitive), their groups' and everyone's."""
    keys = [*([email.strip().lower()] if email else []), *(f"{GROUP}{g}".lower() for g in groups), ANYONE]
    return tuple(dict.fromkeys(r for k in keys for r in mapping.get(k, ())))


def _groups(user) -> list[str]:
    value = user.get("groups") or []
    return [value] if isinstance(value, str) else [str(g) for g in value]


def user_roots() -> tuple[str, ...] | None:
    """The signed-in user's roots when sign-in is on (None when it is off)."""
    if not settings().app_sign_in:
        return None
    if not getattr(st.user, "is_logged_in", False):
        return ()
    return roots_for(parse_user_roots(settings().app_user_roots), st.user.get("email"), _groups(st.user))


def gate() -> tuple[str, ...] | None:
    """Before any page: with sign-in on, a sign-in button until the user is signed in, and a stop
    with a message when the operator gave them no root; their roots then (None: sign-in is off)."""
    provider = settings().app_sign_in.strip()
    if not provider:
        return None
    try:
        roots = user_roots()
    except IndexCoreError as exc:  # the operator's mapping is broken: nobody gets in
        st.error(md(exc))
        st.stop()
    if not getattr(st.user, "is_logged_in", False):
        st.title("Paimon index explorer")
        st.info("This server asks you to sign in.")
        if st.button("Sign in", key="sign_in", type="primary"):
            st.login() if provider == "on" else st.login(provider)
        st.stop()
    who = st.user.get("email") or st.user.get("name") or "you"
    st.sidebar.caption(f"Signed in as {md(who)}")
    if st.sidebar.button("Sign out", key="sign_out"):
        st.logout()
    if not roots:
        st.warning(md(f"Signed in as {who}, but the operator has given you no warehouse to read "
                      f"({variable('app_user_roots')})."))
        st.stop()
    return roots
