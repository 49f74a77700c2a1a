// The TypeScript matrix servers, both in one Node process on 127.0.0.1: ts25 on
// @modelcontextprotocol/sdk (v1: 2025-11-25, stateful streamable HTTP sessions) at /ts25/mcp,
// and ts26 on @modelcontextprotocol/server (v2: 2026-07-28 only, legacy requests refused) at
// /ts26/mcp. Each offers the surface every matrix server offers (see peers_go_test.go). Once
// listening it prints one JSON line, {"ts25": url, "ts26": url}, and serves until stdin closes.
'use strict';

const http = require('node:http');
const { randomUUID } = require('node:crypto');
const { z } = require('zod');
const v1mcp = require('@modelcontextprotocol/sdk/server/mcp.js');
const v1http = require('@modelcontextprotocol/sdk/server/streamableHttp.js');
const v1types = require('@modelcontextprotocol/sdk/types.js');
const v2 = require('@modelcontextprotocol/server');

const samplePrompt = 'matrix';
const elicitSchema = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };
const text = (t) => ({ content: [{ type: 'text', text: t }] });
const progressToken = (meta) => (meta ? meta.progressToken : undefined);

// v1: one McpServer and transport per session.
function v1Server(kind) {
  const server = new v1mcp.McpServer({ name: 'matrix-' + kind, version: '1.0.0' });
  server.registerTool(kind + '_echo', { inputSchema: { text: z.string() } }, async ({ text: t }) => text(`${kind} echo ${t}`));
  server.registerTool(kind + '_progress', { inputSchema: { steps: z.number() } }, async ({ steps }, extra) => {
    const token = progressToken(extra._meta);
    if (token !== undefined) {
      for (let i = 1; i <= steps; i++) {
        await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: steps } });
      }
    }
    return text(`${kind} progress ${steps}`);
  });
  server.registerTool(kind + '_sample', {}, async (extra) => {
    const r = await extra.sendRequest({ method: 'sampling/createMessage', params: {
      messages: [{ role: 'user', content: { type: 'text', text: samplePrompt } }], maxTokens: 16 } }, v1types.CreateMessageResultSchema);
    return text(`${kind} sample ${r.content.text}`);
  });
  server.registerTool(kind + '_elicit', {}, async (extra) => {
    const r = await extra.sendRequest({ method: 'elicitation/create', params: { mode: 'form', message: 'name?', requestedSchema: elicitSchema } },
      v1types.ElicitResultSchema);
    return text(`${kind} elicit ${r.action} ${r.content ? r.content.name : ''}`);
  });
  server.registerResource(kind + '_info', `matrix://${kind}/info`, { mimeType: 'text/plain' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: `${kind} resource` }] }));
  server.registerPrompt(kind + '_greet', { argsSchema: { name: z.string() } },
    ({ name }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `${kind} greets ${name}` } }] }));
  return server;
}

const v1sessions = new Map();

async function serveV1(kind, req, res) {
  const body = req.method === 'POST' ? JSON.parse((await readBody(req)).toString() || 'null') : undefined;
  const sid = req.headers['mcp-session-id'];
  let transport = sid ? v1sessions.get(sid) : undefined;
  if (!transport) {
    if (sid || req.method !== 'POST' || !v1types.isInitializeRequest(body)) {
      res.writeHead(sid ? 404 : 400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'no such session' }, id: null }));
      return;
    }
    transport = new v1http.StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (id) => v1sessions.set(id, transport),
    });
    transport.onclose = () => { if (transport.sessionId) v1sessions.delete(transport.sessionId); };
    await v1Server(kind).connect(transport);
  }
  await transport.handleRequest(req, res, body);
}

// v2: a fresh McpServer per request (the stateless 2026-07-28 serving model).
function v2Server(kind) {
  const server = new v2.McpServer({ name: 'matrix-' + kind, version: '1.0.0' });
  server.registerTool(kind + '_echo', { inputSchema: z.object({ text: z.string() }) }, async ({ text: t }) => text(`${kind} echo ${t}`));
  server.registerTool(kind + '_progress', { inputSchema: z.object({ steps: z.number() }) }, async ({ steps }, ctx) => {
    const token = progressToken(ctx.mcpReq._meta);
    if (token !== undefined) {
      for (let i = 1; i <= steps; i++) {
        await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: steps } });
      }
    }
    return text(`${kind} progress ${steps}`);
  });
  server.registerTool(kind + '_sample', {}, async (ctx) => {
    const answer = v2.inputResponse(ctx.mcpReq.inputResponses, 'sample');
    if (answer.kind === 'sampling') return text(`${kind} sample ${answer.result.content.text}`);
    return v2.inputRequired({ inputRequests: { sample: v2.inputRequired.createMessage({
      messages: [{ role: 'user', content: { type: 'text', text: samplePrompt } }], maxTokens: 16 }) } });
  });
  server.registerTool(kind + '_elicit', {}, async (ctx) => {
    const answer = v2.inputResponse(ctx.mcpReq.inputResponses, 'name');
    if (answer.kind === 'elicit') return text(`${kind} elicit ${answer.action} ${answer.content ? answer.content.name : ''}`);
    return v2.inputRequired({ inputRequests: { name: v2.inputRequired.elicit({ message: 'name?', requestedSchema: elicitSchema }) } });
  });
  server.registerResource(kind + '_info', `matrix://${kind}/info`, { mimeType: 'text/plain' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: `${kind} resource` }] }));
  server.registerPrompt(kind + '_greet', { argsSchema: z.object({ name: z.string() }) },
    ({ name }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `${kind} greets ${name}` } }] }));
  return server;
}

const v2handler = v2.createMcpHandler(() => v2Server('ts26'), { legacy: 'reject' });

// serveFetch adapts node:http to the web-standard handler of v2.
async function serveFetch(handler, req, res) {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (Array.isArray(v)) v.forEach((x) => headers.append(k, x));
    else if (v !== undefined) headers.set(k, v);
  }
  const abort = new AbortController();
  res.on('close', () => abort.abort());
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
  const request = new Request(`http://${req.headers.host}${req.url}`, {
    method: req.method, headers, body: hasBody ? await readBody(req) : undefined, signal: abort.signal,
  });
  const response = await handler.fetch(request);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (response.body) {
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      res.write(value);
    }
  }
  res.end();
}

async function readBody(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  return Buffer.concat(chunks);
}

const server = http.createServer((req, res) => {
  const path = req.url.split('?')[0];
  let served;
  if (path === '/ts25/mcp') served = serveV1('ts25', req, res);
  else if (path === '/ts26/mcp') served = serveFetch(v2handler, req, res);
  else {
    res.writeHead(404).end();
    return;
  }
  served.catch((err) => {
    process.stderr.write(`${req.method} ${path}: ${err && err.stack}\n`);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  });
});

server.listen(0, '127.0.0.1', () => {
  const base = `http://127.0.0.1:${server.address().port}`;
  process.stdout.write(JSON.stringify({ ts25: base + '/ts25/mcp', ts26: base + '/ts26/mcp' }) + '\n');
});

process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
