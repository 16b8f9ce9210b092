"""What a person sees in Temporal's Web UI, checked in a real headless browser (Debian's chromium, driven by
Playwright): activity summaries, the run's static summary and details, its current details, and our search
attributes as a visibility filter.

The browser is never downloaded: without a `chromium` on PATH (or `CHROMIUM=/path`) this module is skipped.
`UPDATE_WEB_UI_SCREENSHOT=1` rewrites docs/web-ui.png (the picture in docs/web-ui.md and docs/cli.md) from the trip
run's page.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import struct
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
import pytest_asyncio

from duragent._client import AgentClient
from duragent._config.settings import ROOT, Settings
from duragent._connection import connect
from duragent._ops.devstack import devserver
from duragent._stores.ledger import EffectsLedger
from tests.conftest import agent_named, eventually, new_worker

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
INSTALL_HINT = (
    "the Web UI test drives Debian's chromium and never downloads a browser: "
    "`sudo apt-get install chromium` (or set CHROMIUM=/path/to/chromium)"
)
# Chromium, and a process of its own: a dev server with its Web UI.
pytestmark = [
    pytest.mark.browser,
    pytest.mark.system,
    pytest.mark.skipif(CHROMIUM is None, reason=f"no chromium on PATH; {INSTALL_HINT}"),
]
playwright_api = pytest.importorskip(
    "playwright.async_api", reason="playwright is a dev dependency: `make setup` installs it (no browser download)"
)
async_playwright = playwright_api.async_playwright
expect = playwright_api.expect

BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOT = ROOT / "docs" / "web-ui.png"
TIMEOUT_MS = 20_000
expect.set_options(timeout=TIMEOUT_MS)


@dataclass
class UiRuns:
    ui_url: str
    billing: str
    trip: str
    refund: str
    support: str  # delegated a refund to billing-desk: a child workflow

    def run_url(self, run_id: str) -> str:
        return f"{self.ui_url}/namespaces/default/workflows/{run_id}"

    @property
    def child(self) -> str:
        return f"{self.support}~2.1"


@pytest_asyncio.fixture(scope="module")
async def ui_runs(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[UiRuns]:
    """A dev server with its Web UI on free ports, a worker, a finished `billing`, `trip` and `support` run (with
    its child, `billing-desk`) and a `refund` run waiting for its approval."""
    tmp = tmp_path_factory.mktemp("web-ui")
    server = devserver.start_on_free_ports(tmp / "dev.db", ui=True, log=tmp / "server.log")
    ui_port = server.ui_port
    assert ui_port is not None
    try:
        await devserver.wait_until_serving(server.address)
        deadline = time.monotonic() + 30
        while not devserver.port_open("127.0.0.1", ui_port):
            assert time.monotonic() < deadline, "the Web UI did not open its port"
            await asyncio.sleep(0.2)
        settings = Settings(address=server.address, task_queue=f"tq-{uuid.uuid4().hex[:8]}", ledger_path=tmp / "l.db")
        client = await connect(settings)
        suffix = uuid.uuid4().hex[:6]
        runs = UiRuns(
            f"http://127.0.0.1:{ui_port}",
            f"billing-{suffix}",
            f"trip-{suffix}",
            f"refund-{suffix}",
            f"support-{suffix}",
        )
        async with new_worker(client, settings.task_queue, EffectsLedger(settings.ledger_path)):
            agents = AgentClient(client)
            for scenario, run_id in (("billing", runs.billing), ("trip", runs.trip), ("refund", runs.refund)):
                await agents.start(agent_named(scenario), run_id=run_id)
            support = await agents.start(agent_named("support"), run_id=runs.support)
            [refund] = await support.wait_for_approval()  # the billing desk's, approved through the support run
            await support.approve(refund.address, by="maria", arguments_hash=refund.arguments_hash)
            for run_id in (runs.billing, runs.trip, runs.support):
                await client.get_workflow_handle(run_id).result()

            async def indexed() -> bool:
                waiting = [w.id async for w in client.list_workflows('AgentStatus = "awaiting_approval"')]
                closed = [w.id async for w in client.list_workflows('ExecutionStatus = "Completed"')]
                done = [runs.billing, runs.trip, runs.support, runs.child]
                return waiting == [runs.refund] and sorted(closed) == sorted(done)

            await eventually(indexed, timeout=20, what="visibility to index the three runs")
            yield runs
    finally:
        server.stop()


@pytest_asyncio.fixture(scope="module")
async def browser(ui_runs: UiRuns) -> AsyncIterator[object]:
    assert CHROMIUM is not None
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
        try:
            yield chromium
        finally:
            await chromium.close()


async def new_page(browser, **context_options):  # type: ignore[no-untyped-def]
    context = await browser.new_context(**({"viewport": {"width": 1280, "height": 800}} | context_options))
    context.set_default_timeout(TIMEOUT_MS)
    return await context.new_page()


async def test_run_page_shows_activity_summaries_static_summary_and_details(ui_runs, browser):
    page = await new_page(browser)
    try:
        await page.goto(ui_runs.run_url(ui_runs.billing))
        # The default view is the timeline: each activity is labelled `type • summary`.
        for label in (
            "call_model • model call 1",
            "run_tool • charge(invoice=inv-9, key=inv-9:attempt-1)",
            "call_model • model call 2",
        ):
            await expect(page.get_by_text(label, exact=True)).to_be_visible()

        # The event history shows the same summary on each Activity Task Scheduled event.
        await page.get_by_role("tab", name="Event History").click()
        await expect(page.get_by_text("charge(invoice=inv-9, key=inv-9:attempt-1)", exact=True)).to_be_visible()
        await expect(page.get_by_text("model call 1", exact=True)).to_be_visible()

        # Static summary and details (set at start) and current details (set by the workflow) are rendered
        # as markdown, each in its own frame, under "User Metadata".
        await page.get_by_role("tab", name="User Metadata").click()
        summary = page.frame_locator("#user-metadata-summary")
        await expect(summary.get_by_text("billing: Settle invoice inv-9", exact=True)).to_be_visible()
        details = page.frame_locator("#user-metadata-details")
        await expect(details.locator("body")).to_contain_text("agent billing — Charge invoice inv-9 once")
        await expect(details.locator("strong")).to_have_text("billing")
        current = page.frame_locator("#user-metadata-current-details")
        await expect(current.locator("body")).to_contain_text("completed — step 2: finished: answered")
        await expect(current.locator("body")).to_contain_text(re.compile(r"tokens [1-9]\d*\+[1-9]\d*, cost \$0\.\d{6}"))

        await page.get_by_role("tab", name="Search Attributes").click()
        for pair in ('"AgentStatus": "completed"', '"AgentName": "billing"', '"AgentStop": "answered"'):
            await expect(page.locator("main")).to_contain_text(pair)
    finally:
        await page.context.close()


async def test_trip_page_shows_the_compensations_and_the_screenshot(ui_runs, browser, tmp_path):
    # 1280x800 pixels of a 75 % zoomed page: the header, the tabs and the whole timeline fit.
    zoom = 0.75
    page = await new_page(
        browser, viewport={"width": round(1280 / zoom), "height": round(800 / zoom)}, device_scale_factor=zoom
    )
    try:
        await page.goto(ui_runs.run_url(ui_runs.trip))
        for label in (
            "run_tool • book_flight(trip=trip-42)",
            "run_tool • book_hotel(trip=trip-42)",
            "run_tool • book_car(trip=trip-42)",
            "compensate • undo book_hotel(trip=trip-42)",
            "compensate • undo book_flight(trip=trip-42)",
        ):
            await expect(page.get_by_text(label, exact=True)).to_be_visible()
        await expect(page.get_by_role("heading", name=ui_runs.trip)).to_be_visible()
        shot = tmp_path / "web-ui.png"
        await page.screenshot(path=str(shot))
    finally:
        await page.context.close()
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (1280, 800)
    assert len(data) < 400_000
    if os.environ.get("UPDATE_WEB_UI_SCREENSHOT") or not SCREENSHOT.exists():
        SCREENSHOT.parent.mkdir(exist_ok=True)
        shutil.copyfile(shot, SCREENSHOT)


async def test_search_attribute_filter_lists_only_the_waiting_run(ui_runs, browser):
    page = await new_page(browser)
    try:
        # Unfiltered, all three runs are listed: the control for the filtered view below.
        await page.goto(f"{ui_runs.ui_url}/namespaces/default/workflows")
        for run_id in (ui_runs.billing, ui_runs.trip, ui_runs.refund):
            await expect(page.get_by_role("link", name=run_id, exact=True)).to_be_visible()

        await page.goto(f"{ui_runs.ui_url}/namespaces/default/workflows?query=AgentStatus%3D%22awaiting_approval%22")
        await expect(page.get_by_text('AgentStatus = "awaiting_approval"')).to_be_visible()
        await expect(page.get_by_role("link", name=ui_runs.refund, exact=True)).to_be_visible()
        await expect(page.get_by_role("link", name=ui_runs.billing, exact=True)).to_have_count(0)
        await expect(page.get_by_role("link", name=ui_runs.trip, exact=True)).to_have_count(0)

        # The run's own page says what it waits for, and until when.
        await page.goto(ui_runs.run_url(ui_runs.refund))
        await expect(page.get_by_text("approval deadline for refund", exact=True)).to_be_visible()
        await page.get_by_role("tab", name="User Metadata").click()
        current = page.frame_locator("#user-metadata-current-details")
        await expect(current.locator("body")).to_contain_text(
            "awaiting_approval — step 1: awaiting approval of refund(order_id=4471) until "
        )
    finally:
        await page.context.close()


async def test_a_delegating_run_links_its_child_workflow(ui_runs, browser):
    """Temporal links child workflows from their parent: the support run's Relationships tab shows the
    billing desk's run, and following it opens that run, whose page names its parent."""
    page = await new_page(browser)
    try:
        await page.goto(ui_runs.run_url(ui_runs.support))
        await page.get_by_role("tab", name=re.compile(r"^Relationships 1")).click()
        await page.get_by_role("link", name=ui_runs.child, exact=True).first.click()
        await expect(page.get_by_role("heading", name=ui_runs.child)).to_be_visible()
        await page.get_by_role("tab", name=re.compile(r"^Relationships")).click()
        await expect(page.get_by_role("link", name=ui_runs.support, exact=True).first).to_be_visible()
    finally:
        await page.context.close()
