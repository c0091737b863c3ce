// Checks a stream of AG-UI events the way an AG-UI 1.0 client takes it.
//
// Reads a JSON array of events on stdin (one run, as hookwire's AG-UI encoder writes them) and
// puts them through the stages @ag-ui/client's HttpAgent runs on every incoming event:
//   1. each event parsed by @ag-ui/core's EventSchemas (the zod union of the 1.0 schema);
//   2. enforceEvents: unknown event types are dropped and unknown fields stripped, each with a
//      warning, which this script counts as a failure (hookwire must send only what 1.0 says);
//   3. transformChunks, then verifyEvents: the ordering rules (RUN_STARTED first, text and
//      tool-call content only between their START and END, steps finished by name, nothing
//      open at RUN_FINISHED, nothing after the terminal event).
// Exits 0 and prints "ok N events" when the stream passes; exits 1 with the reason otherwise.
//
// Given `{"input": RunAgentInput, "events": [...]}` instead of an array, it also applies the
// events to the input's messages and state as the client does (defaultApplyEvents) and prints
// `{"messages": [...], "state": …}`: what the client sends with its next run.
// Used by src/server/agui/tests/conformance.rs (`npm ci` in this folder first).

import { EventSchemas } from "@ag-ui/core/schemas";
import { defaultApplyEvents, enforceEvents, transformChunks, verifyEvents } from "@ag-ui/client";
import { from, lastValueFrom, toArray } from "rxjs";

const warnings = [];
console.warn = (...args) => warnings.push(args.map(String).join(" "));

function fail(reason) {
  process.stderr.write(`agui-verify: ${reason}\n`);
  process.exit(1);
}

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

const text = await readStdin();
let events;
let input;
try {
  events = JSON.parse(text);
} catch (error) {
  fail(`stdin is not JSON: ${error.message}`);
}
if (!Array.isArray(events) && events !== null && typeof events === "object") {
  input = events.input;
  events = events.events;
}
if (!Array.isArray(events)) fail("stdin must be a JSON array of events, or {input, events}");

events.forEach((event, index) => {
  const parsed = EventSchemas.safeParse(event);
  if (!parsed.success) {
    fail(`event ${index} (${event?.type}) does not fit the 1.0 schema: ${JSON.stringify(parsed.error.issues)}`);
  }
});

let passed;
try {
  passed = await lastValueFrom(
    from(events).pipe(enforceEvents(), transformChunks(), verifyEvents(), toArray()),
  );
} catch (error) {
  fail(`the client refuses the stream: ${error.message}`);
}
if (warnings.length > 0) fail(`the client warned: ${warnings.join(" | ")}`);
if (passed.length !== events.length) {
  fail(`${events.length} events went in, ${passed.length} came out`);
}
const last = passed[passed.length - 1]?.type;
if (last !== "RUN_FINISHED" && last !== "RUN_ERROR") {
  fail(`the stream ends with ${last}, not RUN_FINISHED or RUN_ERROR`);
}
if (input === undefined) {
  process.stdout.write(`ok ${passed.length} events\n`);
} else {
  const agent = { messages: input.messages ?? [], pendingInterrupts: [] };
  const mutations = await lastValueFrom(
    defaultApplyEvents(input, from(passed), agent, []).pipe(toArray()),
  );
  let messages = input.messages ?? [];
  let state = input.state;
  for (const mutation of mutations) {
    if (mutation.messages !== undefined) messages = mutation.messages;
    if (mutation.state !== undefined) state = mutation.state;
  }
  if (warnings.length > 0) fail(`the client warned while applying: ${warnings.join(" | ")}`);
  process.stdout.write(JSON.stringify({ messages, state }) + "\n");
}
