// An MCP server on the official TypeScript SDK (npm
// `@modelcontextprotocol/sdk`), Streamable HTTP at /mcp, stateful: one
// transport per session (Mcp-Session-Id), the GET stream, DELETE ending the
// session. The same tools as mcp_server.py: create_media_buy and
// get_products report progress STEPS times, STEP_MS apart, before
// answering (an event stream lasting longer than the gateway's
// --upstream-timeout); announce sends notifications/tools/list_changed on
// the session's GET stream.
//
// Usage: node mcp_server.mjs   (run where node_modules holds the SDK;
// prints "listening on http://127.0.0.1:PORT")
import http from "node:http";
import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";

// Resolved from the current directory's node_modules (the script's temp dir).
const require = createRequire(`${process.cwd()}/`);
const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
const { StreamableHTTPServerTransport } = require("@modelcontextprotocol/sdk/server/streamableHttp.js");
const { isInitializeRequest } = require("@modelcontextprotocol/sdk/types.js");
const { z } = require("zod");

const STEPS = 3;
const STEP_MS = 1000;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function seller() {
  const server = new McpServer({ name: "interop-seller", version: "1.0.0" });
  const streamProgress = async (extra) => {
    const progressToken = extra._meta?.progressToken;
    for (let step = 1; step <= STEPS; step++) {
      if (progressToken !== undefined) {
        await extra.sendNotification({
          method: "notifications/progress",
          params: { progressToken, progress: step, total: STEPS, message: `step ${step}` },
        });
      }
      await sleep(STEP_MS);
    }
  };
  const json = (value) => ({ content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: value });
  server.registerTool(
    "create_media_buy",
    { description: "Creates a media buy (AdCP: must be signed).", inputSchema: { idempotency_key: z.string() } },
    async ({ idempotency_key }, extra) => {
      await streamProgress(extra);
      return json({ media_buy_id: `mb-${idempotency_key}`, status: "active" });
    },
  );
  server.registerTool(
    "get_products",
    { description: "Lists products (AdCP: signing not required).", inputSchema: { brief: z.string() } },
    async ({ brief }, extra) => {
      await streamProgress(extra);
      return json({ products: [{ product_id: "p-1", name: brief }] });
    },
  );
  server.registerTool("announce", { description: "Sends notifications/tools/list_changed on the GET stream." }, async () => {
    server.sendToolListChanged();
    return { content: [{ type: "text", text: "announced" }] };
  });
  return server;
}

const transports = new Map();

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? JSON.parse(text) : undefined;
}

const httpServer = http.createServer(async (req, res) => {
  try {
    if (!req.url.startsWith("/mcp")) {
      res.writeHead(404).end();
      return;
    }
    const body = req.method === "POST" ? await readJson(req) : undefined;
    const sessionId = req.headers["mcp-session-id"];
    let transport = sessionId ? transports.get(sessionId) : undefined;
    if (!transport) {
      if (req.method !== "POST" || !isInitializeRequest(body)) {
        res.writeHead(400, { "content-type": "application/json" }).end(
          JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "Bad Request: no valid session" }, id: null }),
        );
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => transports.set(id, transport),
      });
      transport.onclose = () => transport.sessionId && transports.delete(transport.sessionId);
      await seller().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  } catch (e) {
    if (!res.headersSent) res.writeHead(500).end(String(e));
  }
});

httpServer.listen(0, "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${httpServer.address().port}`);
});
