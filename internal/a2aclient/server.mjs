// A minimal A2A agent on the @a2a-js/sdk server (express, JSON-RPC binding at /a2a): one
// skill, subtract, that completes each message's task at once with the difference of the
// message's data part {minuend, subtrahend} as its artifact. The direct side of
// server.BenchmarkA2ASendMessage: the same client, the same message, the reference server.
//
//   node server.mjs      prints {"url": "http://127.0.0.1:<port>"} once it listens on loopback
import express from 'express';
import { TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { UserBuilder, jsonRpcHandler } from '@a2a-js/sdk/server/express';

const card = {
  name: 'subtract', description: 'Subtracts subtrahend from minuend.', version: '1',
  supportedInterfaces: [{ url: 'http://127.0.0.1/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' }],
  provider: undefined, documentationUrl: undefined, iconUrl: undefined,
  capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
  securitySchemes: {}, securityRequirements: [], signatures: [],
  defaultInputModes: ['application/json'], defaultOutputModes: ['application/json'],
  skills: [{ id: 'subtract', name: 'subtract', description: 'Subtracts.', tags: [], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
};

const executor = {
  async execute(ctx, bus) {
    const m = ctx.userMessage;
    const d = m.parts[0]?.content?.value ?? {};
    bus.publish(AgentEvent.task({
      id: ctx.taskId, contextId: ctx.contextId, history: [m], metadata: undefined,
      status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: undefined },
      artifacts: [{
        artifactId: 'result', name: 'result', description: '', metadata: undefined, extensions: [],
        parts: [{ content: { $case: 'data', value: d.minuend - d.subtrahend }, metadata: undefined, filename: '', mediaType: 'application/json' }],
      }],
    }));
    bus.finished();
  },
  async cancelTask() {},
};

const app = express();
app.use('/a2a', jsonRpcHandler({
  requestHandler: new DefaultRequestHandler(card, new InMemoryTaskStore(), executor),
  userBuilder: UserBuilder.noAuthentication,
}));
const server = app.listen(0, '127.0.0.1', () => {
  console.log(JSON.stringify({ url: `http://127.0.0.1:${server.address().port}` }));
});
process.stdin.on('end', () => server.close(() => process.exit(0))); // the parent closing stdin stops it
process.stdin.resume();
