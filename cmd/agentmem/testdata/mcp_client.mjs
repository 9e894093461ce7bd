// A black-box MCP session against `agentmem mcp` with the official
// TypeScript SDK: node mcp_client.mjs stdio BIN ARGS... | http URL
// It prints one line per check and exits 1 when any fails.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, target, ...rest] = process.argv.slice(2);
const transport = mode === "stdio"
  ? new StdioClientTransport({ command: target, args: rest, env: { ...process.env }, stderr: "inherit" })
  : new StreamableHTTPClientTransport(new URL(target));
const client = new Client({ name: "ts-black-box", version: "1.0.0" });
let failed = 0;
const check = (ok, what) => { console.log(`${ok ? "ok  " : "FAIL"} ${what}`); if (!ok) failed++; };
const text = (r) => (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");
const callTool = async (name, args) => {
  try { return await client.callTool({ name, arguments: args }); }
  catch (e) { return { protocolError: String(e) }; }
};

await client.connect(transport);
const { tools } = await client.listTools();
check(["memory_list", "memory_read", "memory_save", "memory_delete", "memory_recall", "memory_search"]
  .every((n) => tools.some((t) => t.name === n)), "tools/list has the six memory tools");

let r = await callTool("memory_save", { name: "Release freeze", description: "when releases are frozen", type: "project",
  body: "No releases during the last week of the quarter; hotfixes need two approvals." });
check(!r.isError && !r.protocolError, "memory_save: " + text(r));
const file = r.structuredContent?.file;
check(file === "release_freeze.md", "the saved file is named from the title: " + file);
r = await callTool("memory_list", {});
check(!r.isError && text(r).includes("release_freeze.md"), "memory_list lists it");
r = await callTool("memory_recall", { query: "can I ship a release at the end of the quarter?" });
check(!r.isError && text(r).includes("two approvals"), "memory_recall finds it");
r = await callTool("memory_read", { file });
check(!r.isError && text(r).includes("name: release-freeze") && text(r).includes("  type: project"), "memory_read reads it (Claude Code 2.1.328's layout)");
r = await callTool("memory_search", { pattern: "hotfix(es)?" });
check(!r.isError && text(r).includes("release_freeze.md:"), "memory_search finds the line");
const idx = await client.readResource({ uri: "memory://index" });
check(idx.contents[0].text.includes("(release_freeze.md)"), "memory://index has the pointer");
const { resources } = await client.listResources();
check(resources.some((x) => x.uri === "memory://files/release_freeze.md"), "resources/list has the file");
const prompt = await client.getPrompt({ name: "memory" });
check(prompt.messages[0].content.text.includes("release_freeze.md"), "the memory prompt shows the index");

for (const [name, args] of [
  ["memory_read", { file: "../../../../etc/passwd" }],
  ["memory_read", { file: "/etc/passwd" }],
  ["memory_read", { file: "..%2F..%2Fetc%2Fpasswd" }],
  ["memory_read", { file: "" }],
  ["memory_save", { name: "x", description: "d", type: "project", body: "b", file: "../../escape.md" }],
  ["memory_save", { name: "x", description: "d", type: "project", body: "b", file: "/tmp/escape.md" }],
  ["memory_save", { name: "k", description: "d", type: "reference", file: "team/k.md", body: "token ghp_" + "a1B2".repeat(9) }],
  ["memory_save", { name: 7 }],
  ["memory_delete", { file: "../../x.md" }],
  ["memory_search", { pattern: "[" }],
]) {
  r = await callTool(name, args);
  check(!r.protocolError && r.isError === true && !text(r).includes("root:x:"), `${name} ${JSON.stringify(args)} is an isError result: ${text(r)}`);
}

r = await callTool("memory_delete", { file });
check(!r.isError, "memory_delete deletes it");
r = await callTool("memory_list", {});
check(!text(r).includes("release_freeze.md"), "it is gone from the list");
const idx2 = (await client.readResource({ uri: "memory://index" })).contents[0];
const body2 = idx2.text ?? Buffer.from(idx2.blob, "base64").toString();
check(!body2.includes("release_freeze.md"), "and from the index (now empty): " + JSON.stringify(idx2));
await client.close();
process.exit(failed ? 1 : 0);
