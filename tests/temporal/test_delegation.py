"""Agents that delegate. A desk (root) hands work to accounts (child), which hands an entry to a
clerk or a payer (grandchild) — tests/support/delegation_agents.py. On Temporal each delegation is a child workflow
(the real time-skipping server); in-process and in the checkpoint runner it runs inline. The effects ledger
is the judge of what was done, undone, and in which order."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.common import WorkflowIDReusePolicy
from temporalio.worker import Worker

from agentic import Agent, Budget, FakeModel, Registry, Stop, ToolStatus, Usage, tool_call
from agentic.agent_set import AgentSet
from agentic.delegation import DelegateRef, child_run_id, reserve
from duragent._activities.inputs import AgentResult, ContinueAsNewPolicy, EngineOptions
from duragent._baseline import jobs
from duragent._baseline.errors import RunNotResumable
from duragent._baseline.options import RunOptions
from duragent._baseline.runner import transcript
from duragent._baseline.store import Store
from duragent._client import AgentClient, RunHandle
from duragent._stores.ledger import Effect, EffectsLedger
from duragent._workflows import search_attributes as sa
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput
from examples.options import DemoDeps
from tests.conftest import TEST_AGENTS, new_worker, transcripts_next_to
from tests.support import delegation_agents
from tests.support.baseline_helpers import Job, eventually
from tests.support.docs import code_block_after
from tests.support.earlier_parent import EarlierParent

AGENTS: list[Agent] = [*TEST_AGENTS, *delegation_agents.agents]


def agent(name: str) -> Agent:
    return next(a for a in AGENTS if a.name == name)


def worker(env: Any, task_queue: str, ledger: EffectsLedger, **kwargs: Any) -> Any:
    return new_worker(env.client, task_queue, ledger, agents=AGENTS, **kwargs)


def run_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def forward(effects: list[Effect]) -> list[tuple[str, str]]:
    return [(e.run_id, e.tool) for e in effects if e.compensates is None]


def undone(effects: list[Effect]) -> list[tuple[str, str]]:
    return [(e.run_id, e.tool) for e in effects if e.compensates is not None]


async def child_result(agents: AgentClient, run: str) -> AgentResult:
    return await agents.handle(run).result()


# -- the rules, as data ----------------------------------------------------------------------------------


def test_the_reservation_is_what_the_parent_has_left_capped_per_delegation():
    budget = Budget(max_steps=10, max_output_tokens=100, max_cost=1.0)
    used = Usage(steps=4, input_tokens=50, output_tokens=30, cost=0.25)
    reserved = reserve(budget, used, Budget(max_steps=3))
    assert reserved == Budget(max_steps=3, max_output_tokens=70, max_cost=0.75)  # unlimited input stays so
    assert reserve(budget, used, Budget()) == Budget(max_steps=6, max_output_tokens=70, max_cost=0.75)
    assert reserve(budget, Usage(steps=10), Budget()) == "no steps left"
    assert reserve(budget, Usage(output_tokens=100), Budget()) == "no output tokens left"
    assert reserve(Budget(max_cost=0.5), Usage(cost=0.5), Budget()) == "no cost left"


def test_a_childs_run_id_is_derived_from_the_parents_key_for_the_call():
    assert child_run_id("support-1a2b", "2.1") == "support-1a2b~2.1"
    assert child_run_id(child_run_id("r", "2.1"), "1.1") == "r~2.1~1.1"  # the path, readable in the id


def test_the_recorded_spec_says_the_tool_delegates_and_to_which_agent():
    spec = agent("d-manager").spec()
    assert spec.tools["spender"].delegate == DelegateRef(agent="d-spender", limit=Budget(max_steps=2))
    assert spec.tools["notify"].delegate is None
    assert "delegate" not in spec.tools["notify"].model_dump(mode="json")  # own tools serialise as before
    assert spec.tools["spender"].parameters["required"] == ["task"]


def test_a_worker_not_serving_a_sub_agent_is_a_configuration_error(tmp_path: Path):
    with pytest.raises(
        ValueError, match="agent 'd-desk' delegates to 'd-accounts' \\(tool 'accounts'\\), which is not"
    ):
        AgentSet([agent("d-desk"), agent("d-clerk")], where="on task queue 'q'")
    AgentSet([agent("d-desk"), agent("d-accounts"), agent("d-clerk")])  # the whole tree: fine


def test_as_tool_needs_a_named_agent_and_a_valid_tool_name():
    with pytest.raises(ValueError, match="needs a name"):
        Agent(FakeModel(["x"])).as_tool()
    with pytest.raises(ValueError, match="tool name 'a b'"):
        agent("d-clerk").as_tool("a b")
    with pytest.raises(ValueError, match="invalid options"):
        agent("d-clerk").as_tool(options={"records": 0})


def test_a_bad_task_is_answered_as_invalid_arguments_and_starts_nothing():
    parent = Agent(
        FakeModel([tool_call("clerk", {"what": "x"}), "gave up on the clerk"]),
        Registry([agent("d-clerk").as_tool("clerk")]),
        name="p",
    )
    run = parent.run("go", run_id="bad")
    assert run.records[0].status is ToolStatus.INVALID_ARGUMENTS
    assert '"task": a non-empty string' in run.records[0].content
    assert run.children == {} and run.usage.steps == 2


# -- Temporal (time-skipping server) ---------------------------------------------------------------------


async def test_a_two_level_delegation_is_answered_and_charged_to_the_root(skipping_env, ledger, task_queue):
    root = run_id("desk")
    async with worker(skipping_env, task_queue, ledger):
        agents = AgentClient(skipping_env.client, task_queue=task_queue)
        handle = await agents.start("d-desk", run_id=root)
        result = await handle.result()
        child = await child_result(agents, f"{root}~2.1")
        grandchild = await child_result(agents, f"{root}~2.1~2.1")
        description = await handle.describe()
        history = await handle.workflow.fetch_history()

    assert result.status == "completed" and result.output == "Desk: Accounts: Clerk: posted E-1."
    assert (child.output, grandchild.output) == ("Accounts: Clerk: posted E-1.", "Clerk: posted E-1.")
    # One budget: the root's consumption is its own three steps plus its child's, which includes the grandchild's.
    assert grandchild.usage.steps == 2 and child.usage.steps == 3 + 2 and result.usage.steps == 3 + 5
    assert result.records[1].delegation is not None and result.records[1].delegation.usage == child.usage
    own = result.usage.input_tokens - child.usage.input_tokens
    assert own > 0 and result.input_tokens == own + child.usage.input_tokens
    attributes = description.typed_search_attributes
    assert attributes.get(sa.AGENT_TOKENS) == result.input_tokens + result.output_tokens
    assert attributes.get(sa.AGENT_COST) == result.cost
    # As soon as the child ends (before the root's next step), the root shows its tokens, the child's included.
    events = list(history.events)
    ended = next(i for i, e in enumerate(events) if e.HasField("child_workflow_execution_completed_event_attributes"))
    next_step = next(
        i for i, e in enumerate(events) if i > ended and e.HasField("activity_task_scheduled_event_attributes")
    )
    shown = next(
        e.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields
        for e in events[ended:next_step]
        if e.HasField("upsert_workflow_search_attributes_event_attributes")
    )  # (the run's last upsert shows them too: it must not be the one found)
    assert json.loads(shown["AgentTokens"].data) > child.usage.input_tokens + child.usage.output_tokens
    # Each effect once, under a key of the run that made it: the child's id derives from its parent's key.
    assert [(e.key, e.tool) for e in ledger.effects()] == [
        (f"{root}:1.1", "open_ticket"),
        (f"{root}~2.1:1.1", "reserve_funds"),
        (f"{root}~2.1~2.1:1.1", "post_entry"),
    ]
    # The child ran with its reservation as its whole budget: what the desk had left (12 - 2).
    assert child.records[1].delegation is not None and child.records[1].delegation.run_id == f"{root}~2.1~2.1"


async def test_a_child_that_exhausts_its_reservation_is_undone_and_the_parent_goes_on(skipping_env, ledger, task_queue):
    async with worker(skipping_env, task_queue, ledger):
        agents = AgentClient(skipping_env.client, task_queue=task_queue)
        handle = await agents.start("d-manager", run_id=run_id("manager"))
        result = await handle.result()
        child = await child_result(agents, f"{handle.run_id}~1.1")

    assert child.stop is Stop.STEP_BUDGET and child.status == "compensated"
    assert child.usage.steps == 2  # the per-delegation cap: as_tool(max_steps=2)
    told = result.records[0]
    assert told.status is ToolStatus.ERROR
    assert told.content.startswith("Error: spender stopped before finishing: it used up the budget reserved for it")
    assert result.stop is Stop.ANSWERED and result.output == "Manager: I went on without the spender."
    assert result.usage.steps == 3 + 2
    effects = ledger.effects()
    assert forward(effects) == [(child.run_id, "post_entry")] * 2 + [(handle.run_id, "notify")]
    assert undone(effects) == [(child.run_id, "reverse_entry")] * 2  # the child undid its own, newest first
    assert [e.compensates for e in effects if e.compensates] == [f"{child.run_id}:2.1", f"{child.run_id}:1.1"]


async def test_a_child_that_fails_is_reported_and_its_consumption_still_charged(skipping_env, ledger, task_queue):
    """The trip child cannot book the car, and undoing its bookings keeps failing: it fails
    (`CompensationFailed`). Its parent is told why, is charged what the child consumed, and records the
    effects left undone as not compensable."""
    async with worker(skipping_env, task_queue, ledger):
        agents = AgentClient(skipping_env.client, task_queue=task_queue)
        result = await (await agents.start("d-travel", run_id=run_id("travel"))).result()
    told = result.records[0]
    assert told.status is ToolStatus.ERROR
    assert told.content.startswith("Error: trip failed: CompensationFailed: compensation of book_hotel kept failing")
    assert told.delegation is not None and told.delegation.usage.steps == 3  # flight, hotel, the failed car
    assert told.delegation.not_compensable == ["book_hotel", "book_flight"]
    assert result.stop is Stop.ANSWERED and result.usage.steps == 2 + 3


async def test_the_roots_budget_bounds_the_whole_tree(skipping_env, ledger, task_queue):
    """The root has 4 steps; after its first, the child gets the 3 left — never more — and the root, with
    nothing left, stops before another model call: 4 steps in all."""
    async with worker(skipping_env, task_queue, ledger):
        agents = AgentClient(skipping_env.client, task_queue=task_queue)
        handle = await agents.start("d-manager-tight", run_id=run_id("tight"))
        result = await handle.result()
        child = await child_result(agents, f"{handle.run_id}~1.1")
        history = await agents.handle(child.run_id).workflow.fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    assert '"max_steps":3' in started.input.payloads[0].data.decode()  # its whole budget: the reservation
    assert child.stop is Stop.STEP_BUDGET and child.usage.steps == 3
    assert result.stop is Stop.STEP_BUDGET and result.usage.steps == 4 == agent("d-manager-tight").budget.max_steps


async def wait_for_pending(handle: RunHandle) -> list[Any]:
    return await handle.wait_for_approval(timeout=60)


async def test_a_grandchilds_approval_through_the_roots_pending_list(skipping_env, ledger, task_queue):
    root = run_id("gated")
    grandchild = f"{root}~2.1~2.1"
    async with worker(skipping_env, task_queue, ledger):
        agents = AgentClient(skipping_env.client, task_queue=task_queue)
        handle = await agents.start("d-desk-gated", run_id=root)
        [waiting] = await wait_for_pending(handle)
        assert (waiting.run_id, waiting.call_id, waiting.tool) == (grandchild, "2.1", "pay")
        assert waiting.root_run_id == root and waiting.path == [root, f"{root}~2.1", grandchild]
        assert waiting.deadline - waiting.requested_at == timedelta(hours=2)  # the grandchild's own expiry rule
        assert await agents.handle(grandchild).pending() == [waiting]  # the same request, seen from its own run
        outcome = await handle.approve(waiting.address, by="maria", arguments_hash=waiting.arguments_hash)
        assert (outcome.run_id, outcome.decision, outcome.via) == (grandchild, "approved", "update")
        result = await handle.result()
        paid = await child_result(agents, grandchild)

    assert result.output == "Desk: Accounts: Payer: paid acme."
    assert [(e.event, e.approver) for e in paid.audit] == [("approved", "maria")]  # decided in the grandchild
    assert result.audit == []
    assert [e.key for e in ledger.effects() if e.tool == "pay"] == [f"{grandchild}:2.1"]


async def test_a_child_that_answered_is_undone_as_a_unit_at_the_position_of_its_call(skipping_env, ledger, task_queue):
    root = run_id("unit")
    child, grandchild = f"{root}~2.1", f"{root}~2.1~2.1"
    async with worker(skipping_env, task_queue, ledger):
        agents = AgentClient(skipping_env.client, task_queue=task_queue)
        result = await (await agents.start("d-desk-gives-up", run_id=root)).result()
    assert result.stop is Stop.GAVE_UP and result.status == "compensated"
    effects = ledger.effects()
    assert undone(effects) == [
        (root, "retract_notice"),  # the desk's newest effect
        (grandchild, "reverse_entry"),  # then the child, as a unit: its newest (its own child's) first
        (child, "release_funds"),
        (root, "close_ticket"),  # then the desk's effect from before the delegation
    ]
    by_key = {e.key: e for e in effects}
    assert all(by_key[e.compensates].run_id == e.run_id for e in effects if e.compensates)
    assert [c.tool for c in result.compensations] == ["notify", "post_entry", "reserve_funds", "open_ticket"]


async def test_a_child_already_started_under_its_id_is_attached_to_not_duplicated(skipping_env, ledger, task_queue):
    """The parent's id for the call is taken by the child it started before (a reset parent, say): the
    parent waits for that run's result instead of starting a second one."""
    root = run_id("attach")
    child = f"{root}~2.1"
    earlier = AgentInput(agent="d-accounts", task="Refund 2500 to acme.")
    async with (
        worker(skipping_env, task_queue, ledger),
        Worker(skipping_env.client, task_queue=f"{task_queue}-earlier", workflows=[EarlierParent]),
    ):
        # Who started the child is the server's record (its parent link), never a memo anyone can write.
        await skipping_env.client.execute_workflow(
            EarlierParent.run, args=[child, task_queue, earlier], id=root, task_queue=f"{task_queue}-earlier"
        )
        await skipping_env.client.start_workflow(
            AgentWorkflow.run,
            AgentInput(agent="d-desk"),
            id=root,
            task_queue=task_queue,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,  # a reset parent's next run, in effect
        )
        agents = AgentClient(skipping_env.client, task_queue=task_queue)
        result = await agents.handle(root).result()
        history = await agents.handle(root).workflow.fetch_history()
    assert result.output == "Desk: Accounts: Clerk: posted E-1."
    assert [e.tool for e in ledger.effects(child)] == ["reserve_funds"]  # one child, one effect
    attached = [e for e in history.events if e.HasField("activity_task_scheduled_event_attributes")]
    assert "attach_delegate" in [e.activity_task_scheduled_event_attributes.activity_type.name for e in attached]


async def test_a_run_that_took_the_childs_id_is_not_adopted(skipping_env, ledger, task_queue):
    root = run_id("taken")
    async with worker(skipping_env, task_queue, ledger):
        await skipping_env.client.start_workflow(
            AgentWorkflow.run, AgentInput(agent="d-clerk"), id=f"{root}~2.1", task_queue=task_queue
        )
        agents = AgentClient(skipping_env.client, task_queue=task_queue)
        result = await (await agents.start("d-desk", run_id=root)).result()
    told = result.records[1]
    assert told.status is ToolStatus.ERROR and "DelegateIdTaken: the run id" in told.content
    assert "is taken by a run that call 2.1" in told.content
    assert result.output is not None and result.output.startswith("Desk: Error: accounts failed")


# -- one script, three runners ---------------------------------------------------------------------------


def in_process(name: str, root: str, ledger: EffectsLedger) -> dict[str, Any]:
    for each in delegation_agents.agents:  # in-process, every agent of the tree records into this ledger
        each.deps = DemoDeps(ledger)
    run = agent(name).run(run_id=root)
    found: dict[str, Any] = {root: run.messages}

    def collect(children: dict[str, Any]) -> None:
        for child_id, child in children.items():
            found[child_id] = child.messages
            collect(child.children)

    collect(run.children)
    return found


def checkpointed(name: str, root: str, tmp_path: Path, ledger: EffectsLedger, runs: list[str]) -> dict[str, Any]:
    store = Store(tmp_path / "baseline.db")
    agents = AgentSet(AGENTS, DemoDeps(ledger))
    jobs.start(store, agents, root, name, RunOptions())
    with pytest.raises(RunNotResumable, match=r"resume .*, which resumes it"):
        jobs.resume(store, agents, runs[-1])  # a child answers to its parent, never on its own
    return {r: transcript(store, agents, r).messages for r in runs}


@pytest.mark.parametrize("name", ["d-desk", "d-manager", "d-desk-gives-up"])
async def test_the_same_script_gives_the_same_transcripts_in_all_three_runners(
    skipping_env, task_queue, tmp_path, name
):
    root = f"same-{name}-{uuid.uuid4().hex[:6]}"
    local = in_process(name, root, EffectsLedger(tmp_path / "in-process.db"))
    runs = sorted(local)
    assert len(runs) >= 2
    checkpoint = checkpointed(name, root, tmp_path, EffectsLedger(tmp_path / "checkpoint.db"), runs)
    ledger = EffectsLedger(tmp_path / "temporal.db")
    async with worker(skipping_env, task_queue, ledger):
        agents = AgentClient(skipping_env.client, task_queue=task_queue)
        await (await agents.start(name, run_id=root)).result()
        durable = {r: (await child_result(agents, r)).transcript_messages(transcripts_next_to(ledger)) for r in runs}
    assert durable == checkpoint == local
    keys = [[(e.key, e.tool) for e in EffectsLedger(tmp_path / f).effects()] for f in ("checkpoint.db", "temporal.db")]
    assert keys[0] == keys[1]  # and the same effects, in the same order, under the same keys


async def test_a_tree_whose_runs_continue_as_new_ends_as_one_that_never_did(skipping_env, ledger, task_queue):
    """Every run of the tree continues as new every few steps (the worker's policy): the approval still
    names its path and is approved through the root, and the tree ends with the answer, consumption and
    effects of one that never continued (test_a_grandchilds_approval_through_the_roots_pending_list)."""
    root = run_id("continued")
    often = EngineOptions(continue_as_new=ContinueAsNewPolicy(max_history_events=20))
    async with worker(skipping_env, task_queue, ledger, engine=often):
        agents = AgentClient(skipping_env.client, task_queue=task_queue)
        handle = await agents.start("d-desk-gated", run_id=root)
        [waiting] = await wait_for_pending(handle)
        assert waiting.path == [root, f"{root}~2.1", f"{root}~2.1~2.1"]
        await handle.approve(waiting.address, by="maria", arguments_hash=waiting.arguments_hash)
        result = await handle.result()
        child = await child_result(agents, f"{root}~2.1")
        grandchild = await child_result(agents, f"{root}~2.1~2.1")
    assert min(result.continued, child.continued, grandchild.continued) >= 1
    assert result.output == "Desk: Accounts: Payer: paid acme."
    assert result.usage.steps == 3 + 3 + 3  # each run's own steps, charged up once, across continuations
    assert [e.tool for e in ledger.effects()] == ["open_ticket", "reserve_funds", "post_entry", "pay"]


def test_the_documented_delegation_lines_build_the_agent_they_describe():
    from examples import support

    code = code_block_after("docs/agents.md", "## Agents that delegate")
    namespace: dict[str, Any] = {
        "Agent": Agent,
        "Budget": Budget,
        "Registry": Registry,
        "billing_desk": support.billing_desk,
        "open_ticket": support.open_ticket,
        "model": support.agent.model,
    }
    exec(code, namespace)
    spec = namespace["support"].spec()
    assert spec.tools["billing"] == support.agent.spec().tools["billing"]  # the example's own tool
    assert spec.tools["billing"].delegate == DelegateRef(agent="billing-desk", limit=Budget(max_steps=3))


@pytest.mark.system
def test_the_checkpoint_runner_resumes_a_child_through_its_parent_after_kill_9(tmp_path: Path):
    """A `job run` process dies while the parent's child runs inline; `job recover` resumes the parent only
    (a child answers to its parent), which resumes the child from its own steps: one child, each effect once."""
    job = Job(tmp_path)
    modules = ["--agents", "examples", "--agents", "tests.support.delegation_agents"]
    try:
        worker = job.spawn("run", "--id", "p", "--agent", "d-slow-parent", "--lease-seconds", "1", *modules)
        eventually(lambda: len(job.effects("p~2.1")) >= 1, timeout=120, what="the child's first record")
        job.kill(worker)
        at_kill = EffectsLedger(job.ledger_path).effects()
        assert len(job.effects("p~2.1")) < 3, "the kill must land while the child runs"
        job.wait_lease_expired("p")
        job.wait_lease_expired("p~2.1")
        recovered = job.run("recover", "--json", *modules)
        assert recovered.returncode == 0, recovered.stderr
        assert [r["run_id"] for r in json.loads(recovered.stdout)["resumed"]] == ["p"]
        status, child = job.status("p"), job.status("p~2.1")
    finally:
        job.close()
    assert (status["status"], status["output"]) == ("completed", "Parent: Migrated 3 records.")
    assert child["status"] == "completed" and child["attempts"] == 2  # resumed once, by its parent
    effects = EffectsLedger(job.ledger_path).effects()
    assert [(e.run_id, e.tool) for e in effects] == [("p", "open_ticket")] + [("p~2.1", "migrate_record")] * 3
    assert [e.args["record"] for e in effects[1:]] == ["rec-1", "rec-2", "rec-3"]
    assert effects[: len(at_kill)] == at_kill
    assert status["consumption"]["steps"] == 3 + 4  # the child's steps charged once, in the parent's row
