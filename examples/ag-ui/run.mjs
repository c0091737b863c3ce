// A chat turn with AG-UI's stock HttpAgent against hookwire's POST /ag-ui (docs/frontends.md):
// `node run.mjs "read a.txt"`. Prints the answer as it streams, the tool calls hookwire runs and
// its `hookwire.*` custom events; a call that needs approval ends the run in an interrupt, asked
// about on stdin (y/n) and answered by the next run's `resume` entries.
import { createInterface } from "node:readline/promises";
import { HttpAgent } from "@ag-ui/client";

// The one line that points the agent at hookwire.
const agent = new HttpAgent({ url: process.env.HOOKWIRE_URL ?? "http://127.0.0.1:8080/ag-ui" });

const print = (text) => process.stdout.write(text);
const subscriber = {
  onTextMessageContentEvent: ({ event }) => print(event.delta),
  onTextMessageEndEvent: () => print("\n"),
  onToolCallStartEvent: ({ event }) => print(`[tool] ${event.toolCallName}(`),
  onToolCallArgsEvent: ({ event }) => print(event.delta),
  onToolCallEndEvent: () => print(")\n"),
  onToolCallResultEvent: ({ event }) => print(`[result] ${event.content}\n`),
  onCustomEvent: ({ event }) => print(`[${event.name}] ${JSON.stringify(event.value)}\n`),
  onRunErrorEvent: ({ event }) => print(`[error] ${event.message}\n`),
};

agent.addMessage({ id: "u1", role: "user", content: process.argv.slice(2).join(" ") || "Hello!" });
let parameters = {};
for (;;) {
  let outcome;
  await agent.runAgent(parameters, { ...subscriber, onRunFinishedEvent: ({ event }) => void (outcome = event.outcome) });
  if (outcome?.type !== "interrupt") break;
  // hookwire asks before a call that needs approval; the sealed state rides in agent.state.
  const stdin = createInterface({ input: process.stdin, output: process.stdout });
  const resume = [];
  for (const interrupt of outcome.interrupts) {
    const answer = await stdin.question(`${interrupt.message ?? "Run this tool call?"} [y/n] `);
    resume.push({ interruptId: interrupt.id, status: "resolved", payload: { approved: /^y/i.test(answer.trim()) } });
  }
  stdin.close();
  parameters = { resume };
}
