// An editor written with the official ACP TypeScript SDK (@agentclientprotocol/sdk), driving
// `rein acp` over stdio: initialize (granting `terminal`), session/new, a prompt whose shell
// command is asked about and run in this editor's terminal, session/close, session/resume,
// a second prompt, session/list, session/delete, session/list again. Every response is
// checked against the SDK's own zod schema (the SDK checks what the agent sends it).
// Prints one JSON object: what it saw.
//
//   node ts_client.mjs <sdk package dir> <cwd> <agent argv...>
import { spawn, spawnSync } from "node:child_process";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const [sdkDir, cwd, ...agent] = process.argv.slice(2);
const load = (file) => import(pathToFileURL(path.join(sdkDir, file)).href);
const acp = await load("dist/v1/stable/acp.js");
const zod = await load("dist/v1/schema/zod.gen.js");

const seen = { updates: [], asked: [], terminals: [], responses: {}, invalid: [], errors: [] };
const terminals = new Map();

const child = spawn(agent[0], agent.slice(1), { cwd, stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const app = acp
  .client()
  .onNotification("session/update", ({ params }) => {
    seen.updates.push(params.update);
  })
  .onRequest("session/request_permission", ({ params }) => {
    // The tool call's status when its permission is asked: the last update about it.
    const about = seen.updates.filter((u) => u.toolCallId === params.toolCall.toolCallId);
    const last = about.filter((u) => u.status).at(-1);
    seen.asked.push({
      toolCall: params.toolCall,
      statusWhenAsked: last ? last.status : null,
      options: params.options.map((o) => o.optionId),
    });
    return { outcome: { outcome: "selected", optionId: "allow_once" } };
  })
  .onRequest("terminal/create", ({ params }) => {
    seen.terminals.push([params.command, ...(params.args ?? [])]);
    const env = Object.fromEntries((params.env ?? []).map((v) => [v.name, v.value]));
    const done = spawnSync(params.command, params.args ?? [], { cwd: params.cwd ?? cwd, env });
    const id = `term-${terminals.size + 1}`;
    terminals.set(id, done);
    return { terminalId: id };
  })
  .onRequest("terminal/wait_for_exit", ({ params }) => ({
    exitCode: terminals.get(params.terminalId).status,
  }))
  .onRequest("terminal/output", ({ params }) => {
    const done = terminals.get(params.terminalId);
    return {
      output: String(done.stdout) + String(done.stderr),
      truncated: false,
      exitStatus: { exitCode: done.status },
    };
  })
  .onRequest("terminal/release", ({ params }) => {
    terminals.delete(params.terminalId);
    return {};
  });

async function call(ctx, name, method, params, schema) {
  try {
    const answer = await ctx.request(method, params);
    const checked = schema.safeParse(answer);
    if (!checked.success) seen.invalid.push([method, checked.error.message.slice(0, 500)]);
    seen.responses[name] = answer;
    return answer;
  } catch (error) {
    seen.errors.push([name, String(error?.message ?? error), error?.data ?? null]);
    return null;
  }
}

await app.connectWith(stream, async (ctx) => {
  await call(ctx, "initialize", "initialize",
             { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: { terminal: true } },
             zod.zInitializeResponse);
  const made = await call(ctx, "new", "session/new", { cwd, mcpServers: [] },
                          zod.zNewSessionResponse);
  const sessionId = made.sessionId;
  const prompt = (text) => ({ sessionId, prompt: [{ type: "text", text }] });
  await call(ctx, "prompt", "session/prompt", prompt("run it"), zod.zPromptResponse);
  await call(ctx, "close", "session/close", { sessionId }, zod.zCloseSessionResponse);
  await call(ctx, "closed prompt", "session/prompt", prompt("still there?"),
             zod.zPromptResponse);
  const before = seen.updates.length;
  await call(ctx, "resume", "session/resume", { sessionId, cwd, mcpServers: [] },
             zod.zResumeSessionResponse);
  seen.updatesBeforeResumeAnswer = seen.updates.length - before;
  await call(ctx, "prompt again", "session/prompt", prompt("and again"), zod.zPromptResponse);
  await call(ctx, "list", "session/list", { cwd }, zod.zListSessionsResponse);
  await call(ctx, "delete", "session/delete", { sessionId }, zod.zDeleteSessionResponse);
  await call(ctx, "list after", "session/list", { cwd }, zod.zListSessionsResponse);
});
child.stdin.end();
process.stdout.write(JSON.stringify(seen));
