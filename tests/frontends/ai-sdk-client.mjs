// Drives hookwire's AI SDK wire with the SDK's own chat: `AbstractChat` (the class behind
// `useChat`) over `DefaultChatTransport`, as a React app's `useChat` would, with a plain state.
// `node ai-sdk-client.mjs <scenario>`; HOOKWIRE_URL, HOOKWIRE_TOKEN. Prints what the
// application saw (the messages, their parts, the status) as JSON.
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
} from "ai";
import { runScenario } from "./scenario.mjs";

/** The state `useChat` keeps in React, kept in plain fields. */
class PlainState {
  status = "ready";
  error = undefined;
  messages = [];
  pushMessage = (message) => { this.messages = this.messages.concat(message); };
  popMessage = () => { this.messages = this.messages.slice(0, -1); };
  replaceMessage = (index, message) => {
    this.messages = [...this.messages.slice(0, index), message, ...this.messages.slice(index + 1)];
  };
  snapshot = (thing) => structuredClone(thing);
}

class NodeChat extends AbstractChat {
  constructor(init) {
    super({ ...init, state: new PlainState() });
  }
}

const requests = [];
const transport = new DefaultChatTransport({
  api: `${process.env.HOOKWIRE_URL}/api/chat`,
  headers: process.env.HOOKWIRE_TOKEN ? { authorization: `Bearer ${process.env.HOOKWIRE_TOKEN}` } : {},
  body: process.env.CLIENT_TOOLS ? { tools: JSON.parse(process.env.CLIENT_TOOLS) } : {},
  fetch: async (url, init) => {
    requests.push(JSON.parse(init.body));
    return fetch(url, init);
  },
});

/** Waits until `holds()`, looking every 10 ms, for at most 15 s. */
async function until(holds, what) {
  for (let i = 0; i < 1500; i += 1) {
    if (holds()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Waits until the chat is idle: ready, or failed. */
async function idle(chat) {
  await until(() => chat.status === "ready" || chat.status === "error", `an idle chat (${chat.status})`);
}

function seen(chat) {
  return {
    status: chat.status,
    error: chat.error ? String(chat.error.message ?? chat.error) : null,
    requests: requests.length,
    messages: chat.messages.map((m) => ({ role: m.role, metadata: m.metadata ?? null, parts: m.parts })),
  };
}

const scenarios = {
  async text() {
    const chat = new NodeChat({ transport });
    await chat.sendMessage({ text: "hello" });
    await idle(chat);
    return seen(chat);
  },
  async twoTurns() {
    const chat = new NodeChat({ transport });
    await chat.sendMessage({ text: "one" });
    await idle(chat);
    await chat.sendMessage({ text: "two" });
    await idle(chat);
    return seen(chat);
  },
  async approve() {
    return approval(true);
  },
  async deny() {
    return approval(false);
  },
  async clientTool() {
    const chat = new NodeChat({
      transport,
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls,
      onToolCall: async ({ toolCall }) => {
        if (toolCall.toolName === "get_location") {
          chat.addToolOutput({ tool: "get_location", toolCallId: toolCall.toolCallId, output: "Paris" });
        }
      },
    });
    await chat.sendMessage({ text: "where am I?" });
    await idle(chat);
    return seen(chat);
  },
  async stop() {
    const chat = new NodeChat({ transport });
    const sent = chat.sendMessage({ text: "go on" });
    await until(() => {
      const last = chat.messages.at(-1);
      return last?.role === "assistant" && last.parts.some((p) => p.type === "text" && p.text);
    }, "the first text");
    await chat.stop();
    await sent;
    await idle(chat);
    return seen(chat);
  },
};

async function approval(approved) {
  const chat = new NodeChat({
    transport,
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  await chat.sendMessage({ text: "read a.txt" });
  await idle(chat);
  const asked = structuredClone(chat.messages);
  const part = chat.messages.at(-1).parts.find((p) => p.state === "approval-requested");
  if (!part) return { asked, error: "no approval was requested" };
  const before = requests.length;
  await chat.addToolApprovalResponse({
    id: part.approval.id,
    approved,
    ...(approved ? {} : { reason: "not that file" }),
  });
  // The SDK sends the decision by itself (sendAutomaticallyWhen).
  await until(() => requests.length > before, "the request with the decision");
  await idle(chat);
  return { asked, ...seen(chat) };
}

await runScenario(scenarios);
