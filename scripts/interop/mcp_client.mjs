// An MCP client on the official TypeScript SDK (npm
// `@modelcontextprotocol/sdk`), Streamable HTTP (revision 2025-11-25: the
// initialize handshake, a session, the GET stream), run against URL (the
// gateway, or the server itself for comparison). With --sign, every
// `tools/call` POST is signed (AdCP 3.2 request profile) by `ADCP_SIG sign
// --profile request` with KEY_FILE, in the transport's fetch: the MCP
// client itself is unchanged.
//
// The session: connect; tools/list; a signed tools/call of
// create_media_buy answered as an event stream (progress notifications,
// then the result); the same call unsigned; announce, whose notification
// comes on the GET stream; then DELETE of the session and close.
//
// Usage: node mcp_client.mjs URL [--sign ADCP_SIG KEY_FILE]   (run where
// node_modules holds the SDK)
// Prints one JSON line: {"protocol_version", "tools", "progress", "result",
// "elapsed", "list_changed", "unsigned_call", "error"}.
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";

// Resolved from the current directory's node_modules (the script's temp dir).
const require = createRequire(`${process.cwd()}/`);
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { ToolListChangedNotificationSchema } = require("@modelcontextprotocol/sdk/types.js");

const [url, flag, adcpSig, keyFile] = process.argv.slice(2);
const sign = flag === "--sign";
let signing = false;
const out = {
  protocol_version: null, tools: null, progress: 0, result: null, elapsed: null,
  list_changed: null, unsigned_call: null, error: null,
};

async function signingFetch(input, init = {}) {
  if (sign && signing && init.method === "POST" && typeof init.body === "string") {
    let method;
    try {
      method = JSON.parse(init.body).method;
    } catch {
      method = undefined;
    }
    if (method === "tools/call") {
      const headers = new Headers(init.headers);
      const contentType = headers.get("content-type") ?? "application/json";
      const signed = JSON.parse(
        execFileSync(adcpSig, ["sign", "--profile", "request", "--url", String(input), "--body", init.body,
          "--key", keyFile, "--content-type", contentType]).toString(),
      );
      for (const name of ["Signature", "Signature-Input", "Content-Digest"]) headers.set(name, signed.headers[name]);
      init = { ...init, headers };
    }
  }
  return fetch(input, init);
}

const payload = (result) => {
  if (result.isError) return { error: JSON.stringify(result.content) };
  if (result.structuredContent) return result.structuredContent;
  try {
    return JSON.parse(result.content[0].text);
  } catch {
    return { content: JSON.stringify(result.content) };
  }
};

try {
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: signingFetch });
  const client = new Client({ name: "interop-buyer", version: "1.0.0" });
  let listChanged;
  const changed = new Promise((resolve) => (listChanged = resolve));
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => listChanged(true));
  await client.connect(transport);
  out.protocol_version = transport.protocolVersion ?? null;
  out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
  signing = true;
  const started = Date.now();
  const result = await client.callTool(
    { name: "create_media_buy", arguments: { idempotency_key: "k-1" } },
    undefined,
    { onprogress: () => out.progress++, timeout: 120000 },
  );
  out.elapsed = (Date.now() - started) / 1000;
  out.result = payload(result);
  signing = false;
  try {
    const unsigned = await client.callTool({ name: "create_media_buy", arguments: { idempotency_key: "k-2" } });
    out.unsigned_call = unsigned.isError ? "error result" : "accepted";
  } catch (e) {
    out.unsigned_call = `refused: ${e.message}`;
  }
  await client.callTool({ name: "announce", arguments: {} });
  out.list_changed = await Promise.race([changed, new Promise((resolve) => setTimeout(() => resolve(false), 10000))]);
  await transport.terminateSession();
  await client.close();
} catch (e) {
  out.error = `${e.name}: ${e.message}`;
}
console.log(JSON.stringify(out));
process.exit(0);
