import test from 'ava';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { makeBot } from '../approvals/support.js';
import { startMcpUpstream } from '../helpers/mcp-upstream.js';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { authorize, createAgent, payment } from '../helpers/gate.js';
import { bearer, call } from '../helpers/http.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { stopAndClean } from '../helpers/process.js';
import { startGateway, user, type Gateway } from '../gateway/support.js';

/**
 * OpenTelemetry traces (issue 21): with OTEL_EXPORTER_OTLP_ENDPOINT set, the server
 * sends its spans over OTLP/HTTP to a collector (here a loopback receiver). One span per request,
 * named after its route, continuing an incoming traceparent; child spans for the upstream attempt
 * (GenAI semantic conventions, and the traceparent sent upstream names it), the signing and the
 * store write; a webhook delivery is a trace of its own whose traceparent the receiver gets. A
 * collector that never answers slows no request.
 */
const SERVER = 2;
const CLIENT = 3;
let vendor: MockVendor;
let receiver: OtlpReceiver;
let gw: Gateway;

test.before(async () => {
  vendor = await startMockVendor();
  receiver = await startOtlpReceiver();
  gw = await startGateway(
    vendor,
    {},
    {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_SERVICE_NAME: 'svc-under-test',
      SVC_WEBHOOKS_ALLOW_PRIVATE_TARGETS: '1',
      SVC_WEBHOOKS_DISPATCH_INTERVAL_MS: '50',
      SVC_MCP_ALLOW_PRIVATE_UPSTREAMS: '1',
    },
  );
});

test.after.always(async () => {
  if (gw) await stopAndClean(gw.server);
  await vendor?.close();
  await receiver?.close();
});

const childrenOf = (spans: ReceivedSpan[], parent: ReceivedSpan) =>
  spans.filter((s) => s.traceId === parent.traceId && s.parentSpanId === parent.spanId);

test.serial(
  'one gateway call: its request span continues the caller trace, the upstream attempt is its GenAI child',
  async (t) => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpan = '00f067aa0ba902b7';
    const key = await gw.key({ defaultTaskClass: 'general', policyProfile: 'us-only' });
    const res = await call(gw.server.url, 'POST', '/v1/chat/completions', {
      headers: { ...bearer(key), traceparent: `00-${traceId}-${callerSpan}-01` },
      json: { model: 'small', messages: user('hello'), max_tokens: 50 },
    });
    t.is(res.status, 200, res.text);
    const answered = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(res.headers.traceparent));
    t.is(answered?.[1], traceId, 'the answer names the same trace');

    const isRequest = (s: ReceivedSpan) => s.traceId === traceId && s.name === 'POST /v1/chat/completions';
    await receiver.waitFor(
      (spans) => spans.some(isRequest) && spans.some((s) => s.traceId === traceId && s.kind === CLIENT),
    );
    t.true(receiver.contentTypes.every((c) => c.startsWith('application/json')));
    const request = receiver.spans.find(isRequest)!;
    t.is(request.kind, SERVER);
    t.is(request.parentSpanId, callerSpan, 'continues the incoming traceparent');
    t.is(request.service, 'svc-under-test');
    t.is(request.attributes['http.route'], '/v1/chat/completions');
    t.is(request.attributes['http.response.status_code'], 200);
    t.is(answered?.[2], request.spanId, "the answer's traceparent names the request span");

    const upstream = childrenOf(receiver.spans, request).filter((s) => s.kind === CLIENT);
    t.is(upstream.length, 1);
    const attempt = upstream[0]!;
    t.is(attempt.name, 'chat small-2026');
    t.like(attempt.attributes, {
      'gen_ai.operation.name': 'chat',
      'gen_ai.system': 'openai',
      'gen_ai.request.model': 'small-2026',
      'gen_ai.response.model': 'small-2026',
      'gen_ai.request.max_tokens': 50,
      'svc.gateway.model': 'small',
      'svc.gateway.provider': 'vendor-o',
    });
    t.true(Number(attempt.attributes['gen_ai.usage.input_tokens']) > 0);
    t.true(Number(attempt.attributes['gen_ai.usage.output_tokens']) > 0);
    t.deepEqual(attempt.attributes['gen_ai.response.finish_reasons'], ['stop']);
    // Nothing of the prompt or the answer is an attribute.
    t.false(JSON.stringify(receiver.spans).includes('hello'));

    // Outgoing propagation: the vendor was sent the attempt span as its parent.
    const sent = vendor.calls.at(-1)!;
    t.is(sent.headers.traceparent, `00-${traceId}-${attempt.spanId}-01`);
  },
);

test.serial('one authorize: its request span has the signing and the store write as children', async (t) => {
  const agent = await createAgent(gw.server);
  const res = await authorize(gw.server, agent.key, payment(1200));
  t.is(res.status, 200, res.text);
  t.truthy(res.body.receipt);
  const traceId = /^00-([0-9a-f]{32})-/.exec(String(res.headers.traceparent))![1]!;
  const isRequest = (s: ReceivedSpan) => s.traceId === traceId && s.name === 'POST /v1/actions/authorize';
  await receiver.waitFor((spans) => {
    const request = spans.find(isRequest);
    if (!request) return false;
    const names = childrenOf(spans, request).map((s) => s.name);
    return names.includes('store.write') && names.includes('receipt.sign');
  });
  const request = receiver.spans.find(isRequest)!;
  t.is(request.kind, SERVER);
  t.is(request.parentSpanId, '', 'a request without traceparent starts a trace');
  t.is(request.attributes['http.route'], '/v1/actions/authorize');
  const children = childrenOf(receiver.spans, request);
  const sign = children.find((s) => s.name === 'receipt.sign')!;
  t.truthy(sign.attributes['svc.signing.kid']);
  t.is(children.filter((s) => s.name === 'store.write').length, 1, 'the decision is one write');
  // The tree is whole: every span of the trace hangs under the request span.
  const trace = receiver.spans.filter((s) => s.traceId === traceId);
  t.true(trace.every((s) => s === request || s.parentSpanId === request.spanId));
});

test.serial(
  'a proxied MCP tool call is a CLIENT span under its request span, and the upstream gets its traceparent',
  async (t) => {
    const upstream = await startMcpUpstream({ secret: 'upstream-secret-1' });
    try {
      const added = await gw.owner.send('POST', '/mcp-servers', {
        name: 'files',
        url: upstream.url,
        secret: 'upstream-secret-1',
        allowTools: ['add'],
      });
      t.is(added.status, 201, added.text);
      const bot = await makeBot(gw.owner, 'files-bot', [{ actions: ['mcp.files.add'], domains: ['*'] }]);
      const traceId = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';
      const client = new Client({ name: 'trace-test', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${gw.server.url}/mcp`), {
          requestInit: {
            headers: { authorization: `Bearer ${bot.key}`, traceparent: `00-${traceId}-1111111111111111-01` },
          },
        }),
      );
      const res = await client.callTool({ name: 'files__add', arguments: { a: 2, b: 40 } });
      await client.close();
      t.deepEqual(res.content, [{ type: 'text', text: '42' }]);
      const isCall = (s: ReceivedSpan) => s.traceId === traceId && s.name === 'tools/call add';
      await receiver.waitFor((spans) => spans.some(isCall));
      const span = receiver.spans.find(isCall)!;
      t.is(span.kind, CLIENT);
      t.like(span.attributes, {
        'mcp.method.name': 'tools/call',
        'gen_ai.tool.name': 'add',
        'svc.mcp.server': 'files',
      });
      const parent = receiver.spans.find((s) => s.traceId === traceId && s.spanId === span.parentSpanId);
      t.is(parent?.name, 'POST /mcp');
      t.is(parent?.kind, SERVER);
      // The trace goes on upstream: the forwarded call names the CLIENT span as its parent.
      t.deepEqual(
        upstream.requests.filter((r) => r.method === 'tools/call').map((r) => r.traceparent),
        [`00-${traceId}-${span.spanId}-01`],
      );
    } finally {
      await upstream.close();
    }
  },
);

test.serial('an outbound webhook delivery is a CLIENT span whose traceparent the receiver gets', async (t) => {
  const got: IncomingHttpHeaders[] = [];
  const hooks = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      got.push(req.headers);
      res.writeHead(204).end();
      hooks.emit('delivered');
    });
  });
  await new Promise<void>((r) => hooks.listen(0, '127.0.0.1', () => r()));
  try {
    const url = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/hooks`;
    const added = await gw.owner.send('POST', '/webhooks', { url, events: ['action.decided'] });
    t.is(added.status, 201, added.text);
    const agent = await createAgent(gw.server, undefined, 'hooked-bot');
    t.is((await authorize(gw.server, agent.key, payment(700))).status, 200);
    const deadline = AbortSignal.timeout(15_000);
    while (got.length === 0) await once(hooks, 'delivered', { signal: deadline });
    const sent = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(got[0]!.traceparent));
    t.truthy(sent, 'the delivery carries a traceparent');
    await receiver.waitFor((spans) => spans.some((s) => s.spanId === sent![2]));
    const span = receiver.spans.find((s) => s.spanId === sent![2])!;
    t.is(span.traceId, String(sent![1]));
    t.is(span.kind, CLIENT);
    t.is(span.parentSpanId, '', 'a delivery runs apart from any request: a trace of its own');
    t.is(span.name, `webhook ${String(got[0]!['svc-event-type'])}`);
    t.is(span.attributes['http.response.status_code'], 204);
    t.is(span.attributes['server.address'], '127.0.0.1');
  } finally {
    hooks.closeAllConnections();
    await new Promise<void>((r) => hooks.close(() => r()));
  }
});

test.serial('a collector that never answers slows no request', async (t) => {
  receiver.hang = true;
  try {
    const key = await gw.key({ defaultTaskClass: 'general', policyProfile: 'us-only' });
    const chat = () => gw.openai(key).chat.completions.create({ model: 'small', messages: user('again') });
    await chat();
    // An export is now held open by the collector (the exporter waits up to 5 s for it)...
    await receiver.waitFor(() => receiver.hung > 0);
    // ...and requests are answered meanwhile, without waiting on it.
    for (let i = 0; i < 3; i += 1) {
      const started = performance.now();
      const answer = await chat();
      t.is(answer.choices[0]!.message.content, 'echo: again');
      t.true(performance.now() - started < 4_000, 'well under the export timeout');
    }
  } finally {
    receiver.hang = false;
  }
});
