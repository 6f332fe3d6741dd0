import test from 'ava';
import { countTokens } from 'gpt-tokenizer';
import { APIError } from '@anthropic-ai/sdk';
import { bearer, call } from '../helpers/http.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { stopAndClean } from '../helpers/process.js';
import { startGateway, user, type Gateway } from './support.js';

/**
 * POST /v1/messages/count_tokens (issue 19 item 3) with @anthropic-ai/sdk's messages.countTokens:
 * asked of the Anthropic-kind vendor when the routed model has one, else counted with the
 * tokenizer; with ?beta=true as Claude Code sends it; never budgeted nor recorded as a call; the
 * kill switch and data-loss screening still apply; errors in Anthropic's envelope.
 */
let vendor: MockVendor;
let gw: Gateway;
let key: string;
let euKey: string;
let admin: string;

test.before(async () => {
  vendor = await startMockVendor();
  gw = await startGateway(vendor);
  key = await gw.key({ defaultTaskClass: 'general' });
  euKey = await gw.key({ defaultTaskClass: 'general', policyProfile: 'eu-only' });
  admin = await gw.key({ scope: 'admin' });
});

test.after.always(async () => {
  if (gw) await stopAndClean(gw.server);
  await vendor?.close();
});

const post = (k: string, body: Record<string, unknown>, path = '/v1/messages/count_tokens') =>
  call(gw.server.url, 'POST', path, {
    headers: { 'x-api-key': k, 'anthropic-version': '2023-06-01' },
    json: body,
  });

test.serial('routed to an Anthropic-kind model: the vendor counts, with its own secret and model name', async (t) => {
  const { data, response } = await gw
    .anthropic(euKey)
    .messages.countTokens({ model: 'claude-eu', system: 'be kind', messages: user('count these four words') })
    .withResponse();
  t.deepEqual(data, { input_tokens: 6 }, "the mock's word count: the vendor answered");
  t.is(response.headers.get('x-svc-token-count'), 'vendor');
  t.is(response.headers.get('x-svc-routed-to'), 'claude-eu');
  t.is(response.headers.get('x-svc-enforcement'), 'observe');
  t.regex(response.headers.get('x-svc-overhead-micros') ?? '', /^\d+$/);
  const sent = vendor.calls.at(-1)!;
  t.is(sent.path, '/v1/messages/count_tokens');
  t.is(sent.model, 'claude-eu-2026');
  t.is(sent.headers['x-api-key'], 'sk-mock-anthropic');
  t.regex(String(sent.headers['anthropic-version']), /^\d{4}-\d{2}-\d{2}$/, "the client's own version");

  const beta = await gw
    .anthropic(euKey)
    .beta.messages.countTokens({ model: 'claude-eu', messages: user('beta words'), betas: ['context-1m-2025-08-07'] });
  t.deepEqual(beta, { input_tokens: 2 });
  t.regex(String(vendor.calls.at(-1)!.headers['anthropic-beta']), /context-1m-2025-08-07/);
});

test.serial('routed to an OpenAI-kind model: counted with the tokenizer, never four characters a token', async (t) => {
  const text = 'internationalization and tokenization of multilingual text';
  const before = vendor.count();
  const { data, response } = await gw
    .anthropic(key)
    .messages.countTokens({ model: 'small', messages: user(text) })
    .withResponse();
  t.is(response.headers.get('x-svc-token-count'), 'local');
  t.is(data.input_tokens, countTokens(text) + 3, "the tokenizer's count, and three tokens for the message");
  t.not(data.input_tokens, Math.ceil(text.length / 4) + 3);
  t.is(vendor.count(), before, 'nothing was sent');
});

test.serial(
  'a long prompt is counted on the tokenizer thread: the same count, in blocks and tool results too',
  async (t) => {
    // Over 2,048 characters a text is handed to the thread; the count is the tokenizer's all the same.
    const long = 'Refunds are issued within 14 days of the request, to the card that paid. '.repeat(400);
    const system = 'You answer questions about the refund policy. '.repeat(100);
    const { data } = await gw
      .anthropic(key)
      .messages.countTokens({
        model: 'small',
        system,
        messages: [
          { role: 'user', content: [{ type: 'text', text: long }] },
          { role: 'assistant', content: 'Noted.' },
        ],
      })
      .withResponse();
    t.is(data.input_tokens, countTokens(system) + countTokens(long) + countTokens('Noted.') + 2 * 3);
  },
);

test.serial('?beta=true as Claude Code sends it; and a failing vendor falls back to the local count', async (t) => {
  const res = await post(
    euKey,
    { model: 'claude-eu', messages: user('two words') },
    '/v1/messages/count_tokens?beta=true',
  );
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body, { input_tokens: 2 });
  vendor.fault('claude-eu-2026', { kind: 'status', status: 503 });
  const fell = await post(euKey, { model: 'claude-eu', messages: user('two words') });
  t.is(fell.status, 200, fell.text);
  t.is(fell.headers['x-svc-token-count'], 'local');
  t.is(fell.body.input_tokens, countTokens('two words') + 3);
});

test.serial('never a call: no record, no monthly count, and a spent budget does not refuse it', async (t) => {
  const spender = await gw.key({ defaultTaskClass: 'general', team: 'ct-spent' });
  await call(gw.server.url, 'POST', '/v1/admin/budgets', {
    headers: bearer(admin),
    json: { scope: { kind: 'team', id: 'ct-spent' }, amountMicros: 1, period: 'day' },
  });
  const chat = await call(gw.server.url, 'POST', '/v1/chat/completions', {
    headers: bearer(spender),
    json: { model: 'small', messages: user('spend the budget') },
  });
  t.is(chat.status, 200);
  t.is(
    (
      await call(gw.server.url, 'POST', '/v1/chat/completions', {
        headers: bearer(spender),
        json: { model: 'small', messages: user('again') },
      })
    ).status,
    429,
    'the budget is spent',
  );
  await gw.server.app.services.calls.flush();
  const wid = gw.server.boot.workspaceId!;
  const calls = (await gw.server.app.store.tables.calls.scan([wid])).length;
  const month = await gw.server.app.services.calls.requestsThisMonth(wid, new Date().toISOString());
  const counted = await post(spender, { model: 'small', messages: user('still counted') });
  t.is(counted.status, 200, counted.text);
  await gw.server.app.services.calls.flush();
  t.is((await gw.server.app.store.tables.calls.scan([wid])).length, calls, 'no call record');
  t.is(await gw.server.app.services.calls.requestsThisMonth(wid, new Date().toISOString()), month);
});

test.serial('the kill switch and data-loss screening apply; errors in Anthropic envelope', async (t) => {
  const agent = (await gw.owner.send('POST', '/agents', { name: 'counter' })).body.id as string;
  const agentKey = (await gw.owner.send('POST', `/agents/${agent}/keys`, {})).body.key as string;
  await gw.owner.send('POST', `/agents/${agent}/stop`, { reason: 'runaway' });
  const before = vendor.count();
  const err = await t.throwsAsync(
    gw
      .anthropic(agentKey)
      .messages.countTokens(
        { model: 'claude-eu', messages: user('hi') },
        { headers: { 'x-svc-task-class': 'general' } },
      ),
  );
  t.true(err instanceof APIError && err.status === 403);
  const raw = await call(gw.server.url, 'POST', '/v1/messages/count_tokens', {
    headers: { 'x-api-key': agentKey, 'anthropic-version': '2023-06-01', 'x-svc-task-class': 'general' },
    json: { model: 'claude-eu', messages: user('hi') },
  });
  t.is(raw.status, 403);
  t.like(raw.body, { type: 'error', error: { type: 'agent_stopped' } });

  await gw.owner.send('PUT', '/gateway', { dataLoss: 'block' });
  const blocked = await post(euKey, { model: 'claude-eu', messages: user('my card is 4111 1111 1111 1111') });
  t.is(blocked.status, 400);
  t.like(blocked.body, { type: 'error', error: { type: 'sensitive_data_blocked' } });
  await gw.owner.send('PUT', '/gateway', { dataLoss: 'off' });
  t.is(vendor.count(), before, 'nothing was sent');
});

test.serial('bad bodies: every field at fault listed, in Anthropic envelope', async (t) => {
  const res = await post(key, { messages: [{ role: 'robot', content: 3 }], system: 5 });
  t.is(res.status, 400);
  t.is(res.body.type, 'error');
  t.deepEqual(res.body.error.errors.map((e: { field: string }) => e.field).sort(), [
    'messages.0.content',
    'messages.0.role',
    'model',
    'system',
  ]);
  const query = await post(key, { model: 'small', messages: user('x') }, '/v1/messages/count_tokens?beta=maybe');
  t.is(query.status, 400);
});

test.serial('the budget reservation counts with the same tokenizer (a dry run shows the estimate)', async (t) => {
  const text = 'internationalization and tokenization of multilingual text';
  const res = await call(gw.server.url, 'POST', '/v1/chat/completions', {
    headers: { ...bearer(key), 'x-svc-dry-run': 'true' },
    json: { model: 'large', messages: user(text), max_tokens: 1 },
  });
  t.is(res.status, 200, res.text);
  // small: 150,000 in and 600,000 out per million.
  t.is(res.body.estimatedCostMicros, Math.ceil((countTokens(text) * 150_000 + 600_000) / 1_000_000));
});

test.serial('a dry run counts locally and sends nothing', async (t) => {
  const before = vendor.count();
  const res = await call(gw.server.url, 'POST', '/v1/messages/count_tokens', {
    headers: { 'x-api-key': euKey, 'anthropic-version': '2023-06-01', 'x-svc-dry-run': 'true' },
    json: { model: 'claude-eu', messages: user('two words') },
  });
  t.is(res.status, 200, res.text);
  t.is(res.headers['x-svc-token-count'], 'local');
  t.is(res.body.input_tokens, countTokens('two words') + 3);
  t.is(vendor.count(), before);
});
