// Drives hookwire's AG-UI wire with `@ag-ui/client`'s stock HttpAgent, as a CopilotKit-style
// application would; every event is also parsed with `@ag-ui/core`'s schema.
// `node ag-ui-client.mjs <scenario>`; HOOKWIRE_URL, HOOKWIRE_TOKEN. Prints what the
// application saw (events, messages, state, the runs' outcomes) as JSON.
import { HttpAgent } from "@ag-ui/client";
import { EventSchemas } from "@ag-ui/core/schemas";
import { runScenario } from "./scenario.mjs";

const location = {
  name: "get_location",
  description: "Where the person is",
  parameters: { type: "object", properties: {} },
};

function agent() {
  return new HttpAgent({
    url: `${process.env.HOOKWIRE_URL}/ag-ui`,
    headers: process.env.HOOKWIRE_TOKEN ? { authorization: `Bearer ${process.env.HOOKWIRE_TOKEN}` } : {},
  });
}

const runs = [];

/** One run: its events (each checked against the schema), its last event, or what it threw. */
async function run(a, parameters = {}) {
  const seen = { events: [], finished: null, error: null, thrown: null };
  try {
    await a.runAgent(parameters, {
      onEvent({ event }) {
        const parsed = EventSchemas.safeParse(event);
        if (!parsed.success) throw new Error(`an event the schema refuses: ${JSON.stringify(event)}`);
        seen.events.push(event.type);
      },
      onRunFinishedEvent({ event }) {
        seen.finished = event;
      },
      onRunErrorEvent({ event }) {
        seen.error = event;
      },
    });
  } catch (error) {
    seen.thrown = String(error?.message ?? error);
  }
  runs.push(seen);
  return seen;
}

function user(a, content) {
  a.addMessage({ id: `u${a.messages.length}`, role: "user", content });
}

function report(a) {
  return { runs, messages: a.messages, state: a.state };
}

const scenarios = {
  async text() {
    const a = agent();
    user(a, "hello");
    await run(a);
    return report(a);
  },
  async twoTurns() {
    const a = agent();
    user(a, "one");
    await run(a);
    user(a, "two");
    await run(a);
    return report(a);
  },
  async clientTool() {
    const a = agent();
    user(a, "where am I?");
    const first = await run(a, { tools: [location] });
    for (const id of first.finished?.outcome?.pendingToolCallIds ?? []) {
      a.addMessage({ id: `t-${id}`, role: "tool", toolCallId: id, content: "Paris" });
    }
    await run(a, { tools: [location] });
    return report(a);
  },
  async approve() {
    return approval({ approved: true });
  },
  async deny() {
    return approval({ approved: false, reason: "not that file" });
  },
  async abort() {
    const a = agent();
    user(a, "go on");
    const running = run(a, {});
    for (let i = 0; i < 1500 && !a.messages.some((m) => m.role === "assistant" && m.content); i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    a.abortRun();
    await running;
    return report(a);
  },
};

async function approval(payload) {
  const a = agent();
  user(a, "read a.txt");
  const first = await run(a);
  const interrupts = first.finished?.outcome?.interrupts ?? [];
  await run(a, {
    resume: interrupts.map((interrupt) => ({ interruptId: interrupt.id, status: "resolved", payload })),
  });
  return report(a);
}

await runScenario(scenarios);
