"""The approvals inbox in a real headless browser (Debian's chromium driven by Playwright, as test_web_ui.py
does), over the Temporal stack a user runs (dev server, worker process, `starter.py serve`): sign in with a
token, see the pending refund, approve it, see the run complete and the refund happen once; a second click
shows the rejection and makes no second refund. `UPDATE_INBOX_SCREENSHOT=1` rewrites docs/img/inbox.png
(the picture in docs/http-api.md) from the page with the pending approval."""

from __future__ import annotations

import os
import re
import shutil
import struct
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio

from duragent._config.settings import ROOT
from tests.ops.test_web_ui import BROWSER_ARGS, CHROMIUM, INSTALL_HINT, TIMEOUT_MS
from tests.support.runs_api_stack import APPROVER, VIEWER, ApiStack, eventually, temporal_stack, waiting

# Chromium, and processes of its own: a dev server, a worker and the API server.
pytestmark = [
    pytest.mark.browser,
    pytest.mark.system,
    pytest.mark.skipif(CHROMIUM is None, reason=f"no chromium on PATH; {INSTALL_HINT}"),
]
playwright_api = pytest.importorskip("playwright.async_api", reason="playwright is a dev dependency")
expect = playwright_api.expect
SCREENSHOT = ROOT / "docs" / "img" / "inbox.png"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiStack]:
    built = temporal_stack(tmp_path_factory.mktemp("inbox"))
    try:
        yield built
    finally:
        built.close()


@pytest_asyncio.fixture(scope="module")
async def browser(stack: ApiStack) -> AsyncIterator[object]:
    assert CHROMIUM is not None
    async with playwright_api.async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
        try:
            yield chromium
        finally:
            await chromium.close()


async def signed_in(browser, stack: ApiStack, token: str):  # type: ignore[no-untyped-def]
    context = await browser.new_context(viewport={"width": 1280, "height": 560})
    context.set_default_timeout(TIMEOUT_MS)
    page = await context.new_page()
    await page.goto(f"{stack.url}/inbox")
    await expect(page).to_have_url(re.compile(r"/login$"))  # no session: the login form
    await page.get_by_label("Token").fill(token)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page).to_have_url(re.compile(r"/inbox$"))
    return page


async def test_approve_a_pending_refund_in_the_browser_once(stack: ApiStack, browser, tmp_path):
    with stack.client() as api:
        run_id = api.post("/runs", json={"agent": "refund"}).json()["run_id"]
        [pending] = waiting(api, run_id)["pending_approvals"]
        eventually(lambda: any(i["run_id"] == run_id for i in api.get("/approvals").json()), what="visibility")

    page = await signed_in(browser, stack, APPROVER)
    try:
        await expect(page.get_by_text("Signed in as")).to_contain_text("maria")
        row = page.locator("tr", has=page.get_by_role("link", name=run_id))
        await expect(row).to_contain_text("refund")
        await expect(row).to_contain_text('order_id="4471"')
        await expect(row.locator(".left")).to_have_text(
            re.compile(r"^2[34]h \d+m left$")
        )  # counts down to the deadline
        await expect(row).to_contain_text(pending["arguments_hash"][:12])
        shot = tmp_path / "inbox.png"
        await page.screenshot(path=str(shot))

        await row.get_by_label("reason").fill("customer called, checked the order")
        await row.get_by_role("button", name="Approve").click()
        await expect(row.locator(".outcome")).to_have_text("approved by maria")
        await expect(row.locator(".run-status")).to_have_text("run completed — Refunded order 4471.")
        assert [e.tool for e in stack.effects(run_id)] == ["refund"]

        await row.get_by_role("button", name="Approve").click()  # a second click: rejected, no second refund
        await expect(row.locator(".outcome")).to_have_text(
            re.compile(r"^rejected: call \S+ was already approved by maria; nothing was changed$")
        )
        assert [e.tool for e in stack.effects(run_id)] == ["refund"]

        await row.get_by_role("link", name=run_id).click()  # the run's audit trail
        await expect(page.get_by_role("heading", name=f"Run {run_id}")).to_be_visible()
        audit = page.locator("table").first
        await expect(audit).to_contain_text("approved")
        await expect(audit).to_contain_text("customer called, checked the order")
        await expect(page.locator("p").first).to_contain_text("completed")
    finally:
        await page.context.close()

    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", data[16:24]) == (1280, 560)
    if os.environ.get("UPDATE_INBOX_SCREENSHOT") or not SCREENSHOT.exists():
        SCREENSHOT.parent.mkdir(exist_ok=True)
        shutil.copyfile(shot, SCREENSHOT)


async def test_a_viewer_sees_the_inbox_but_cannot_decide_and_a_bad_token_is_refused(stack: ApiStack, browser):
    with stack.client() as api:
        run_id = api.post("/runs", json={"agent": "refund"}).json()["run_id"]
        waiting(api, run_id)
        eventually(lambda: any(i["run_id"] == run_id for i in api.get("/approvals").json()), what="visibility")
    page = await signed_in(browser, stack, VIEWER)
    try:
        row = page.locator("tr", has=page.get_by_role("link", name=run_id))
        await expect(row.get_by_role("button", name="Approve")).to_be_disabled()
        await page.goto(f"{stack.url}/login")
        await page.get_by_label("Token").fill("not-a-token-0123456789")
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.get_by_text("That token is not valid.")).to_be_visible()
    finally:
        await page.context.close()
    with stack.client() as api:
        assert api.post(f"/runs/{run_id}/cancel", json={}).status_code == 202  # leave nothing waiting
