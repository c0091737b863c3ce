// The AI SDK's own Node server, for `cargo bench --bench load -- aisdk-node`: what the SDK's
// documentation shows for a node:http server. `POST /api/chat` reads the UI messages that
// `DefaultChatTransport` sends, calls the model through `streamText` with the OpenAI-compatible
// provider (HOOKWIRE_LOAD_UPSTREAM: the fake upstream's `.../v1`), and streams the UI message
// stream back with `pipeUIMessageStreamToResponse` (what `toUIMessageStreamResponse()` returns,
// written to node's response instead of a web `Response`). Says `listening on http://ADDR` on
// stderr once it listens.
//
// The packages are tests/frontends' (pinned there, installed with `npm ci`): a bare import
// here would look for them beside this file, so they are required from there.
import http from "node:http";
import { createRequire } from "node:module";

const require = createRequire(new URL("../../tests/frontends/package.json", import.meta.url));
const { convertToModelMessages, streamText } = require("ai");
const { createOpenAICompatible } = require("@ai-sdk/openai-compatible");

const baseURL = process.env.HOOKWIRE_LOAD_UPSTREAM;
if (!baseURL) {
  console.error("HOOKWIRE_LOAD_UPSTREAM is not set");
  process.exit(2);
}
const model = createOpenAICompatible({ name: "fake", baseURL, apiKey: "k" }).chatModel("m");

async function chat(request, response) {
  const chunks = [];
  for await (const chunk of request) {
    chunks.push(chunk);
  }
  const { messages } = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  const result = streamText({
    model,
    messages: await convertToModelMessages(messages),
    onError: ({ error }) => console.error("Error in the stream:", error?.message ?? error),
  });
  result.pipeUIMessageStreamToResponse(response);
}

const server = http.createServer((request, response) => {
  if (request.method !== "POST" || request.url !== "/api/chat") {
    response.writeHead(404).end();
    return;
  }
  chat(request, response).catch((error) => {
    console.error("Error in a request:", error?.message ?? error);
    if (!response.headersSent) {
      response.writeHead(400);
    }
    response.end();
  });
});

server.listen(0, "127.0.0.1", () => {
  const { address, port } = server.address();
  console.error(`listening on http://${address}:${port}`);
});
