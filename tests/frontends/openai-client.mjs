// Drives hookwire's OpenAI-compatible wire with the `openai` SDK, as an application would.
// `node openai-client.mjs <scenario>`; HOOKWIRE_URL is the server (http://127.0.0.1:PORT),
// HOOKWIRE_TOKEN its access token (optional). Prints what the application saw, as JSON.
import OpenAI from "openai";
import { runScenario } from "./scenario.mjs";

const client = new OpenAI({
  baseURL: `${process.env.HOOKWIRE_URL}/v1`,
  apiKey: process.env.HOOKWIRE_TOKEN ?? "no-token",
  maxRetries: 0,
});

const location = {
  type: "function",
  function: {
    name: "get_location",
    description: "Where the person is",
    parameters: { type: "object", properties: { precision: { type: "string" } } },
  },
};

/** A streamed completion, read to its end: its text, client calls, finish reason and usage. */
async function streamed(body, signal) {
  const stream = await client.chat.completions.create(
    { model: "hookwire", stream: true, stream_options: { include_usage: true }, ...body },
    { signal },
  );
  const seen = { text: "", calls: [], finish: null, usage: null, chunks: 0 };
  for await (const chunk of stream) {
    seen.chunks += 1;
    if (chunk.usage) seen.usage = chunk.usage;
    for (const choice of chunk.choices) {
      if (choice.delta?.content) seen.text += choice.delta.content;
      for (const call of choice.delta?.tool_calls ?? []) seen.calls.push(call);
      if (choice.finish_reason) seen.finish = choice.finish_reason;
    }
  }
  return seen;
}

const scenarios = {
  async models() {
    const page = await client.models.list();
    return { ids: page.data.map((m) => m.id) };
  },
  async stream() {
    return streamed({ messages: [{ role: "user", content: "hello" }] });
  },
  async whole() {
    const completion = await client.chat.completions.create({
      model: "hookwire",
      messages: [
        { role: "system", content: "be brief" },
        { role: "user", content: [{ type: "text", text: "hello" }] },
      ],
    });
    return {
      text: completion.choices[0].message.content,
      finish: completion.choices[0].finish_reason,
      usage: completion.usage,
      object: completion.object,
    };
  },
  async clientTool() {
    const messages = [{ role: "user", content: "where am I?" }];
    const first = await streamed({ messages, tools: [location] });
    // The application runs its tool and sends the result, as the SDK's docs show.
    messages.push({
      role: "assistant",
      content: first.text || null,
      tool_calls: first.calls.map((c) => ({ id: c.id, type: "function", function: c.function })),
    });
    for (const call of first.calls) {
      messages.push({ role: "tool", tool_call_id: call.id, content: "Paris" });
    }
    const second = await streamed({ messages, tools: [location] });
    return { first, second };
  },
  async failure() {
    try {
      await streamed({ messages: [{ role: "user", content: "hello" }] });
      return { thrown: null };
    } catch (error) {
      return { thrown: String(error?.message ?? error), status: error?.status ?? null };
    }
  },
  async abort() {
    const controller = new AbortController();
    const stream = await client.chat.completions.create(
      { model: "hookwire", stream: true, messages: [{ role: "user", content: "go on" }] },
      { signal: controller.signal },
    );
    let text = "";
    try {
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta?.content ?? "";
        if (text.length > 0) controller.abort();
      }
    } catch (error) {
      // Some versions of the SDK end the loop on an abort, others raise it.
      if (error?.name !== "AbortError" && !controller.signal.aborted) throw error;
    }
    return { aborted: controller.signal.aborted, text };
  },
  async badRequest() {
    try {
      await client.chat.completions.create({ model: "hookwire", messages: [] });
      return { thrown: null };
    } catch (error) {
      return { thrown: String(error?.message ?? error), status: error?.status ?? null };
    }
  },
};

await runScenario(scenarios);
