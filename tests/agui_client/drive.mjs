// Drives duragent's AG-UI endpoint with the official client, one step per argument, printing what it sees as
// JSON lines: every event as it arrives (with the time), then the client's messages and pending interrupts.
//   node drive.mjs URL TOKEN THREAD say:TEXT approve ...
import { HttpAgent } from "@ag-ui/client";

const [url, token, thread, ...steps] = process.argv.slice(2);
const agent = new HttpAgent({ url, headers: { Authorization: `Bearer ${token}` }, threadId: thread });
const out = (line) => process.stdout.write(JSON.stringify(line) + "\n");

async function run(parameters) {
  try {
    await agent.runAgent(parameters, {
      onEvent({ event }) {
        out({ kind: "event", at: Date.now(), event });
      },
    });
  } catch (error) {
    out({ kind: "error", message: String(error) });
  }
}

for (const step of steps) {
  if (step.startsWith("say:")) {
    agent.addMessage({ id: crypto.randomUUID(), role: "user", content: step.slice(4) });
    await run({});
  } else if (step === "approve") {
    const resume = agent.pendingInterrupts.map((interrupt) => ({
      interruptId: interrupt.id,
      status: "resolved",
      payload: { approved: true, argumentsHash: interrupt.metadata.argumentsHash },
    }));
    await run({ resume });
  }
  out({ kind: "step", step, messages: agent.messages, pendingInterrupts: agent.pendingInterrupts });
}
