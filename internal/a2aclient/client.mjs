// The A2A face driven by the @a2a-js/sdk client, as an A2A client would drive any agent:
// it resolves the card, picks the JSON-RPC 1.0 interface, and runs send, stream, get,
// list, subscribe and cancel as the caller of the first token; the second token is
// another principal, who must not reach the first one's task. Each step prints one JSON
// line {"step": ..., ...}; the Go test (server/a2a_sdk_test.go) judges them.
//
//   node client.mjs <base URL> <token> <other token>   (A2A_PUSH_URL: a webhook for the slow task)
import { Role, TaskState } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';

const [base, token, otherToken] = process.argv.slice(2);

function bearer(tok) {
  return (url, init = {}) => {
    const headers = new Headers(init.headers);
    headers.set('Authorization', `Bearer ${tok}`);
    return fetch(url, { ...init, headers });
  };
}

async function clientFor(tok) {
  const fetchImpl = bearer(tok);
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  });
  return new ClientFactory(options).createFromUrl(base);
}

function out(step, fields) {
  console.log(JSON.stringify({ step, ...fields }));
}

function message(id, skill, data) {
  return {
    messageId: id, contextId: '', taskId: '', role: Role.ROLE_USER, extensions: [], referenceTaskIds: [],
    parts: [{ content: { $case: 'data', value: data }, metadata: undefined, filename: '', mediaType: '' }],
    metadata: { skill },
  };
}

function request(msg, configuration) {
  return { tenant: '', message: msg, configuration, metadata: undefined };
}

const state = (t) => TaskState[t.status?.state];
const partValues = (artifacts) => (artifacts ?? []).flatMap((a) => a.parts.map((p) => p.content?.value));
const errorOf = (e) => ({ error: e?.constructor?.name ?? 'Error', code: e?.code, message: String(e?.message ?? e) });

const resolver = new DefaultAgentCardResolver({ fetchImpl: bearer(token) });
const publicCard = await resolver.resolve(base);
out('public-card', {
  skills: publicCard.skills.map((s) => s.id),
  extended: publicCard.capabilities?.extendedAgentCard ?? false,
  push: publicCard.capabilities?.pushNotifications ?? false,
  signatures: (publicCard.signatures ?? []).length,
});

const client = await clientFor(token);
// The extended card: the client fetches it (GetExtendedAgentCard) when the public card
// announces one.
const card = await client.getAgentCard();
out('card', {
  name: card.name,
  skills: card.skills.map((s) => s.id),
  interfaces: card.supportedInterfaces.map((i) => `${i.protocolBinding} ${i.protocolVersion} ${i.url}`),
  streaming: card.capabilities?.streaming ?? false,
  schemes: Object.keys(card.securitySchemes ?? {}),
});

const sent = await client.sendMessage(request(message('m-send', 'subtract', { minuend: 42, subtrahend: 23 })));
const task = sent.payload?.value ?? sent;
out('send', { kind: sent.payload?.$case ?? (task.status ? 'task' : 'message'), id: task.id, state: state(task), values: partValues(task.artifacts) });

const events = [];
let streamedID = '';
for await (const ev of client.sendMessageStream(request(message('m-stream', 'sum', [1, 2, 3])))) {
  const v = ev.payload?.value;
  streamedID ||= v?.id ?? v?.taskId ?? '';
  events.push(ev.payload?.$case + (v?.status ? ':' + TaskState[v.status.state] : ''));
}
out('stream', { id: streamedID, events });

const got = await client.getTask({ tenant: '', id: task.id, historyLength: 1 });
out('get', { id: got.id, state: state(got), values: partValues(got.artifacts), history: got.history.length });

const list = await client.listTasks({ tenant: '', contextId: '', status: 0, pageSize: 10, pageToken: '', historyLength: 0, includeArtifacts: false });
out('list', { ids: list.tasks.map((t) => t.id), totalSize: list.totalSize });

const slowSent = await client.sendMessage(request(message('m-slow', 'slow', {}), {
  acceptedOutputModes: [], taskPushNotificationConfig: undefined, historyLength: undefined, returnImmediately: true,
}));
const slow = slowSent.payload?.value ?? slowSent;
out('send-immediate', { id: slow.id, state: state(slow) });

// A webhook for the slow task, when the test gives one (A2A_PUSH_URL).
const pushURL = process.env.A2A_PUSH_URL ?? '';
if (pushURL) {
  try {
    const created = await client.createTaskPushNotificationConfig({
      tenant: '', id: 'sdk-hook', taskId: slow.id, url: pushURL, token: 'sdk-token', authentication: undefined,
    });
    const listed = await client.listTaskPushNotificationConfig({ tenant: '', taskId: slow.id, pageSize: 0, pageToken: '' });
    out('push', { id: created.id, taskId: created.taskId, url: created.url, listed: listed.configs.map((c) => c.id) });
  } catch (e) {
    out('push', errorOf(e));
  }
}

const other = await clientFor(otherToken);
for (const [op, call] of [
  ['get', () => other.getTask({ tenant: '', id: slow.id })],
  ['cancel', () => other.cancelTask({ tenant: '', id: slow.id, metadata: undefined })],
]) {
  try {
    const t = await call();
    out('other-' + op, { state: state(t) });
  } catch (e) {
    out('other-' + op, errorOf(e));
  }
}
try {
  for await (const ev of other.resubscribeTask({ tenant: '', id: slow.id })) {
    out('other-subscribe', { event: ev.payload?.$case });
    break;
  }
} catch (e) {
  out('other-subscribe', errorOf(e));
}

// Subscribe, wait for the task to be working, cancel: the subscription ends canceled.
const subscribed = [];
const subscription = (async () => {
  for await (const ev of client.resubscribeTask({ tenant: '', id: slow.id })) {
    const v = ev.payload?.value;
    subscribed.push(ev.payload?.$case + (v?.status ? ':' + TaskState[v.status.state] : ''));
  }
})();
for (let i = 0; i < 100 && !subscribed.some((e) => e.startsWith('task')); i++) {
  await new Promise((r) => setTimeout(r, 20));
}
const canceled = await client.cancelTask({ tenant: '', id: slow.id, metadata: undefined });
out('cancel', { id: canceled.id, state: state(canceled) });
await subscription;
out('subscribe', { events: subscribed });
