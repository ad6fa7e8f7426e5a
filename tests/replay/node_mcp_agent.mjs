// An agent in another language: it takes its tools over MCP (streamable HTTP, with
// fetch alone) from the address in the environment variable it is told, makes the
// calls it is given, and prints what each answered, a line each.
//   node node_mcp_agent.mjs VARIABLE '[["tool", {"arg": 1}], ...]'
const [, , variable, given] = process.argv;
const url = process.env[variable];
if (!url) throw new Error(`${variable} is not set`);
let id = 0;

async function rpc(method, params, notification = false) {
  const message = { jsonrpc: "2.0", method, params, ...(notification ? {} : { id: ++id }) };
  const response = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
    body: JSON.stringify(message),
  });
  const text = await response.text();
  if (notification) return null;
  const events = text.split("\n").filter((line) => line.startsWith("data:"));
  const answer = JSON.parse(events.length ? events.at(-1).slice(5) : text);
  if (answer.error) throw new Error(answer.error.message);
  return answer.result;
}

await rpc("initialize", {
  protocolVersion: "2025-06-18",
  capabilities: {},
  clientInfo: { name: "node-agent", version: "1" },
});
await rpc("notifications/initialized", {}, true);
const lines = [];
for (const [name, args] of JSON.parse(given)) {
  const result = await rpc("tools/call", { name, arguments: args });
  lines.push(`${name}: ${result.content.map((c) => c.text).join("")}${result.isError ? " (error)" : ""}`);
}
console.log(lines.join("\n"));
