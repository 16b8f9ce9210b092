"""The demo's delegation part: `support` hands a refund to `billing-desk` (examples/support.py). The refund
waits for a human; the demo finds that approval among the support run's pending approvals (the path
support → billing-desk), approves it there, and shows the one budget: the support run's consumption
includes its child's. In the Web UI the billing desk's run is a child workflow, linked from the support run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from durable_agents.client import AgentClient

if TYPE_CHECKING:  # the demo imports this part; this part only needs the demo's reporting
    from ops.demo.scripted import Demo


async def support_with_delegation(demo: Demo, client: AgentClient) -> None:
    say = demo.say
    say("\n[support] hands the refund to the billing desk's agent: a child workflow, one budget, one approvals list")
    handle = await client.start("support", run_id=f"demo-support-{demo.stamp}")
    [waiting] = await handle.wait_for_approval(timeout=60)
    say(f"  the child {waiting.run_id} waits: {waiting.tool}({waiting.arguments})")
    say(f"  listed in the support run's pending approvals, path {' → '.join(waiting.path)}")
    say("  approving it through the support run as 'demo-approver'; the decision reaches the billing desk's run")
    await handle.approve(waiting.address, by="demo-approver", reason="demo", arguments_hash=waiting.arguments_hash)
    result = await demo.report(handle, note=f"delegated to billing-desk: run {waiting.run_id}")
    child = await client.handle(waiting.run_id).result()
    say(
        f"  one budget: the billing desk used {child.step_count} of the support run's {result.step_count} steps "
        f"and {child.input_tokens + child.output_tokens} of its {result.input_tokens + result.output_tokens} tokens"
    )
    say(f"  the child in the Web UI (linked from the support run): {client.run_url(waiting.run_id)}")
