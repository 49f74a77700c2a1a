// The TypeScript matrix clients: reads one cell per line on stdin,
//   {"id": n, "sdk": "ts25"|"ts26", "url": …, "version": …, "kind": …, "name": …, "steps": [...]}
// runs it — ts25 on @modelcontextprotocol/sdk (v1, 2025-11-25), ts26 on
// @modelcontextprotocol/client (v2, pinned to 2026-07-28) — and prints one line per cell,
//   {"id": n, "error": "…"} when it could not connect, else {"id": n, "steps": {"tools": "", "progress": "why it failed", …}}
// ("" is a step that passed). Cells run concurrently; the process ends when stdin closes.
'use strict';

const readline = require('node:readline');
const v1client = require('@modelcontextprotocol/sdk/client/index.js');
const v1http = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const v1types = require('@modelcontextprotocol/sdk/types.js');
const v2 = require('@modelcontextprotocol/client');

const samplePrompt = 'matrix';
const noTaskAPI = 'this client SDK has no task-augmented tools/call';
// stepTimeout bounds each request, so that a round trip that never completes fails its
// step quickly instead of the SDK's default minute (the harness passes its own to both).
const stepTimeout = Number(process.env.MCPMATRIX_STEP_TIMEOUT_MS || 5000);
const opts = { timeout: stepTimeout };
const progressToken = 'matrix-progress';

function sampled(name, req) {
  const msgs = req.params.messages;
  if (msgs.length !== 1 || msgs[0].content.type !== 'text' || msgs[0].content.text !== samplePrompt) {
    throw new Error('unexpected sampling request ' + JSON.stringify(msgs));
  }
  return { role: 'assistant', model: 'matrix', content: { type: 'text', text: 'reply of ' + name } };
}

function elicited(name) {
  return { action: 'accept', content: { name: 'name of ' + name } };
}

async function connect(cell) {
  const caps = { capabilities: { sampling: {}, elicitation: { form: {} } } };
  const info = { name: cell.name, version: '1.0.0' };
  if (cell.sdk === 'ts25') {
    const client = new v1client.Client(info, caps);
    client.setRequestHandler(v1types.CreateMessageRequestSchema, async (req) => sampled(cell.name, req));
    client.setRequestHandler(v1types.ElicitRequestSchema, async () => elicited(cell.name));
    const transport = new v1http.StreamableHTTPClientTransport(new URL(cell.url));
    await client.connect(transport);
    if (transport.protocolVersion !== cell.version) throw new Error(`negotiated ${transport.protocolVersion}, want ${cell.version}`);
    const peer = { client, progress: 0, tasks: client.experimental.tasks };
    // v1: callTool(params, resultSchema, options)
    peer.call = (params, opts) => client.callTool(params, undefined, { timeout: stepTimeout, ...opts });
    client.setNotificationHandler(v1types.ProgressNotificationSchema, (n) => countProgress(peer, n));
    return peer;
  }
  const client = new v2.Client(info, { ...caps, versionNegotiation: { mode: { pin: cell.version } } });
  client.setRequestHandler('sampling/createMessage', async (req) => sampled(cell.name, req));
  client.setRequestHandler('elicitation/create', async () => elicited(cell.name));
  await client.connect(new v2.StreamableHTTPClientTransport(new URL(cell.url)));
  const negotiated = client.getNegotiatedProtocolVersion();
  if (negotiated !== cell.version) throw new Error(`negotiated ${negotiated}, want ${cell.version}`);
  const peer = { client, progress: 0 };
  // v2: callTool(params, options)
  peer.call = (params, opts) => client.callTool(params, { timeout: stepTimeout, ...opts });
  client.setNotificationHandler('notifications/progress', (n) => countProgress(peer, n));
  return peer;
}

// countProgress counts the progress notifications of the progress step's token. They are
// counted by a notification handler of the client's own rather than a per-call onprogress
// callback, which the SDKs drop once the call's result is in: a notification relayed on the
// session's GET stream may arrive just after the result (see docs/mcp.md), and still counts.
function countProgress(peer, n) {
  if (n.params && n.params.progressToken === progressToken) peer.progress++;
}

async function eventually(cond) {
  for (const deadline = Date.now() + 1000; !cond(); ) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return true;
}

function textOf(result) {
  if (result.isError || !result.content || result.content.length !== 1 || result.content[0].type !== 'text') {
    throw new Error('result ' + JSON.stringify(result));
  }
  return result.content[0].text;
}

function expect(got, want) {
  if (got !== want) throw new Error(`got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

async function runStep(step, peer, cell) {
  const { client, call } = peer;
  const { kind, name } = cell;
  switch (step) {
    case 'tools': {
      const list = await client.listTools(undefined, opts);
      if (!list.tools.some((t) => t.name === kind + '_echo')) throw new Error(`tools/list lacks ${kind}_echo`);
      return expect(textOf(await call({ name: kind + '_echo', arguments: { text: name } })), `${kind} echo ${name}`);
    }
    case 'progress': {
      peer.progress = 0;
      const result = await call({ name: kind + '_progress', arguments: { steps: 3 }, _meta: { progressToken } });
      if (!(await eventually(() => peer.progress > 0))) throw new Error('no progress notification');
      return expect(textOf(result), `${kind} progress 3`);
    }
    case 'resources': {
      const uri = `matrix://${kind}/info`;
      const list = await client.listResources(undefined, opts);
      if (!list.resources.some((r) => r.uri === uri)) throw new Error(`resources/list lacks ${uri}`);
      const r = await client.readResource({ uri }, opts);
      if (r.contents.length !== 1) throw new Error('contents ' + JSON.stringify(r.contents));
      return expect(r.contents[0].text, `${kind} resource`);
    }
    case 'prompts': {
      const list = await client.listPrompts(undefined, opts);
      if (!list.prompts.some((p) => p.name === kind + '_greet')) throw new Error(`prompts/list lacks ${kind}_greet`);
      const r = await client.getPrompt({ name: kind + '_greet', arguments: { name } }, opts);
      if (r.messages.length !== 1 || r.messages[0].content.type !== 'text') throw new Error('messages ' + JSON.stringify(r.messages));
      return expect(r.messages[0].content.text, `${kind} greets ${name}`);
    }
    case 'sampling':
      return expect(textOf(await call({ name: kind + '_sample', arguments: {} })), `${kind} sample reply of ${name}`);
    case 'elicitation':
      return expect(textOf(await call({ name: kind + '_elicit', arguments: {} })), `${kind} elicit accept name of ${name}`);
    case 'task': {
      if (!peer.tasks) throw new Error(noTaskAPI);
      let created;
      let result;
      for await (const m of peer.tasks.callToolStream({ name: kind + '_echo', arguments: { text: name } }, undefined, { timeout: stepTimeout, task: { ttl: 60000 } })) {
        if (m.type === 'taskCreated') created = m.task.taskId;
        else if (m.type === 'result') result = m.result;
        else if (m.type === 'error') throw m.error;
      }
      if (!created) throw new Error('the call was answered without creating a task');
      return expect(textOf(result), `${kind} echo ${name}`);
    }
    default:
      throw new Error('unknown step ' + step);
  }
}

async function runCell(cell) {
  let peer;
  try {
    peer = await connect(cell);
  } catch (err) {
    return { id: cell.id, error: String(err && err.message ? err.message : err) };
  }
  const steps = {};
  for (const step of cell.steps) {
    try {
      await runStep(step, peer, cell);
      steps[step] = '';
    } catch (err) {
      steps[step] = String(err && err.message ? err.message : err) || 'failed';
    }
  }
  await peer.client.close().catch(() => {});
  return { id: cell.id, steps };
}

const lines = readline.createInterface({ input: process.stdin });
const pending = [];
lines.on('line', (line) => {
  if (!line.trim()) return;
  const cell = JSON.parse(line);
  pending.push(runCell(cell).then((out) => process.stdout.write(JSON.stringify(out) + '\n')));
});
lines.on('close', () => { Promise.allSettled(pending).then(() => process.exit(0)); });
