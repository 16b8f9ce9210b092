"""The inbox's conversation view in a real headless browser (Debian's chromium driven by Playwright, as
test_inbox.py does): a person sends a message and watches the answer being written, then approves a gated tool
inline and sees the turn finish; a viewer sees the request but no buttons."""

from __future__ import annotations

import re
import uuid

import pytest

from duragent import AgentClient
from tests.conftest import new_worker
from tests.ops.test_web_ui import BROWSER_ARGS, CHROMIUM, INSTALL_HINT, TIMEOUT_MS
from tests.support.live_agents import SLOW_CHAT, STORY
from tests.support.live_http import APPROVER, VIEWER, live_api

# Chromium: a process of its own.
pytestmark = [
    pytest.mark.browser,
    pytest.mark.system,
    pytest.mark.skipif(CHROMIUM is None, reason=f"no chromium on PATH; {INSTALL_HINT}"),
]
playwright_api = pytest.importorskip("playwright.async_api", reason="playwright is a dev dependency")
expect = playwright_api.expect


async def _signed_in(browser, url: str, token: str, path: str):  # type: ignore[no-untyped-def]
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(TIMEOUT_MS)
    page = await context.new_page()
    await page.goto(f"{url}/login")
    await page.get_by_label("Token").fill(token)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page).to_have_url(re.compile(r"/inbox$"))
    await page.goto(f"{url}{path}")
    return page


async def test_a_person_watches_the_answer_written_and_approves_inline(skipping_env, ledger, task_queue):
    thread = f"page-{uuid.uuid4().hex[:8]}"
    agents = AgentClient(skipping_env.client, task_queue=task_queue)
    worker = new_worker(skipping_env.client, task_queue, ledger, agents=[SLOW_CHAT])
    async with worker, live_api(skipping_env.client, task_queue, [SLOW_CHAT]) as served:
        await agents.conversation(SLOW_CHAT, thread).send("hello")  # the conversation exists, one turn old
        async with playwright_api.async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
            try:
                page = await _signed_in(browser, served.url, APPROVER, f"/inbox/conversations/{thread}")
                chat = page.locator("#chat")
                await page.get_by_label("message").fill("story please")
                await page.get_by_role("button", name="Send").click()

                answer = chat.locator(".msg.assistant").first
                await expect(answer).to_have_text(re.compile(r"^Once0 word1"))
                seen_partial = await answer.text_content()
                await expect(answer).to_have_text(STORY)
                assert seen_partial and STORY.startswith(seen_partial) and seen_partial != STORY  # written as it came

                await page.get_by_label("message").fill("pay s-9")
                await page.get_by_role("button", name="Send").click()
                box = chat.locator(".msg.approval")
                await expect(box).to_contain_text('pay {"supplier":"s-9"} waits for approval')

                watcher = await _signed_in(browser, served.url, VIEWER, f"/inbox/conversations/{thread}")
                await expect(watcher.locator(".msg.approval")).to_contain_text("waits for approval")
                assert await watcher.locator(".msg.approval button").count() == 0  # a viewer decides nothing
                assert await watcher.get_by_label("message").count() == 0

                await box.get_by_role("button", name="Approve").click()
                await expect(box.locator("output")).to_have_text("approved by maria")
                await expect(chat.locator(".msg.assistant").last).to_have_text("Done: paid s-9 (turn 3)")
                await expect(watcher.locator(".msg.approval output")).to_have_text("approved by maria")
            finally:
                await browser.close()
        audit = (await served.client().get(f"/runs/{thread}~turn-3")).json()["audit"]
    assert [(a["outcome"], a["approver"]) for a in audit] == [("approved", "maria")]
