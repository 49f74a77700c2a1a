// An A2A agent on the @a2a-js/sdk server (express, JSON-RPC binding 1.0 at /a2a, its card
// at /.well-known/agent-card.json) run as an upstream behind the gateway
// (server/a2aup_test.go). Its skills:
//
//   echo    completes at once; its artifact holds the text it got and, as data, the
//           Authorization and traceparent headers the request carried
//   stream  three working status updates ("step 1" … "step 3"), an artifact, completed
//   fail    fails with the status message "it broke"
//   slow    works until cancelled (CancelTask), or 30s
//
// GET /seen answers {cancelled: [task ids], headers: [{authorization, traceparent}]} (the last
// 100 requests').
//
//   node upstream.mjs      prints {"url": "http://127.0.0.1:<port>"} once it listens on loopback
import express from 'express';
import { TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { jsonRpcHandler } from '@a2a-js/sdk/server/express';

const skill = (id, description) => ({ id, name: id, description, tags: ['test'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] });
const card = {
  name: 'upstream', description: 'A test agent behind the gateway.', version: '1',
  supportedInterfaces: [], provider: undefined, documentationUrl: undefined, iconUrl: undefined,
  capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
  securitySchemes: {}, securityRequirements: [], signatures: [],
  defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
  skills: [skill('echo', 'Echoes the text.'), skill('stream', 'Streams three steps.'), skill('fail', 'Fails.'), skill('slow', 'Works until cancelled.')],
};

const seen = { cancelled: [], headers: [] };
const waiting = new Map(); // task id → resolve of a slow task

const text = (value) => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' });
const status = (state, msg) => ({
  state, timestamp: undefined,
  message: msg === undefined ? undefined : { messageId: `m-${Math.random()}`, contextId: '', taskId: '', role: 2, parts: [text(msg)], metadata: undefined, extensions: [], referenceTaskIds: [] },
});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const executor = {
  async execute(ctx, bus) {
    const m = ctx.userMessage;
    const id = m.metadata?.skillId ?? 'echo';
    const input = m.parts.filter((p) => p.content?.$case === 'text').map((p) => p.content.value).join('\n');
    const headers = JSON.parse(ctx.context?.user?.userName || '{}');
    const base = { id: ctx.taskId, contextId: ctx.contextId, history: [m], metadata: undefined, artifacts: [] };
    const update = (state, msg) => bus.publish(AgentEvent.statusUpdate({ taskId: ctx.taskId, contextId: ctx.contextId, status: status(state, msg), metadata: undefined }));
    bus.publish(AgentEvent.task({ ...base, status: status(TaskState.TASK_STATE_SUBMITTED) }));
    switch (id) {
      case 'echo':
        bus.publish(AgentEvent.artifactUpdate({
          taskId: ctx.taskId, contextId: ctx.contextId, append: false, lastChunk: true, metadata: undefined,
          artifact: { artifactId: 'echo', name: 'echo', description: '', metadata: undefined, extensions: [],
            parts: [text(`echo: ${input}`), { content: { $case: 'data', value: headers }, metadata: undefined, filename: '', mediaType: 'application/json' }] },
        }));
        update(TaskState.TASK_STATE_COMPLETED);
        break;
      case 'stream':
        for (let i = 1; i <= 3; i++) {
          update(TaskState.TASK_STATE_WORKING, `step ${i}`);
          await sleep(30);
        }
        bus.publish(AgentEvent.artifactUpdate({
          taskId: ctx.taskId, contextId: ctx.contextId, append: false, lastChunk: true, metadata: undefined,
          artifact: { artifactId: 'story', name: 'story', description: '', metadata: undefined, extensions: [], parts: [text('done streaming')] },
        }));
        update(TaskState.TASK_STATE_COMPLETED);
        break;
      case 'fail':
        update(TaskState.TASK_STATE_FAILED, 'it broke');
        break;
      case 'slow':
        update(TaskState.TASK_STATE_WORKING, 'started');
        await Promise.race([new Promise((r) => waiting.set(ctx.taskId, r)), sleep(30000)]);
        if (!seen.cancelled.includes(ctx.taskId)) update(TaskState.TASK_STATE_COMPLETED);
        break;
    }
    bus.finished();
  },
  async cancelTask(taskId, bus) {
    seen.cancelled.push(taskId);
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId: '', status: status(TaskState.TASK_STATE_CANCELED), metadata: undefined }));
    waiting.get(taskId)?.();
    bus.finished();
  },
};

const app = express();
app.get('/seen', (_req, res) => res.json(seen));
app.get('/.well-known/agent-card.json', (_req, res) => res.json(card));
app.use('/a2a', jsonRpcHandler({
  requestHandler: new DefaultRequestHandler(card, new InMemoryTaskStore(), executor),
  // The "user" carries the headers the request came with, for the executor to echo.
  userBuilder: async (req) => {
    const h = { authorization: req.headers.authorization ?? '', traceparent: req.headers.traceparent ?? '' };
    seen.headers.push(h);
    if (seen.headers.length > 100) seen.headers.shift(); // the last 100: a benchmark sends many
    return { isAuthenticated: false, userName: JSON.stringify(h) };
  },
}));
const server = app.listen(0, '127.0.0.1', () => {
  const url = `http://127.0.0.1:${server.address().port}`;
  card.supportedInterfaces = [{ url: `${url}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' }];
  console.log(JSON.stringify({ url }));
});
process.stdin.on('end', () => server.close(() => process.exit(0))); // the parent closing stdin stops it
process.stdin.resume();
