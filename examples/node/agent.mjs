// An agent in another language: Node with the official openai and MCP SDKs, and
// nothing of agent-replay's. It reads the instruction on stdin and prints its
// final answer. The harness gives it OPENAI_BASE_URL (the trial's recording LLM
// proxy), OPENAI_API_KEY, REPLAY_MODEL and REPLAY_MCP_URL (the trial's tools over
// MCP); every LLM call and tool call is recorded and replayed as a Python agent's.
//
//   replay run examples/frameworks/cases/reserve.yaml --run node --mode sandbox \
//       --agent-cmd "node examples/node/agent.mjs" --tools examples.frameworks:make_tools \
//       --llm-url http://127.0.0.1:8799/v1
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import OpenAI from "openai";

let instruction = "";
for await (const chunk of process.stdin) instruction += chunk;

const tools = new Client({ name: "node-inventory-agent", version: "1.0.0" });
await tools.connect(new StreamableHTTPClientTransport(new URL(process.env.REPLAY_MCP_URL)));
const listed = (await tools.listTools()).tools.map((t) => ({
  type: "function",
  function: { name: t.name, description: t.description, parameters: t.inputSchema },
}));

const llm = new OpenAI(); // OPENAI_BASE_URL and OPENAI_API_KEY from the environment
const messages = [
  { role: "system", content: "You manage a small shop's inventory. Check stock before reserving." },
  { role: "user", content: instruction },
];
for (let turn = 0; turn < 8; turn++) {
  const { choices } = await llm.chat.completions.create({
    model: process.env.REPLAY_MODEL || "stub-inventory-1",
    messages,
    tools: listed,
  });
  const reply = choices[0].message;
  messages.push(reply);
  if (!reply.tool_calls?.length) {
    console.log(reply.content);
    await tools.close();
    process.exit(0);
  }
  for (const call of reply.tool_calls) {
    const result = await tools.callTool({
      name: call.function.name,
      arguments: JSON.parse(call.function.arguments),
    });
    const text = result.content.map((c) => c.text ?? "").join("");
    messages.push({ role: "tool", tool_call_id: call.id, content: text });
  }
}
console.error("no answer after 8 turns");
process.exit(1);
