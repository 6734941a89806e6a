// An MCP client session against the connector, written as an agent
// runtime would write it with one of the official TypeScript clients:
// connect, list the tools, call a read tool, create a room and send a
// signed message into it, read the message back. It prints one JSON
// report on standard output; any error (the SDK's own validation of the
// tools/list result and of each structuredContent included) exits non-zero.
//
// node mcp.mjs '{"sdk":"sdk-1"|"client-2", "negotiation":"legacy"|"auto"|"2026-07-28",
//   "transport":"stdio"|"http", "command":…, "args":[…], "env":{…}, "url":…, "token":…, "host":…}'

const cfg = JSON.parse(process.argv[2]);
const prefix = "agent_protocols_";

// step names what the client was doing when it failed; the failure is
// printed in one short paragraph (a ZodError's message lists every issue).
let step = "load";
process.on("uncaughtException", (e) => {
  const msg = String(e?.message ?? e).replace(/\s+/g, " ");
  process.stderr.write(`mcp.mjs: ${step}: ${e?.name ?? "error"}: ${msg.slice(0, 1500)}\n`);
  process.exit(1);
});

async function sdk1() {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
  const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
  return { Client, StdioClientTransport, StreamableHTTPClientTransport, options: {} };
}

async function client2() {
  const m = await import("@modelcontextprotocol/client");
  const { StdioClientTransport } = await import("@modelcontextprotocol/client/stdio");
  const mode = cfg.negotiation === "auto" || cfg.negotiation === "legacy" ? cfg.negotiation : { pin: cfg.negotiation };
  return {
    Client: m.Client,
    StdioClientTransport,
    StreamableHTTPClientTransport: m.StreamableHTTPClientTransport,
    options: { versionNegotiation: { mode } },
  };
}

const lib = cfg.sdk === "sdk-1" ? await sdk1() : await client2();
const client = new lib.Client({ name: "agent-protocols-interop", version: "1" }, lib.options);

let transport;
if (cfg.transport === "stdio") {
  transport = new lib.StdioClientTransport({
    command: cfg.command,
    args: cfg.args,
    env: { ...process.env, ...cfg.env },
    stderr: "inherit",
  });
} else {
  transport = new lib.StreamableHTTPClientTransport(new URL(cfg.url), {
    requestInit: { headers: { Authorization: `Bearer ${cfg.token}` } },
  });
}
// The 1.x client tells the transport the negotiated version (HTTP needs
// it for its header) and has no getter; record it on the way.
let negotiated;
const setVersion = transport.setProtocolVersion?.bind(transport);
transport.setProtocolVersion = (v) => {
  negotiated = v;
  setVersion?.(v);
};

step = "connect";
await client.connect(transport);
if (client.getNegotiatedProtocolVersion) negotiated = client.getNegotiatedProtocolVersion();

// listTools validates the result against the SDK's schema for the
// negotiated era; the client caches each tool's outputSchema and checks
// every structuredContent against it.
step = "tools/list";
const tools = [];
let cursor;
do {
  const page = await client.listTools(cursor ? { cursor } : {});
  tools.push(...page.tools);
  cursor = page.nextCursor;
} while (cursor);

async function call(name, args) {
  step = `tools/call ${name}`;
  const res = await client.callTool({ name: prefix + name, arguments: args });
  if (res.isError) throw new Error(`${name}: isError: ${JSON.stringify(res.structuredContent ?? res.content)}`);
  if (!res.structuredContent) throw new Error(`${name}: no structuredContent`);
  return res.structuredContent;
}

const who = await call("identity_current", {});
const now = Date.now();
const created = await call("room_create", {
  host: cfg.host,
  topic: "Interop check",
  visibility: "public",
  start_time: now - 60_000,
  end_time: now + 3_600_000,
});
const roomId = created.room.room_id;
const text = `hello from ${cfg.sdk} ${cfg.negotiation} over ${cfg.transport}`;
const sent = await call("room_send_message", { room_id: roomId, content: text });
const timeline = await call("room_timeline", { room_id: roomId, limit: 20 });

step = "close";
await client.close();
process.stdout.write(
  JSON.stringify({
    protocolVersion: negotiated ?? null,
    tools: tools.map((t) => t.name),
    outputSchemas: tools.filter((t) => t.outputSchema).length,
    agentId: who.agent_id,
    roomId,
    sent: { status: sent.status, seq: sent.item?.seq ?? null },
    readBack: timeline.items.some((i) => i.event_id === sent.item?.event_id && i.content === text),
  }) + "\n",
);
