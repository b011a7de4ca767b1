"""In headless Chromium against ``streamlit run app.py``: the Selection is written into the URL as the
user picks, and a reload of that URL comes back to the same view (table, snapshot, predicate)."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest
from test_browser import CHROME_ARGS, CHROMIUM, server  # noqa: F401 (server: the module's fixture)

import indexcore

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TABLE = "demo.orders"
PREDICATE = "status = 'DONE'"


def _params(page) -> dict:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def test_a_reload_keeps_the_view(server):  # noqa: F811
    from playwright.sync_api import expect, sync_playwright

    url, warehouse = server
    ids = indexcore.open_warehouse(str(warehouse)).table(TABLE).snapshot_ids()
    if len(ids) < 2:
        pytest.skip(f"{TABLE} has one snapshot")
    older = ids[-2]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROME_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1600})
            page.goto(f"{url}/what_if?table={TABLE}&snapshot={older}")
            # the app writes the whole Selection back: the snapshot it opened, from the link
            page.wait_for_url(re.compile(rf"snapshot={older}\b"), timeout=60_000)
            box = page.get_by_role("textbox", name="Predicate (SQL WHERE)")
            expect(box).to_be_visible(timeout=60_000)
            box.fill(PREDICATE)
            box.press("Enter")
            page.wait_for_url(re.compile(r"where="), timeout=60_000)
            assert _params(page) == {"table": TABLE, "snapshot": str(older), "where": PREDICATE}
            page.reload()
            box = page.get_by_role("textbox", name="Predicate (SQL WHERE)")
            expect(box).to_have_value(PREDICATE, timeout=60_000)
            snapshot = page.get_by_role("combobox", name="Snapshot (time travel)")
            expect(snapshot).to_have_value(re.compile(rf"^#{older} ·"), timeout=60_000)
            assert _params(page) == {"table": TABLE, "snapshot": str(older), "where": PREDICATE}
        finally:
            browser.close()
