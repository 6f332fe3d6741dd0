import type { TestFn } from 'ava';
import { request } from 'node:http';
import { authorize, createAgent, payment, type AgentFixture } from '../helpers/gate.js';
import { CATALOGUE, gatewayConfig, PROFILES, user, VENDOR_ENV } from '../gateway/support.js';
import { expectStatus, ownerConsole } from '../helpers/console.js';
import { bearer, call, csrf } from '../helpers/http.js';
import { startMockVendor } from '../helpers/mock-vendor.js';
import { svc, type Served } from '../helpers/process.js';
import { startReceiver, until } from '../helpers/receiver.js';
import { clearOfMinuteEdge } from '../helpers/wait.js';

/**
 * What must hold when several processes serve one store (issue 17, item 4), run against two
 * `svc serve` instances on one PostgreSQL database (postgres-instances.test.ts) and against
 * `svc serve --workers 2` on one LMDB file (lmdb-workers.test.ts). `a` and `b` are the two ways in:
 * two instances' addresses, or the one port the workers share (the kernel spreads connections).
 */

export const SERVER_ENV = {
  SVC_SIGNIN_RATE_PER_MINUTE: '10000',
  SVC_WEBHOOKS_ALLOW_PRIVATE_TARGETS: '1',
  SVC_WEBHOOKS_TIMEOUT_MS: '2000',
  SVC_WEBHOOKS_BACKOFF_BASE_MS: '100',
  SVC_WEBHOOKS_BACKOFF_MAX_MS: '300',
  SVC_WEBHOOKS_DISPATCH_INTERVAL_MS: '50',
};

export interface Deployment {
  a: Served;
  b: Served;
  /** Arguments that point a `--local` command at the same store (`--data-dir`, `--store`). */
  storeArgs: string[];
  /** Kills A (or one worker) with SIGKILL; resolves once it is gone. */
  killA(): Promise<void>;
}

/** What a test may add to both processes: a configuration file's content, and environment. */
export interface DeployOptions {
  config?: unknown;
  env?: Record<string, string>;
}

/**
 * One deployment for the file (starting servers is what costs), shared by its tests in order,
 * each with agents of its own; the kill -9 test comes last. A test that needs a configuration of
 * its own (the gateway's budget) gets a deployment of its own.
 */
export function multiSuite(test: TestFn, name: string, start: (options?: DeployOptions) => Promise<Deployment>): void {
  let deployed: Promise<Deployment> | undefined;
  const deploy = (options?: DeployOptions) => (options ? start(options) : (deployed ??= start()));
  const agent = (d: Deployment, limit = 20_000): Promise<AgentFixture> =>
    createAgent(d.a, [
      {
        actions: ['payment'],
        merchants: ['acme.example'],
        currencies: ['EUR'],
        maxAmount: 5000,
        periodLimit: { amount: limit, period: 'day' },
      },
    ]);

  test.serial(`${name}: a stop through A denies B's very next request`, async (t) => {
    const d = await deploy();
    const bot = await agent(d);
    t.is((await authorize(d.b, bot.key, payment(100))).body.decision, 'allow');
    const stopped = await call(d.a.url, 'POST', `/api/w/${bot.wid}/agents/${bot.agentId}/stop`, {
      headers: { ...csrf, cookie: bot.cookie },
      json: { reason: 'multi-instance drill' },
    });
    t.is(stopped.status, 200, stopped.text);
    for (let i = 0; i < 6; i++) {
      const res = await authorize(d.b, bot.key, payment(100));
      t.is(res.body.decision, 'deny', res.text);
      t.deepEqual(res.body.signals, ['agent_frozen']);
    }
  });

  test.serial(
    `${name}: 40 concurrent authorizations split across A and B never overrun the period limit`,
    async (t) => {
      const d = await deploy();
      const bot = await agent(d, 20_000);
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) => authorize(i % 2 === 0 ? d.a : d.b, bot.key, payment(1000))),
      );
      for (const res of answers) t.is(res.status, 200, res.text);
      const allowed = answers.filter((r) => r.body.decision === 'allow');
      t.is(allowed.length, 20, 'exactly the limit: 20 of 1,000 within 20,000');
      t.true(answers.filter((r) => r.body.decision === 'deny').every((r) => r.body.signals.includes('period_limit')));
      const verify = await svc(['ledger', 'verify', ...d.storeArgs, '--json']);
      t.is(verify.code, 0, verify.stderr + verify.stdout);
    },
  );

  test.serial(`${name}: 20 racing identical idempotent requests across both make one action`, async (t) => {
    const d = await deploy();
    const bot = await agent(d);
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        authorize(i % 2 === 0 ? d.a : d.b, bot.key, payment(700), { 'idempotency-key': 'race-1' }),
      ),
    );
    for (const res of answers) t.is(res.status, 200, res.text);
    t.is(new Set(answers.map((r) => r.body.id)).size, 1, 'one action id');
    const listed = await call(d.b.url, 'GET', `/api/w/${bot.wid}/ledger?limit=200`, {
      headers: { cookie: bot.cookie },
    });
    t.is(
      (listed.body.data as Array<{ kind: string; actor: string }>).filter(
        (r) => r.kind.startsWith('action.') && r.actor === `agent:${bot.agentId}`,
      ).length,
      1,
      'one decision in the ledger',
    );
  });

  test.serial(`${name}: one webhook event is delivered once, whichever instance sends it`, async (t) => {
    const d = await deploy();
    let secret = '';
    const receiver = await startReceiver(() => secret);
    try {
      const bot = await agent(d);
      const hook = await call(d.a.url, 'POST', `/api/w/${bot.wid}/webhooks`, {
        headers: { ...csrf, cookie: bot.cookie },
        json: { url: receiver.url, events: ['action.decided'] },
      });
      t.is(hook.status, 201, hook.text);
      secret = hook.body.secret;
      for (let i = 0; i < 6; i++) {
        t.is((await authorize(i % 2 === 0 ? d.a : d.b, bot.key, payment(100))).status, 200);
      }
      await until('six deliveries', () => receiver.state.received.filter((r) => r.status === 200).length >= 6);
      // One more event after the six: once it arrived, both dispatchers have had their turns past
      // the first six, so a duplicate would have been sent by now.
      await authorize(d.b, bot.key, payment(100));
      await until('the seventh delivery', () => new Set(receiver.state.received.map((r) => r.id)).size >= 7);
      const ids = receiver.state.received.map((r) => r.id);
      t.is(ids.length, new Set(ids).size, `no event delivered twice: ${ids.join(', ')}`);
      t.true(receiver.state.received.every((r) => r.verified));
    } finally {
      await receiver.close();
    }
  });

  test.serial(`${name}: kill -9 of A under load loses no acknowledged action, and B keeps serving`, async (t) => {
    const d = await deploy();
    const bot = await agent(d, 10_000_000);
    const acked: string[] = [];
    let stop = false;
    const lane = async () => {
      while (!stop) {
        // A request caught on the killed process may never be answered: it counts as not acknowledged.
        const res = await Promise.race([
          authorize(d.a, bot.key, payment(10)).catch(() => null),
          new Promise<null>((resolve) => setTimeout(() => resolve(null), 10_000)),
        ]);
        if (res?.status === 200 && res.body.decision === 'allow') acked.push(res.body.id);
        else if (res === null || res.status >= 500) return;
      }
    };
    const lanes = Array.from({ length: 4 }, lane);
    await until('20 acknowledged actions', () => acked.length >= 20, 30_000);
    await d.killA();
    stop = true;
    await Promise.all(lanes);
    // A kept-alive connection to the killed process is reset on its next use: such a request is
    // made again on a new connection.
    const again = <T>(f: () => Promise<T>) =>
      f()
        .catch(() => f())
        .catch(() => f());
    const seen = await Promise.all(
      acked.map((id) => again(() => call(d.b.url, 'GET', `/v1/actions/${id}`, { headers: bearer(bot.key) }))),
    );
    t.deepEqual(
      seen.filter((r) => r.status !== 200).map((r) => r.text),
      [],
      'every acknowledged action is stored',
    );
    t.is((await again(() => authorize(d.b, bot.key, payment(10)))).body.decision, 'allow', 'B still decides');
    const verify = await svc(['ledger', 'verify', ...d.storeArgs, '--json']);
    t.is(verify.code, 0, verify.stderr + verify.stdout);
  });

  test.serial(`${name}: a budget is never overrun by more than one reservation across A and B`, async (t) => {
    const vendor = await startMockVendor();
    try {
      // 100 dollars per million tokens each way: "hello" at max_tokens 3 costs 300 micro-dollars
      // and reserves at most 500 (gateway/budgets.test.ts).
      const pricey = {
        id: 'pricey',
        provider: 'vendor-o',
        upstreamModel: 'pricey-1',
        priceMicrosPerMTokIn: 100_000_000,
        priceMicrosPerMTokOut: 100_000_000,
        quality: 5,
        jurisdiction: { domicile: 'US', region: 'us-east' },
      };
      const config = gatewayConfig(vendor, {
        models: [...CATALOGUE, pricey],
        policyProfiles: [...PROFILES, { id: 'pricey-only', models: ['pricey'] }],
      });
      const d = await deploy({ config, env: VENDOR_ENV });
      const owner = await ownerConsole(d.a);
      const mint = async (input: Record<string, unknown>): Promise<string> =>
        expectStatus(
          await owner.send('POST', '/keys', { name: `k-${String(input.scope)}`, principal: 'alice', ...input }),
          201,
          'key',
        ).body.key as string;
      const admin = await mint({ scope: 'admin', team: 'ops' });
      const key = await mint({
        scope: 'inference',
        team: 'crowd',
        defaultTaskClass: 'general',
        policyProfile: 'pricey-only',
      });
      const amount = 3000;
      const reservation = 500;
      const made = await call(d.b.url, 'POST', '/v1/admin/budgets', {
        headers: bearer(admin),
        json: { scope: { kind: 'team', id: 'crowd' }, amountMicros: amount, period: 'day' },
      });
      t.is(made.status, 201, made.text);
      const answers = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          call((i % 2 === 0 ? d.a : d.b).url, 'POST', '/v1/chat/completions', {
            headers: bearer(key),
            json: { model: 'pricey', messages: user('hello'), max_tokens: 3 },
          }),
        ),
      );
      const served = answers.filter((a) => a.status === 200);
      const refused = answers.filter((a) => a.status !== 200);
      t.true(served.length >= 1, 'some were served');
      t.true(refused.length >= 1, 'the budget refused the rest');
      for (const r of refused) {
        t.is(r.status, 429, r.text);
        t.is(r.body.error.type, 'budget_exhausted', r.text);
        t.is(r.headers['x-svc-budget-scope'], 'team:crowd');
      }
      const charged = served.reduce((sum, a) => sum + Number(a.headers['x-svc-cost-micros']), 0);
      t.true(charged <= amount + reservation, `charged ${charged}`);
      // Settled before each answer: the store holds every served call's cost, once, and no reservation.
      const listed = await call(d.a.url, 'GET', '/v1/admin/budgets', { headers: bearer(admin) });
      const stored = (listed.body.data as Array<{ id: string; spentMicros: number; reservedMicros: number }>).find(
        (b) => b.id === made.body.id,
      )!;
      t.is(stored.spentMicros, charged, 'the stored spend is what the served calls cost');
      t.true(stored.spentMicros <= amount + reservation, `spent ${stored.spentMicros}`);
      t.is(stored.reservedMicros, 0, 'no reservation is left once every call has settled');
    } finally {
      await vendor.close();
    }
  });

  test.serial(
    `${name}: one rate limit across both: 40 gate requests and 40 public ones split over A and B, 20 of each answered, 20 refused`,
    async (t) => {
      // Limits of 20 a minute; the sign-in limit stays high for the console the agent is made with.
      const d = await deploy({ env: { SVC_GATE_RATE_PER_MINUTE: '20', SVC_PUBLIC_RATE_PER_MINUTE: '20' } });
      const bot = await agent(d);
      // Windows are whole minutes of the clock: all 80 requests are sent well inside one.
      await clearOfMinuteEdge(25_000);
      // Each request on a connection of its own, alternating A and B: on the workers' one port
      // the kernel spreads new connections over both workers (SO_REUSEPORT), so both count.
      const gate = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          ownConnection(i % 2 === 0 ? d.a : d.b, 'POST', '/v1/actions/authorize', {
            headers: { authorization: `Bearer ${bot.key}` },
            json: payment(10),
          }),
        ),
      );
      const decided = gate.filter((r) => r.status === 200);
      const limited = gate.filter((r) => r.status === 429);
      t.is(decided.length, 20, `answered: ${gate.map((r) => r.status).join(',')}`);
      t.is(limited.length, 20);
      for (const r of limited) {
        t.is((JSON.parse(r.text) as { error: { type: string } }).error.type, 'rate_limited', r.text);
        t.is(r.headers['ratelimit-limit'], '20');
        t.is(r.headers['ratelimit-remaining'], '0');
        t.true(Number(r.headers['retry-after']) >= 1, String(r.headers['retry-after']));
      }
      // One count for all: each place in the window was given once, whichever process counted it.
      const remaining = decided.map((r) => Number(r.headers['ratelimit-remaining'])).sort((x, y) => x - y);
      t.deepEqual(
        remaining,
        Array.from({ length: 20 }, (_, i) => i),
        'each count was given once, 19 down to 0',
      );

      // A public route (per client address): the same 127.0.0.1 through A and B.
      const jwks = await Promise.all(
        Array.from({ length: 40 }, (_, i) => ownConnection(i % 2 === 0 ? d.a : d.b, 'GET', '/.well-known/jwks.json')),
      );
      t.is(jwks.filter((r) => r.status === 200).length, 20, `answered: ${jwks.map((r) => r.status).join(',')}`);
      const refused = jwks.filter((r) => r.status === 429);
      t.is(refused.length, 20);
      for (const r of refused) t.is((JSON.parse(r.text) as { error: { type: string } }).error.type, 'rate_limited');
    },
  );
}

/** Waits, when the current minute has less than 25 s left, for the next one to begin. */
/** One request on a new TCP connection (no keep-alive pool): its status, headers and text. */
function ownConnection(
  server: Served,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; json?: unknown } = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  const body = options.json === undefined ? undefined : JSON.stringify(options.json);
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, server.url),
      {
        method,
        agent: false,
        headers: {
          ...options.headers,
          ...(body === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
