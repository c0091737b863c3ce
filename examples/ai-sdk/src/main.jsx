// A chat page on hookwire's AI SDK wire (POST /api/chat, docs/frontends.md): the AI SDK's own
// `useChat` over `DefaultChatTransport`. hookwire runs its tools itself (dynamic tool parts with
// `providerExecuted: true`) and asks before those that need approval; the decision goes back with
// `addToolApprovalResponse` and `sendAutomaticallyWhen` sends it on. The `data-hookwire-*` parts
// (persistent hooks, the sealed approval state) are kept by the SDK and sent back untouched.
import { StrictMode, useEffect, useRef, useState } from "react";
import { createRoot } from "react-dom/client";
import { useChat } from "@ai-sdk/react";
import {
  DefaultChatTransport,
  getToolOrDynamicToolName,
  isToolOrDynamicToolUIPart,
  lastAssistantMessageIsCompleteWithApprovalResponses,
} from "ai";

// The one line that points the page at hookwire. Served by hookwire itself (`--static-dir`),
// the page is same-origin with it; from elsewhere: the full URL, and the page's origin in
// hookwire's `allowed_origins`.
const transport = new DefaultChatTransport({ api: "/api/chat" });

const STATES = {
  "input-streaming": "Preparing",
  "input-available": "Running",
  "approval-requested": "Waiting for your approval",
  "approval-responded": "Decided, sending",
  "output-available": "Done",
  "output-error": "Failed",
  "output-denied": "Denied",
};

function show(value) {
  if (value === undefined) return "";
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

function ToolCard({ part, onDecide }) {
  const name = getToolOrDynamicToolName(part);
  const waiting = part.state === "approval-requested";
  return (
    <section
      className={`tool ${waiting ? "waiting" : ""}`}
      data-testid={waiting ? "approval-card" : "tool-card"}
      data-state={part.state}
      aria-label={`Tool ${name}`}
    >
      <header>
        <span className="tool-name" data-testid="tool-name">{name}</span>
        <span className="tool-state" data-testid="tool-state">{STATES[part.state] ?? part.state}</span>
      </header>
      <pre data-testid="tool-input">{show(part.input)}</pre>
      {part.state === "output-available" && (
        <pre className="output" data-testid="tool-output">{show(part.output)}</pre>
      )}
      {part.state === "output-error" && <p className="error" data-testid="tool-error">{part.errorText}</p>}
      {waiting && (
        <div className="actions" role="group" aria-label={`Run ${name}?`}>
          <button data-testid="approve" onClick={() => onDecide(part.approval.id, true)}>Approve</button>
          <button data-testid="deny" className="secondary" onClick={() => onDecide(part.approval.id, false)}>
            Deny
          </button>
        </div>
      )}
    </section>
  );
}

function Message({ message, onDecide }) {
  return (
    <li className={`message ${message.role}`} data-testid={`message-${message.role}`}>
      <span className="who">{message.role === "user" ? "You" : "Assistant"}</span>
      {message.parts.map((part, i) => {
        if (part.type === "text") return <p key={i} data-testid="text">{part.text}</p>;
        if (isToolOrDynamicToolUIPart(part)) return <ToolCard key={part.toolCallId} part={part} onDecide={onDecide} />;
        return null; // step starts, reasoning, data-hookwire-* parts
      })}
    </li>
  );
}

function App() {
  const { messages, sendMessage, status, stop, error, clearError, addToolApprovalResponse } = useChat({
    transport,
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const [input, setInput] = useState("");
  const end = useRef(null);
  // Braces: scrollIntoView may return a promise, and an effect returns only its cleanup.
  useEffect(() => {
    end.current?.scrollIntoView({ block: "end" });
  }, [messages]);
  const busy = status === "submitted" || status === "streaming";

  function submit(event) {
    event.preventDefault();
    if (!input.trim() || busy) return;
    clearError();
    sendMessage({ text: input });
    setInput("");
  }

  return (
    <main>
      <h1>hookwire × AI SDK</h1>
      <ol className="messages" aria-live="polite" data-testid="messages">
        {messages.map((m) => (
          <Message key={m.id} message={m} onDecide={(id, approved) => addToolApprovalResponse({ id, approved })} />
        ))}
      </ol>
      <div ref={end} />
      {busy && <p className="status" data-testid="status">{status === "submitted" ? "Sending…" : "Answering…"}</p>}
      {error && (
        <p className="error" role="alert" data-testid="error">
          Something went wrong: {error.message}
        </p>
      )}
      <form onSubmit={submit}>
        <label htmlFor="prompt" className="visually-hidden">Message</label>
        <input
          id="prompt"
          data-testid="prompt"
          value={input}
          onChange={(e) => setInput(e.target.value)}
          placeholder="Ask something…"
          autoComplete="off"
          autoFocus
        />
        {busy ? (
          <button type="button" data-testid="stop" onClick={() => stop()}>Stop</button>
        ) : (
          <button type="submit" data-testid="send" disabled={!input.trim()}>Send</button>
        )}
      </form>
    </main>
  );
}

createRoot(document.getElementById("root")).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
