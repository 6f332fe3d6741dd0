import test from 'ava';
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { sign as octokitSign } from '@octokit/webhooks-methods';
import fc from 'fast-check';
import { exportJWK, FlattenedSign, generateKeyPair, type CryptoKey } from 'jose';
import Stripe from 'stripe';
import type { Server } from '@hapi/hapi';
import type { App } from '../../src/app.js';
import { SESSION_REVOKED } from '../../src/integrations/ssf/service.js';
import { tableNames } from '../../src/store/tables.js';
import { inProcessServer, type InProcess } from '../helpers/in-process.js';

/**
 * Hostile bodies under valid signatures, for every inbound kind (issue 15 item 2): each body is
 * signed with its sender's own scheme (node:crypto HMAC for svc-signature and Slack v0, the
 * `stripe` package's test signer, `@octokit/webhooks-methods`, jose for Security Event Tokens),
 * so it passes verification and reaches the parser. Mutations: lone surrogates in values and
 * keys, deep nesting, numbers JSON cannot carry (1e400) or carry exactly, wrong types, missing
 * fields. For every one:
 * - the answer is never a 5xx; a refusal has the documented error shape (`errors` on invalid_request);
 * - a refusal stores nothing (every table but the single-use claims of signatures, which a
 *   verified signature spends by design, is byte for byte as before);
 * - a redelivery (signed afresh where a signature is single-use) is answered the same.
 */
let running: InProcess;
let app: App;
let server: Server;
let wid: string;
const secrets = {} as Record<'issuer' | 'github' | 'chat-relay', string>;
const STRIPE_SECRET = 'whsec_workspace_fuzz_secret';
const BILLING_SECRET = 'whsec_billing_fuzz_secret';
const SLACK_SECRET = 'slack-signing-secret-fuzz';
const SSF = { issuer: 'https://idp.example', audience: 'https://svc.example' };
let ssfKey: CryptoKey;

const RUNS = 60;
const now = () => Math.floor(Date.now() / 1000);
/**
 * A timestamp no earlier delivery of this body used (within the five minutes allowed), for the
 * senders whose signatures are accepted once: a body replayed while fast-check shrinks, or
 * redelivered, is then still a fresh signature, as a sender's retry is.
 */
const used = new Set<string>();
function freshTime(body: string): number {
  for (let back = 0; back < 280; back += 1) {
    const t = now() - back;
    if (!used.has(`${t}:${body}`)) {
      used.add(`${t}:${body}`);
      return t;
    }
  }
  throw new Error('no fresh timestamp left for this body');
}

test.before(async () => {
  running = await inProcessServer({
    'billing.stripeSigningSecret': BILLING_SECRET,
    'rateLimits.publicPerMinute': 1_000_000,
  });
  app = running.app;
  server = running.http.server;
  const { people, agents, mandates, integrationRegistry: registry, cards, github } = app.services;
  const made = await people.createWorkspace({
    name: 'Fuzz',
    ownerEmail: 'fuzz@example.com',
    ownerPassword: 'fuzz password 1234',
  });
  wid = made.workspaceId;
  const actor = `user:${made.ownerId}`;
  const who = { actor, role: 'owner' as const, userId: made.ownerId };
  const agent = await agents.create({ workspaceId: wid, name: 'card-bot', actsFor: made.ownerId }, who);
  await mandates.put(
    wid,
    agent.id,
    { rules: [{ actions: ['payment'], merchants: ['*'], currencies: ['EUR'], maxAmount: 5000 }], confirmBroaden: true },
    who,
  );
  for (const kind of ['issuer', 'github'] as const)
    secrets[kind] = (await registry.configure(wid, kind, {}, actor)).secret!;
  secrets['chat-relay'] = (
    await registry.configure(wid, 'chat-relay', { config: { url: 'https://relay.example/cards' } }, actor)
  ).secret!;
  await registry.configure(wid, 'stripe', { signingSecret: STRIPE_SECRET }, actor);
  await registry.configure(wid, 'slack', { signingSecret: SLACK_SECRET }, actor);
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  ssfKey = privateKey;
  const jwk = { ...(await exportJWK(publicKey)), kid: 'fuzz', alg: 'ES256', use: 'sig' };
  await registry.configure(wid, 'ssf', { config: { ...SSF, jwks: { keys: [jwk] } } }, actor);
  await cards.mapCard(wid, 'issuer', 'card_fuzz', agent.id, actor);
  await cards.mapCard(wid, 'stripe', 'ic_fuzz', agent.id, actor);
  await github.mapBot(wid, 'fuzz-bot', agent.id, actor);
  await server.initialize();
});

test.after.always(() => running?.close());

// Signing, each with the sender's own scheme

const svcSign = (secret: string, body: string, t = now()) =>
  `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;
const slackSign = (body: string, ts: string) =>
  `v0=${createHmac('sha256', SLACK_SECRET).update(`v0:${ts}:${body}`).digest('hex')}`;

interface Delivery {
  url: string;
  headers: Record<string, string>;
  payload: string;
}

/**
 * How each kind is delivered: `attempt` is 0 for the first delivery and 1 for the redelivery
 * (signed afresh where each signature is accepted once).
 */
interface Kind {
  name: string;
  /** Events this sender really sends, before mutation. */
  events: fc.Arbitrary<Record<string, unknown>>;
  deliver(json: string, attempt: number): Promise<Delivery>;
  /** A redelivery of an accepted event gets the very same answer (processed once by its id). */
  sameAnswerTwice: boolean;
}

const json = { 'content-type': 'application/json' };
let seq = 0;
const next = () => `${Date.now()}x${(seq += 1)}`;

/** Any code point, lone surrogates included (valid in JSON text as \uXXXX escapes). */
const anyChar = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 0x10ffff }).map((cp) => String.fromCodePoint(cp)) },
  { weight: 1, arbitrary: fc.integer({ min: 0xd800, max: 0xdfff }).map((u) => String.fromCharCode(u)) },
);
/** Free text as senders send it: mostly plain, sometimes any code point, lone surrogates included. */
const text = (options: { minLength?: number; maxLength?: number } = {}) =>
  fc.oneof(
    fc.string({ minLength: options.minLength ?? 0, maxLength: options.maxLength ?? 20 }),
    fc.string({ unit: anyChar, minLength: options.minLength ?? 1, maxLength: options.maxLength ?? 20 }),
  );
const merchantName = fc.oneof(fc.constantFrom('Acme', 'Café Ünïcode', '東京 Books', '😀 Shop'), text({ minLength: 1 }));
const issuerEvents = fc.record({
  id: fc.constant(null).map(() => `evt_${next()}`),
  type: fc.constantFrom('authorization.request', 'charge.posted', 'charge.refunded'),
  cardId: fc.oneof({ weight: 3, arbitrary: fc.constant('card_fuzz') }, fc.constant('card_unmapped')),
  amount: fc.integer({ min: 1, max: 9000 }),
  currency: fc.constant('EUR'),
  merchant: fc.record({
    name: merchantName,
    domain: fc.constantFrom('acme.example', null),
    mcc: fc.constantFrom('5734', null),
  }),
  createdAt: fc.constant(null).map(() => new Date().toISOString()),
});

const stripeMerchant = fc.record({
  name: merchantName,
  url: fc.constantFrom('https://acme.example', null),
  category_code: fc.constant('5734'),
  network_id: fc.constant('1234567890'),
});
const stripeEvent = (type: string, object: fc.Arbitrary<Record<string, unknown>>) =>
  fc.record({
    id: fc.constant(null).map(() => `evt_fuzz${next().replace('x', '_')}`),
    object: fc.constant('event'),
    api_version: fc.constant('2025-06-30.basil'),
    created: fc.constant(null).map(now),
    livemode: fc.constant(false),
    type: fc.constant(type),
    data: fc.record({ object }),
  });
const subscriptionObject = fc.record({
  id: fc.constantFrom('sub_fuzz', 'sub_other'),
  object: fc.constant('subscription'),
  customer: fc.constant('cus_fuzz'),
  status: fc.constantFrom('active', 'canceled', 'past_due'),
  metadata: fc.constant(null).map(() => ({ workspaceId: wid, plan: 'pro' })),
  items: fc.constant({ data: [{ price: { id: 'price_1', lookup_key: 'pro' } }] }),
});
const stripeEvents = fc.oneof(
  stripeEvent(
    'issuing_authorization.request',
    fc.record({
      id: fc.constant(null).map(() => `iauth_${next().replace('x', '_')}`),
      card: fc.constantFrom({ id: 'ic_fuzz' }, 'ic_unmapped'),
      amount: fc.constant(0),
      currency: fc.constant('eur'),
      pending_request: fc.record({ amount: fc.integer({ min: 1, max: 9000 }), currency: fc.constant('eur') }),
      merchant_data: stripeMerchant,
    }),
  ),
  stripeEvent(
    'issuing_transaction.created',
    fc.record({
      id: fc.constant(null).map(() => `ipi_${next().replace('x', '_')}`),
      type: fc.constantFrom('capture', 'refund'),
      card: fc.constant('ic_fuzz'),
      amount: fc.integer({ min: -9000, max: 9000 }),
      currency: fc.constant('eur'),
      merchant_data: stripeMerchant,
      created: fc.constant(null).map(now),
    }),
  ),
  stripeEvent('customer.subscription.updated', subscriptionObject),
  stripeEvent(
    'invoice.payment_failed',
    fc.record({ id: fc.constant('in_fuzz'), subscription: fc.constantFrom('sub_fuzz', 'sub_unknown') }),
  ),
);

const sender = fc.record({ login: fc.oneof(fc.constantFrom('fuzz-bot', 'someone'), text()) });
const repository = fc.constant({ full_name: 'acme/app', html_url: 'https://github.com/acme/app' });
const sha = fc.constant('a'.repeat(40));
const githubEvents = fc.oneof(
  fc.record({ _event: fc.constant('push'), sender, repository, ref: text({ minLength: 1 }), after: sha }),
  fc.record({
    _event: fc.constant('pull_request'),
    sender,
    repository,
    action: fc.constantFrom('opened', 'closed'),
    number: fc.integer({ min: 1, max: 1000 }),
    pull_request: fc.constant({ head: { sha: 'a'.repeat(40), ref: 'feature' }, base: { ref: 'main' }, title: 'x' }),
  }),
  fc.record({
    _event: fc.constant('deployment'),
    sender,
    repository,
    deployment: fc.record({ id: fc.integer({ min: 1 }), environment: text() }),
  }),
  fc.record({
    _event: fc.constant('deployment_protection_rule'),
    action: fc.constant('requested'),
    sender,
    repository,
    environment: fc.oneof(fc.constant('production'), text({ minLength: 1 })),
    deployment_callback_url: fc.constant(
      'https://api.github.com/repos/acme/app/actions/runs/1/deployment_protection_rule',
    ),
  }),
  fc.record({ _event: fc.constant('ping'), zen: text(), hook_id: fc.integer() }),
);

const relayEvents = fc.record({
  token: text({ maxLength: 60 }),
  user: fc.record({ platform: fc.constantFrom('teams', 'discord'), id: fc.constantFrom('U1', 'someone@x') }),
  note: fc.oneof(text(), fc.constant(null)),
  clickId: fc.constant(null).map(next),
});

const slackEvents = fc.record({
  type: fc.constant('block_actions'),
  user: fc.record({ id: fc.constantFrom('U123', 'UFUZZ') }),
  team: fc.record({ id: fc.oneof(fc.constant('T1'), text({ maxLength: 10 })) }),
  actions: fc.tuple(
    fc.record({ action_id: fc.constantFrom('approve', 'deny'), value: text({ minLength: 1, maxLength: 60 }) }),
  ),
});

const ssfEvents = fc.record({
  iss: fc.constant(SSF.issuer),
  aud: fc.constant(SSF.audience),
  jti: fc.constant(null).map(() => randomUUID()),
  sub_id: fc.record({ format: fc.constant('email'), email: fc.constantFrom('nobody@example.com', 'fuzz@example.com') }),
  events: fc.record({
    [SESSION_REVOKED]: fc.record({ event_timestamp: fc.constant(null).map(now), reason_admin: text() }),
  }),
});

/** The GitHub event name rides in the body while it is mutated (never mutated itself), and moves to its header. */
function githubSplit(text: string): { event: string; body: string } {
  const marker = /"_event":"([a-z_]+)",?/.exec(text);
  if (!marker) return { event: 'push', body: text };
  return { event: marker[1]!, body: text.replace(marker[0], '').replace(/,}$/, '}') };
}

const KINDS: Kind[] = [
  {
    name: 'issuer',
    events: issuerEvents,
    sameAnswerTwice: true,
    async deliver(payload) {
      return {
        url: `/v1/hooks/issuer/${wid}`,
        headers: { ...json, 'svc-signature': svcSign(secrets.issuer, payload) },
        payload,
      };
    },
  },
  {
    name: 'stripe',
    events: stripeEvents,
    sameAnswerTwice: true,
    async deliver(payload) {
      const header = Stripe.webhooks.generateTestHeaderString({ payload, secret: STRIPE_SECRET, timestamp: now() });
      return { url: `/v1/hooks/stripe/${wid}`, headers: { ...json, 'stripe-signature': header }, payload };
    },
  },
  {
    name: 'stripe billing',
    events: stripeEvent('customer.subscription.updated', subscriptionObject),
    sameAnswerTwice: true,
    async deliver(payload) {
      const header = Stripe.webhooks.generateTestHeaderString({ payload, secret: BILLING_SECRET, timestamp: now() });
      return { url: '/v1/hooks/stripe/billing', headers: { ...json, 'stripe-signature': header }, payload };
    },
  },
  {
    name: 'github',
    events: githubEvents,
    sameAnswerTwice: true,
    async deliver(text) {
      const { event, body } = githubSplit(text);
      return {
        url: `/v1/hooks/github/${wid}`,
        headers: {
          ...json,
          'x-hub-signature-256': await octokitSign(secrets.github, body),
          'x-github-event': event,
          'x-github-delivery': randomUUID(),
        },
        payload: body,
      };
    },
  },
  {
    name: 'chat-relay',
    events: relayEvents,
    sameAnswerTwice: false,
    async deliver(payload) {
      return {
        url: `/v1/hooks/chat-relay/${wid}`,
        headers: { ...json, 'svc-signature': svcSign(secrets['chat-relay'], payload, freshTime(payload)) },
        payload,
      };
    },
  },
  {
    name: 'slack',
    events: slackEvents,
    sameAnswerTwice: false,
    async deliver(text) {
      const body = new URLSearchParams({ payload: text }).toString();
      const ts = String(freshTime(body));
      return {
        url: '/v1/hooks/slack',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'x-slack-signature': slackSign(body, ts),
          'x-slack-request-timestamp': ts,
        },
        payload: body,
      };
    },
  },
  {
    name: 'ssf',
    events: ssfEvents,
    sameAnswerTwice: false,
    async deliver(text) {
      // The claims as mutated (raw numbers included), signed as an identity provider signs a SET.
      const jws = await new FlattenedSign(Buffer.from(text.replace(/"__IAT__"/g, String(now()))))
        .setProtectedHeader({ alg: 'ES256', kid: 'fuzz', typ: 'secevent+jwt' })
        .sign(ssfKey);
      return {
        url: `/v1/hooks/ssf/${wid}`,
        headers: { 'content-type': 'application/secevent+jwt' },
        payload: `${jws.protected}.${jws.payload}.${jws.signature}`,
      };
    },
  },
];

// Mutations

/** Every path to a value in a JSON value (the root is []). */
function pathsOf(value: unknown, at: string[] = []): string[][] {
  const out = [at];
  if (value && typeof value === 'object')
    for (const [key, child] of Object.entries(value)) out.push(...pathsOf(child, [...at, key]));
  return out;
}

/** Raw JSON number texts: too big for a double (Infinity), or past exact integers. */
const RAW_NUMBERS = ['1e400', '-1e400', '123456789012345678901234567890', '1e-400', '9007199254740993'];
const lone = fc.integer({ min: 0xd800, max: 0xdfff }).map((u) => String.fromCharCode(u));

type Mutation =
  | { op: 'lone'; at: number; prefix: string; unit: string }
  | { op: 'loneKey'; at: number; unit: string }
  | { op: 'deep'; at: number; depth: number }
  | { op: 'raw'; at: number; text: string }
  | { op: 'type'; at: number; value: unknown }
  | { op: 'drop'; at: number };

// Lone surrogates weigh most: they are what reaches the gate and the ledger past any schema.
const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('lone' as const),
      at: fc.nat(),
      prefix: fc.constantFrom('', 'Acme ', '😀'),
      unit: lone,
    }),
  },
  fc.record({ op: fc.constant('loneKey' as const), at: fc.nat(), unit: lone }),
  // Up to three of these may nest inside one another: at most 3,000 levels in all, which the
  // harness's own recursive walks (finding a mutation's place, fast-check's reporting) can take.
  fc.record({ op: fc.constant('deep' as const), at: fc.nat(), depth: fc.integer({ min: 60, max: 1000 }) }),
  fc.record({ op: fc.constant('raw' as const), at: fc.nat(), text: fc.constantFrom(...RAW_NUMBERS) }),
  fc.record({
    op: fc.constant('type' as const),
    at: fc.nat(),
    value: fc.constantFrom(null, true, 0, -1, 1.5, '', 'x', [], {}, [1, 2], { id: 'x' }),
  }),
  fc.record({ op: fc.constant('drop' as const), at: fc.nat() }),
);

/** Applies the mutations to a copy of `event` and answers the JSON text (raw numbers spliced in). */
type Json = Record<string, unknown> | unknown[];
const at = (root: unknown, path: string[]): unknown =>
  path.reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined), root);

function mutate(event: Record<string, unknown>, mutations: Mutation[]): string {
  let root: unknown = structuredClone(event);
  const raws: string[] = [];
  for (const m of mutations) {
    const all = pathsOf(root).filter((p) => p[0] !== '_event');
    // A lone surrogate goes where text is read: into a string, when the value has one.
    const strings = all.filter((p) => typeof at(root, p) === 'string');
    const paths = m.op === 'lone' && strings.length > 0 ? strings : all;
    const path = paths[m.at % paths.length]!;
    const parentPath = path.slice(0, -1);
    const key = path.at(-1);
    const found = at(root, parentPath);
    const parent = found && typeof found === 'object' ? (found as Json) : undefined;
    const set = (value: unknown) => {
      if (key === undefined) root = value;
      else if (parent) (parent as Record<string, unknown>)[key] = value;
    };
    const current = key === undefined ? root : at(root, path);
    switch (m.op) {
      case 'lone':
        set(`${typeof current === 'string' ? current : m.prefix}${m.unit}`);
        break;
      case 'loneKey':
        if (current && typeof current === 'object' && !Array.isArray(current))
          (current as Record<string, unknown>)[`k${m.unit}`] = 'v';
        else set({ [`k${m.unit}`]: 'v' });
        break;
      case 'deep': {
        let v: unknown = 'bottom';
        for (let i = 0; i < m.depth; i += 1) v = i % 2 ? [v] : { d: v };
        set(v);
        break;
      }
      case 'raw':
        raws.push(m.text);
        set(`__RAW_${raws.length - 1}__`);
        break;
      case 'type':
        set(structuredClone(m.value));
        break;
      case 'drop':
        if (key !== undefined && parent && typeof parent === 'object') {
          if (Array.isArray(parent)) parent.splice(Number(key), 1);
          else delete parent[key];
        }
        break;
    }
  }
  // JSON.stringify writes a lone surrogate as its \uXXXX escape: valid UTF-8 bytes, valid JSON.
  return JSON.stringify(root).replace(/"__RAW_(\d+)__"/g, (_m, i: string) => raws[Number(i)]!);
}

// What a refusal must leave as it was

/** A digest of every table but the single-use claims (which a verified signature spends by design). */
async function storeDigest(): Promise<string> {
  const hash = createHash('sha256');
  for (const name of tableNames) {
    // The refusal counts (integrationRefusals) are meant to change with each refusal: they are
    // the operator's view of refused requests, not anything of the request itself.
    if (name === 'hookOnce' || name === 'integrationRefusals') continue;
    hash.update(name).update(JSON.stringify(await app.store.tables[name].scan([])));
  }
  return hash.digest('hex');
}

const VALIDATION = new Set(['invalid_request', 'invalid_mandate', 'invalid_budget']);

function checkAnswer(kind: string, res: { statusCode: number; payload: string; headers: Record<string, unknown> }) {
  const fail = (why: string): never => {
    throw new Error(`${kind}: ${why}: ${res.statusCode} ${res.payload.slice(0, 400)}`);
  };
  if (res.statusCode >= 500) fail('server error');
  if (res.statusCode < 400) return;
  const e = (JSON.parse(res.payload) as { error?: Record<string, unknown> }).error ?? fail('no error object');
  if (typeof e?.type !== 'string' || typeof e.message !== 'string' || typeof e.fix !== 'string') fail('not SPEC 7.1');
  if (e.requestId !== res.headers['x-request-id']) fail('requestId differs from x-request-id');
  if (VALIDATION.has(String(e.type)) && (!Array.isArray(e.errors) || e.errors.length === 0)) fail('no errors');
}

/** fast-check's failure, with the property's own message in front (ava does not print an error's cause). */
async function assertShowingCause(run: Promise<void>): Promise<void> {
  try {
    await run;
  } catch (err) {
    const cause = (err as { cause?: unknown }).cause;
    throw new Error(`${cause instanceof Error ? cause.message : String(cause)}\n${(err as Error).message}`, {
      cause: err,
    });
  }
}

const inject = (d: Delivery) => server.inject({ method: 'POST', url: d.url, headers: d.headers, payload: d.payload });

for (const kind of KINDS) {
  test.serial(`${kind.name}: signed hostile bodies are never a 5xx, and a refusal stores nothing`, async (t) => {
    let refused = 0;
    await assertShowingCause(
      fc.assert(
        fc.asyncProperty(
          kind.events.map((e) => (kind.name === 'ssf' ? { ...e, iat: '__IAT__' } : e)),
          fc.array(mutation, { minLength: 0, maxLength: 3 }),
          async (event, mutations) => {
            const text = mutate(event, mutations);
            const before = await storeDigest();
            const first = await inject(await kind.deliver(text, 0));
            checkAnswer(kind.name, first);
            const again = await inject(await kind.deliver(text, 1));
            checkAnswer(`${kind.name} (redelivered)`, again);
            if (first.statusCode >= 400) {
              refused += 1;
              if ((await storeDigest()) !== before)
                throw new Error(`${kind.name}: a refused delivery changed the store: ${text}`);
              const [a, b] = [JSON.parse(first.payload).error, JSON.parse(again.payload).error];
              if (
                again.statusCode !== first.statusCode ||
                a.type !== b.type ||
                JSON.stringify(a.errors) !== JSON.stringify(b.errors)
              )
                throw new Error(
                  `${kind.name}: redelivery answered ${again.statusCode} ${again.payload}, first ${first.payload}`,
                );
            } else if (kind.sameAnswerTwice && again.payload !== first.payload) {
              throw new Error(`${kind.name}: redelivery answered ${again.payload}, first ${first.payload}`);
            }
          },
        ),
        { numRuns: RUNS },
      ),
    );
    t.true(refused > 0, 'some mutated bodies were refused');
  });
}

test.serial(
  'the lone surrogate of the report: refused by field, the same on every redelivery, nothing stored',
  async (t) => {
    for (const type of ['authorization.request', 'charge.posted']) {
      const event = {
        id: `evt_lone_${type.replace('.', '_')}`,
        type,
        cardId: 'card_fuzz',
        amount: 1250,
        currency: 'EUR',
        merchant: { name: 'Acme \ud800', domain: null, mcc: '5734' },
        createdAt: new Date().toISOString(),
      };
      const body = JSON.stringify(event);
      t.true(body.includes('\\ud800'), 'sent as the JSON escape, in valid UTF-8');
      const before = await storeDigest();
      for (let attempt = 0; attempt < 3; attempt += 1) {
        const res = await inject(await KINDS[0]!.deliver(body, attempt));
        t.is(res.statusCode, 400, `${type} attempt ${attempt}: ${res.payload}`);
        const error = JSON.parse(res.payload).error;
        t.is(error.type, 'invalid_request');
        t.deepEqual(
          error.errors.map((e: { field: string }) => e.field),
          ['merchant.name'],
        );
        t.is(error.requestId, res.headers['x-request-id']);
      }
      t.is(await storeDigest(), before, `${type}: nothing stored`);
    }
  },
);
