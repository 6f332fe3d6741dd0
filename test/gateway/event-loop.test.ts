import { randomBytes } from 'node:crypto';
import test from 'ava';
import { expectStatus, ownerConsole } from '../helpers/console.js';
import { authorize, createAgent, payment, type AgentFixture } from '../helpers/gate.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { startServer, stopAndClean, type RunningServer } from '../helpers/process.js';
import { gatewayConfig, VENDOR_ENV } from './support.js';

/**
 * No model request holds the event loop (issue 33): the real `svc serve`, spawned, with load
 * shedding as shipped, takes a streamed chat whose prompt is 10 MB of letters without a space
 * (gpt-tokenizer alone took 45 s for 320,000 of them, and 34 of 45 authorizations were shed
 * meanwhile) while another agent's authorizations go on one after another; none is shed, none waits
 * long, and the stream is answered. The prompt's count runs on the tokenizer thread until its
 * deadline, then falls back to four characters a token.
 */
let vendor: MockVendor;
let server: RunningServer;
let agent: AgentFixture;
let key: string;

test.before(async () => {
  vendor = await startMockVendor();
  server = await startServer({ config: gatewayConfig(vendor), env: VENDOR_ENV });
  agent = await createAgent(server);
  const owner = await ownerConsole(server);
  const minted = await owner.send('POST', '/keys', {
    scope: 'inference',
    name: 'big',
    principal: 'alice',
    team: 'search',
    defaultTaskClass: 'general',
  });
  key = expectStatus(minted, 201, 'key').body.key as string;
});

test.after.always(async () => {
  await stopAndClean(server);
  await vendor?.close();
});

/** `n` random lowercase letters (one pre-token, and no merge the tokenizer can cache). */
const letters = (n: number) => {
  const bytes = randomBytes(n);
  for (let i = 0; i < n; i++) bytes[i] = 97 + (bytes[i]! % 26);
  return bytes.toString('latin1');
};

async function timedAuthorize(): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const res = await authorize(server, agent.key, payment(1));
  return { status: res.status, ms: performance.now() - started };
}

test.serial('a 10 MB prompt without spaces sheds no authorization of another agent and delays none long', async (t) => {
  const before: number[] = [];
  for (let i = 0; i < 10; i++) before.push((await timedAuthorize()).ms);

  const body = JSON.stringify({
    model: 'small',
    stream: true,
    messages: [{ role: 'user', content: letters(10_400_000) }],
  });
  t.true(Buffer.byteLength(body) < 10_485_760, 'within the model routes’ body limit');
  let done = false;
  const big = (async () => {
    try {
      const res = await fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body,
      });
      return { status: res.status, text: await res.text() };
    } finally {
      done = true;
    }
  })();
  const during: Array<{ status: number; ms: number }> = [];
  // The stream may end before its prompt's count (which has 2 s): go on past that.
  const started = performance.now();
  while (!done || performance.now() - started < 3_000) during.push(await timedAuthorize());
  const answered = await big;

  const max = (xs: number[]) => Math.max(...xs).toFixed(0);
  const ms = during.map((d) => d.ms);
  t.log(
    `authorize: before, max ${max(before)} ms; during the 10 MB prompt, ${during.length} calls, ` +
      `max ${max(ms)} ms, median ${[...ms].sort((a, b) => a - b)[Math.floor(ms.length / 2)]!.toFixed(0)} ms`,
  );
  t.is(answered.status, 200, answered.text.slice(0, 500));
  t.true(answered.text.includes('data: [DONE]'), 'the stream ran to its end');
  t.true(during.length > 0);
  t.deepEqual(
    during.filter((d) => d.status !== 200),
    [],
    'no authorization was shed (503 overloaded) or failed',
  );
  // Held by the count, an authorization would wait its whole time (2 s to the deadline, minutes
  // before the fix) and the server would shed (over 1 s of event-loop delay). Moving 10 MB through
  // parsing, forwarding and the echoed answer still costs some collection pauses; on a 2-core
  // machine at a load of 12 to 19 the longest wait measured 480 to 1,800 ms (median 3 to 35 ms); the
  // bound is well short of a held loop, and the shedding above checks the rest.
  t.true(Math.max(...ms) < 3_000, `an authorization waited ${max(ms)} ms`);
});

test.serial(
  'a body of 300,000 messages is refused by its size before validation, and holds no authorization',
  async (t) => {
    // Validated item by item, these held the event loop 3.2-3.6 s before their 400; refused by
    // the one bounded walk over the body, they cost about what parsing them does.
    const body = JSON.stringify({
      model: 'small',
      messages: Array.from({ length: 300_000 }, () => ({ role: 'user', content: 'a' })),
    });
    const sent = fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body,
    });
    const during: Array<{ status: number; ms: number }> = [];
    let answered: Response | undefined;
    void sent.then((res) => (answered = res));
    while (answered === undefined) during.push(await timedAuthorize());
    const refused = (await answered.json()) as { error: { type: string; message: string } };
    t.is(answered.status, 400);
    t.is(refused.error.type, 'invalid_request');
    t.regex(refused.error.message, /array of more than 10000 items/);
    t.deepEqual(
      during.filter((d) => d.status !== 200),
      [],
      'no authorization was shed',
    );
    const ms = during.map((d) => d.ms);
    t.log(`authorize during the 300,000-message body: ${during.length} calls, max ${Math.max(0, ...ms).toFixed(0)} ms`);
    t.true(Math.max(0, ...ms) < 3_000, `an authorization waited ${Math.max(0, ...ms).toFixed(0)} ms`);
  },
);

test.serial('with its tokenizer thread started, svc serve still exits 0 on SIGTERM', async (t) => {
  t.is(await server.stop('SIGTERM'), 0, server.stderr().slice(-2000));
});
