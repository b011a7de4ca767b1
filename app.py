"""Paimon index explorer: ``streamlit run app.py [-- --warehouse URL]``.

The page scripts live in ``pages/`` and are routed by ``st.navigation`` below. (A fresh
server's first request for a page URL runs that page alone, in Streamlit's older ``pages/``
mode; :func:`pages.common.context` then hands the run back to this script.)
The sidebar picks a warehouse (within the allowed roots), a table and a snapshot; every page
reads them from ``st.session_state`` and draws frames computed by :mod:`indexcore`.
"""

import sys
from pathlib import Path

import streamlit as st

APP_DIR = Path(__file__).resolve().parent
if str(APP_DIR) not in sys.path:
    sys.path.insert(0, str(APP_DIR))

from indexcore.config import settings, tune_gc  # noqa: E402
from indexcore.errors import SettingsError  # noqa: E402

tune_gc()  # a 50,000-file table is millions of long-lived objects: collect them in larger passes

st.set_page_config(page_title="Paimon index explorer", page_icon=":material/search:", layout="wide")
try:  # malformed roots or root options: say so and serve nothing (before pages.common sizes its caches)
    settings()
except SettingsError as exc:
    st.error(f"The explorer cannot start: {exc}")
    st.stop()

from pages.auth import gate  # noqa: E402
from pages.common import PAGES, WH_KEY, sidebar  # noqa: E402

roots = gate()  # sign-in, when the operator turned it on: stops here until the user is signed in
if roots:
    st.session_state.setdefault(WH_KEY, roots[0])
navigation = st.navigation([
    st.Page(str(APP_DIR / "pages" / f"{key}.py"), title=title, icon=icon, default=i == 0)
    for i, (key, title, icon) in enumerate(PAGES)])
with st.sidebar:
    st.session_state["context"] = context = sidebar()
try:
    navigation.run()
finally:  # also when the page stops or reruns: the session keeps no frame of this run
    context.end_run()
