import test from 'ava';
import { SignJWT, base64url } from 'jose';
import { authorize } from '../helpers/gate.js';
import { assertError, ownerSession } from '../helpers/http.js';
import { consoleClient, expectStatus, type ConsoleClient } from '../helpers/console.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { stopAndClean } from '../helpers/process.js';
import { owner, recordsBy, type Agent } from '../gate/support.js';
import {
  certificates,
  chain,
  ed25519,
  issueClosed,
  issueOpen,
  newKeys,
  publicOnly,
  sha256,
  type KeyPair,
} from './issuer.js';

/**
 * AP2 in (docs/ap2.md), through the real server: an owner trusts an issuer
 * (PUT /api/w/{wid}/ap2/settings), registers an agent's holder key
 * (PUT /api/w/{wid}/agents/{aid}/ap2/holder-key), imports a person's open Payment Mandate
 * (POST /api/w/{wid}/agents/{aid}/mandate/ap2, listed by GET) whose constraints become the
 * agent's rules, and the agent presents closed mandates at POST /v1/actions/authorize. Every bad
 * credential is refused naming what is wrong, and nothing is stored.
 */

let now = Date.now();
let server: ServedInProcess;
let ws: ConsoleClient;
let issuer: KeyPair;
let stranger: KeyPair;

/** Moves the clock by days; the owner signs in again (the session ended meanwhile). */
async function laterByDays(days: number): Promise<void> {
  now += days * 86_400_000;
  ws = consoleClient(server, server.boot.workspaceId!, await ownerSession(server));
}
const sec = () => Math.floor(now / 1000);
const ISS = 'https://wallet.example';

test.before(async () => {
  server = await serveInProcess({ clock: { now: () => now } });
  ws = consoleClient(server, server.boot.workspaceId!, await owner(server));
  issuer = await newKeys();
  stranger = await newKeys();
  expectStatus(
    await ws.send('PUT', '/ap2/settings', {
      issuers: [{ name: 'Test wallet', iss: ISS, jwks: { keys: [publicOnly(issuer.publicKey, 'issuer-1')] } }],
    }),
    200,
    'settings',
  );
});

test.after.always(() => stopAndClean(server));

const RANGE = { type: 'payment.amount_range', currency: 'USD', max: 10_000, min: 500 };
const PAYEES = {
  type: 'payment.allowed_payees',
  allowed: [
    { id: 'm1', name: 'Acme', website: 'https://acme.example' },
    { id: 'm2', name: 'Shop', website: 'https://shop.example/store' },
  ],
};
const REFERENCE = { type: 'payment.reference', conditional_transaction_id: 'A4wG4B-checkout' };

/** An agent and its key, made through the console by the owner signed in now. */
async function newAgent(name: string): Promise<Agent> {
  const agent = expectStatus(await ws.send('POST', '/agents', { name }), 201, 'agent');
  const key = expectStatus(await ws.send('POST', `/agents/${agent.body.id}/keys`, {}), 201, 'key');
  return { wid: ws.wid, cookie: ws.cookie, agentId: agent.body.id, key: key.body.key, keyId: key.body.id };
}

/** An agent with a registered holder key. */
async function holderAgent(name: string): Promise<Agent & { holder: KeyPair }> {
  const agent = await newAgent(name);
  const holder = await newKeys();
  expectStatus(
    await ws.send('PUT', `/agents/${agent.agentId}/ap2/holder-key`, { jwk: publicOnly(holder.publicKey) }),
    200,
    'holder key',
  );
  return { ...agent, holder };
}

const open = (holder: KeyPair, constraints: unknown[], extra: Partial<Parameters<typeof issueOpen>[1]> = {}) =>
  issueOpen(
    { jwk: issuer.privateKey, header: { kid: 'issuer-1' } },
    {
      constraints,
      cnf: holder.publicKey,
      iatSeconds: sec(),
      expSeconds: sec() + 86_400 * 10,
      iss: ISS,
      payeesAt: 1,
      ...extra,
    },
  );

const importIt = (agentId: string, credential: string) =>
  ws.send('POST', `/agents/${agentId}/mandate/ap2`, { credential });

let nonces = 0;
const closedFor = (
  a: { wid: string; holder: KeyPair },
  openText: string,
  amount: number,
  website = 'https://acme.example',
  extra = {},
) =>
  issueClosed({
    open: openText,
    holder: a.holder.privateKey,
    aud: `urn:svc:workspace:${a.wid}`,
    nonce: `nonce-${(nonces += 1)}-${Math.random()}`,
    iatSeconds: sec(),
    amount,
    currency: 'USD',
    website,
    ...extra,
  });

const pay = (amount: number, merchant = 'acme.example', extra: Record<string, unknown> = {}) => ({
  type: 'payment',
  summary: `Pay ${amount}`,
  payment: { amount, currency: 'USD', merchant },
  ...extra,
});

/** Nothing stored: no imported mandate, no rule, no ledger record by the importer since `before`. */
async function nothingImported(t: import('ava').ExecutionContext, agentId: string, ledgerBefore: number) {
  t.deepEqual((await ws.get(`/agents/${agentId}/mandate/ap2`)).body.data, []);
  t.deepEqual((await ws.get(`/agents/${agentId}/mandate`)).body.rules, []);
  t.is((await ws.ledger()).length, ledgerBefore);
}

test.serial('an imported open mandate becomes rules with their source, shown and recorded', async (t) => {
  const a = await holderAgent('importer');
  const cred = await open(a.holder, [RANGE, PAYEES, REFERENCE]);
  const res = await importIt(a.agentId, cred);
  t.is(res.status, 201, res.text);
  t.regex(res.body.id, /^ap2_[0-9A-Za-z]{22}$/);
  t.is(res.body.credentialHash, sha256(cred.split('~')[0]!));
  t.is(res.body.issuer, ISS);
  t.is(res.body.vct, 'mandate.payment.open.1');
  const mandate = (await ws.get(`/agents/${a.agentId}/mandate`)).body;
  t.is(mandate.rules.length, 1);
  const rule = mandate.rules[0];
  t.deepEqual(rule.actions, ['payment']);
  t.deepEqual(rule.merchants, ['acme.example', 'shop.example']);
  t.deepEqual(rule.currencies, ['USD']);
  t.is(rule.maxAmount, 10_000);
  t.is(rule.minAmount, 500);
  t.like(rule.source, { kind: 'ap2', mandateId: res.body.id, credentialHash: res.body.credentialHash, issuer: ISS });
  t.deepEqual(res.body.ruleIds, [rule.id]);
  const listed = (await ws.get(`/agents/${a.agentId}/mandate/ap2`)).body.data;
  t.is(listed.length, 1);
  const record = (await ws.ledger()).find((r) => r.kind === 'ap2.mandate.imported' && r.subject === a.agentId)!;
  t.like(record.data, { mandateId: res.body.id, credentialHash: res.body.credentialHash, issuer: ISS });
  const updated = (await ws.ledger()).filter((r) => r.kind === 'mandate.updated' && r.subject === a.agentId).at(-1)!;
  t.like((updated.data.rules as Array<Record<string, unknown>>)[0]!.source, {
    credentialHash: res.body.credentialHash,
  });

  // The rule holds like any other, presented or not.
  t.is((await authorize(server, a.key, pay(2_000))).body.decision, 'allow');
  t.deepEqual((await authorize(server, a.key, pay(20_000))).body.signals, ['over_limit']);
  t.deepEqual((await authorize(server, a.key, pay(100))).body.signals, ['under_minimum']);
  t.deepEqual((await authorize(server, a.key, pay(2_000, 'evil.example'))).body.signals, ['merchant_not_allowed']);
  // The same credential twice is refused.
  assertError(t, await importIt(a.agentId, cred), 422, 'invalid_mandate_credential');
});

test.serial(
  'a closed mandate presented at authorize is verified, decided, and its key-binding JWT used once',
  async (t) => {
    const a = await holderAgent('presenter');
    const cred = await open(a.holder, [RANGE, PAYEES, REFERENCE]);
    const imported = expectStatus(await importIt(a.agentId, cred), 201, 'import').body;
    const closed = await closedFor(a, cred, 2_500);
    const body = pay(2_500, 'acme.example', { ap2: { mandate: chain(cred, closed) } });
    const res = await authorize(server, a.key, body);
    t.is(res.status, 200, res.text);
    t.is(res.body.decision, 'allow');
    const records = await recordsBy(server, a);
    t.is(records.at(-1)!.data.ap2Mandate, imported.id);

    // Replayed: refused, nothing decided or stored.
    const replay = await authorize(server, a.key, body);
    assertError(t, replay, 409, 'key_binding_replayed');
    t.is((await recordsBy(server, a)).length, records.length);

    // A new presentation of the same (non-recurring) open mandate after an allow: refused.
    const again = await authorize(
      server,
      a.key,
      pay(2_500, 'acme.example', { ap2: { mandate: chain(cred, await closedFor(a, cred, 2_500)) } }),
    );
    assertError(t, again, 409, 'presentation_refused');
    t.regex(again.body.error.message, /closes once/);
    t.is((await recordsBy(server, a)).length, records.length);
  },
);

test.serial('instrument constraints need a presented closed mandate, whose instrument must be allowed', async (t) => {
  const a = await holderAgent('instrumented');
  const card = { id: 'card-1', type: 'card', description: 'Card 4242' };
  const cred = await open(
    a.holder,
    [RANGE, { type: 'payment.allowed_payment_instruments', allowed: [card] }, REFERENCE],
    { payeesAt: undefined },
  );
  expectStatus(await importIt(a.agentId, cred), 201, 'import');
  t.deepEqual((await authorize(server, a.key, pay(1_000))).body.signals, ['presentation_required']);
  const other = await closedFor(a, cred, 1_000, 'https://acme.example', {
    extra: { payment_instrument: { ...card, id: 'card-2' } },
  });
  const wrong = await authorize(server, a.key, pay(1_000, 'acme.example', { ap2: { mandate: chain(cred, other) } }));
  assertError(t, wrong, 422, 'mandate_mismatch');
  const ok = await authorize(
    server,
    a.key,
    pay(1_000, 'acme.example', { ap2: { mandate: chain(cred, await closedFor(a, cred, 1_000)) } }),
  );
  t.is(ok.body.decision, 'allow', ok.text);
});

// Bad credentials at import: each refused naming what is wrong, nothing stored.

async function refusedImport(
  t: import('ava').ExecutionContext,
  credential: string,
  status: number,
  type: string,
  says: RegExp,
  agent?: Agent,
) {
  const a = agent ?? (await holderAgent(`bad-${Math.random().toString(36).slice(2, 8)}`));
  const before = (await ws.ledger()).length;
  const res = await importIt(a.agentId, credential);
  assertError(t, res, status, type);
  t.regex(res.body.error.message, says);
  await nothingImported(t, a.agentId, before);
}

test.serial('a forged credential (signed by another key under the trusted kid) is refused', async (t) => {
  const a = await holderAgent('forged');
  const forged = await issueOpen(
    { jwk: stranger.privateKey, header: { kid: 'issuer-1' } },
    { constraints: [RANGE, REFERENCE], cnf: a.holder.publicKey, iatSeconds: sec(), expSeconds: sec() + 600, iss: ISS },
  );
  await refusedImport(t, forged, 422, 'invalid_mandate_credential', /signature does not verify/, a);
  // An altered payload under the real signature: refused too.
  const real = await open(a.holder, [RANGE, REFERENCE], { payeesAt: undefined });
  const [jwt, ...rest] = real.split('~');
  const [h, p, s] = jwt!.split('.');
  const claims = JSON.parse(Buffer.from(p!, 'base64url').toString());
  claims.iss = 'https://evil.example';
  const altered = [[h, base64url.encode(JSON.stringify(claims)), s].join('.'), ...rest].join('~');
  await refusedImport(t, altered, 422, 'invalid_mandate_credential', /signature does not verify/, a);
});

test.serial('an expired credential is refused', async (t) => {
  const a = await holderAgent('expired');
  const cred = await open(a.holder, [RANGE, REFERENCE], {
    payeesAt: undefined,
    iatSeconds: sec() - 7200,
    expSeconds: sec() - 3600,
  });
  await refusedImport(t, cred, 422, 'invalid_mandate_credential', /expired at/, a);
});

test.serial("a credential bound to another key than the agent's holder key is refused", async (t) => {
  const a = await holderAgent('wrongly-bound');
  const cred = await open(stranger, [RANGE, REFERENCE], { payeesAt: undefined });
  await refusedImport(t, cred, 422, 'invalid_mandate_credential', /another key/, a);
});

test.serial('an over-disclosed credential (a disclosure nothing references) is refused', async (t) => {
  const a = await holderAgent('over-disclosed');
  const cred = await open(a.holder, [RANGE, REFERENCE], { payeesAt: undefined });
  const extra = base64url.encode(JSON.stringify(['salt-123', 'ssn', '078-05-1120']));
  await refusedImport(t, `${cred}${extra}~`, 422, 'invalid_mandate_credential', /over-disclosed/, a);
});

test.serial('algorithm confusion is refused by name: none, HS256 keyed with the public key, EdDSA', async (t) => {
  const a = await holderAgent('confused');
  const real = await open(a.holder, [RANGE, REFERENCE], { payeesAt: undefined });
  const [jwt, ...rest] = real.split('~');
  const payload = JSON.parse(Buffer.from(jwt!.split('.')[1]!, 'base64url').toString());
  const none = `${base64url.encode(JSON.stringify({ alg: 'none', kid: 'issuer-1' }))}.${jwt!.split('.')[1]}.`;
  await refusedImport(t, [none, ...rest].join('~'), 422, 'invalid_mandate_credential', /alg none/, a);
  const publicKeyBytes = new TextEncoder().encode(JSON.stringify(publicOnly(issuer.publicKey, 'issuer-1')));
  const hs = await new SignJWT(payload).setProtectedHeader({ alg: 'HS256', kid: 'issuer-1' }).sign(publicKeyBytes);
  await refusedImport(t, [hs, ...rest].join('~'), 422, 'invalid_mandate_credential', /HS256/, a);
  const ed = await new SignJWT(payload)
    .setProtectedHeader({ alg: 'EdDSA', kid: 'issuer-1' })
    .sign(ed25519().privateKey);
  await refusedImport(t, [ed, ...rest].join('~'), 422, 'invalid_mandate_credential', /EdDSA/, a);
});

test.serial(
  'an untrusted kid, another vct, an unknown constraint, and text that is no SD-JWT are refused',
  async (t) => {
    const a = await holderAgent('misc');
    const untrusted = await issueOpen(
      { jwk: issuer.privateKey, header: { kid: 'someone-else' } },
      { constraints: [RANGE], cnf: a.holder.publicKey, iatSeconds: sec() },
    );
    await refusedImport(t, untrusted, 422, 'invalid_mandate_credential', /no trusted issuer/, a);
    const closedVct = await open(a.holder, [RANGE], { payeesAt: undefined, vct: 'mandate.payment.1' });
    await refusedImport(
      t,
      closedVct,
      422,
      'invalid_mandate_credential',
      /vct "mandate.payment.1" is not mandate.payment.open.1/,
      a,
    );
    const unknown = await open(a.holder, [RANGE, { type: 'payment.loyalty_points', max: 3 }], { payeesAt: undefined });
    await refusedImport(t, unknown, 422, 'unresolved_constraint', /does not know the constraint/, a);
    await refusedImport(t, 'not a credential', 400, 'malformed_mandate_credential', /not a compact SD-JWT/, a);
    await refusedImport(t, 'abc.def~', 400, 'malformed_mandate_credential', /compact JWT/, a);
  },
);

test.serial('an agent without a registered holder key cannot be given an AP2 mandate', async (t) => {
  const a = await newAgent('keyless');
  const holder = await newKeys();
  const cred = await open(holder, [RANGE, REFERENCE], { payeesAt: undefined });
  const before = (await ws.ledger()).length;
  assertError(t, await importIt(a.agentId, cred), 409, 'holder_key_required');
  await nothingImported(t, a.agentId, before);
});

// Bad presentations at authorize: each refused naming what is wrong, nothing decided or stored.

test.serial('bad closed mandates are refused naming the fault, with no action recorded', async (t) => {
  const a = await holderAgent('bad-presenter');
  const cred = await open(a.holder, [RANGE, PAYEES, REFERENCE]);
  expectStatus(await importIt(a.agentId, cred), 201, 'import');
  const before = (await recordsBy(server, a)).length;
  const present = (closed: string, amount = 1_000, openText = cred) =>
    authorize(server, a.key, pay(amount, 'acme.example', { ap2: { mandate: chain(openText, closed) } }));
  const cases: Array<[string, Promise<string>, number, string, RegExp, number?, string?]> = [
    [
      'signed by another key',
      issueClosed({
        open: cred,
        holder: stranger.privateKey,
        aud: `urn:svc:workspace:${a.wid}`,
        nonce: 'nonce-stranger-1',
        iatSeconds: sec(),
        amount: 1_000,
        currency: 'USD',
        website: 'https://acme.example',
      }),
      422,
      'invalid_mandate_credential',
      /not signed by the agent's holder key/,
    ],
    [
      'for another audience',
      closedFor(a, cred, 1_000, 'https://acme.example', { aud: 'https://merchant.example' }),
      422,
      'invalid_mandate_credential',
      /aud must be/,
    ],
    [
      'stale',
      closedFor(a, cred, 1_000, 'https://acme.example', { iatSeconds: sec() - 3_600 }),
      422,
      'invalid_mandate_credential',
      /stale/,
    ],
    [
      'bound to another open mandate',
      closedFor(a, cred, 1_000, 'https://acme.example', { sdHash: sha256('something else') }),
      422,
      'invalid_mandate_credential',
      /wrongly bound/,
    ],
    ['for another amount', closedFor(a, cred, 2_000), 422, 'mandate_mismatch', /not 1000 USD/],
    [
      'for another payee',
      closedFor(a, cred, 1_000, 'https://shop.example'),
      422,
      'mandate_mismatch',
      /not acme.example/,
    ],
  ];
  for (const [what, closed, status, type, says] of cases) {
    const res = await present(await closed);
    assertError(t, res, status, type);
    t.regex(res.body.error.message, says, what);
  }
  const notImported = await open(a.holder, [RANGE, REFERENCE], { payeesAt: undefined });
  const res = await present(await closedFor(a, notImported, 1_000), 1_000, notImported);
  assertError(t, res, 422, 'invalid_mandate_credential');
  t.regex(res.body.error.message, /not imported/);
  assertError(
    t,
    await authorize(server, a.key, pay(1_000, 'acme.example', { ap2: { mandate: cred } })),
    400,
    'malformed_mandate_credential',
  );
  t.is((await recordsBy(server, a)).length, before, 'no decision was recorded');
  // The agent's own good presentation still goes through afterwards.
  t.is((await present(await closedFor(a, cred, 1_000))).body.decision, 'allow');
});

test.serial('trusted issuers and holder keys: malformed settings are refused by field', async (t) => {
  const a = await newAgent('settings');
  assertError(
    t,
    await ws.send('PUT', `/agents/${a.agentId}/ap2/holder-key`, { jwk: { ...issuer.privateKey } }),
    400,
    'invalid_trust_settings',
  );
  assertError(
    t,
    await ws.send('PUT', '/ap2/settings', { issuers: [{ name: 'no keys' }] }),
    400,
    'invalid_trust_settings',
  );
  const settings = (await ws.get('/ap2/settings')).body;
  t.is(settings.audience, `urn:svc:workspace:${ws.wid}`);
  t.is(settings.issuers[0].name, 'Test wallet');
  const key = (await ws.get(`/agents/${a.agentId}/ap2/holder-key`)).body;
  t.is(key.jwk, null);
});

test.serial(
  'an issuer trusted by certificate root: an x5c chain to the root verifies, another root does not',
  async (t) => {
    const pki = await certificates();
    expectStatus(
      await ws.send('PUT', '/ap2/settings', {
        issuers: [
          { name: 'Test wallet', iss: ISS, jwks: { keys: [publicOnly(issuer.publicKey, 'issuer-1')] } },
          { name: 'Bank', x5cRoots: [pki.rootPem] },
        ],
      }),
      200,
      'settings with a root',
    );
    const a = await holderAgent('x5c');
    const signed = (leaf: typeof pki.leaf, cnf = a.holder.publicKey) =>
      issueOpen(
        { keyObject: leaf.key, header: { x5c: [leaf.der] } },
        {
          constraints: [RANGE, REFERENCE],
          cnf,
          iatSeconds: sec(),
          expSeconds: sec() + 600,
          iss: 'https://bank.example',
        },
      );
    const res = await importIt(a.agentId, await signed(pki.leaf));
    t.is(res.status, 201, res.text);
    t.is(res.body.issuer, 'https://bank.example');
    const b = await holderAgent('x5c-stranger');
    await refusedImport(
      t,
      await signed(pki.strangerLeaf, b.holder.publicKey),
      422,
      'invalid_mandate_credential',
      /no trusted root/,
      b,
    );
  },
);

test.serial(
  'a presentation waiting for approval holds the open mandate; an idempotent retry answers the first action',
  async (t) => {
    const a = await holderAgent('approved');
    const cred = await open(a.holder, [RANGE, PAYEES, REFERENCE]);
    expectStatus(await importIt(a.agentId, cred), 201, 'import');
    // The owner adds an approval step to the imported rule, keeping its id and source.
    const rule = (await ws.get(`/agents/${a.agentId}/mandate`)).body.rules[0];
    expectStatus(
      await ws.send('PUT', `/agents/${a.agentId}/mandate`, { rules: [{ ...rule, approval: { above: 1_000 } }] }),
      200,
      'approval step',
    );
    const body = pay(2_000, 'acme.example', {
      idempotencyKey: 'ap2-approved-1',
      ap2: { mandate: chain(cred, await closedFor(a, cred, 2_000)) },
    });
    const first = await authorize(server, a.key, body);
    t.is(first.body.decision, 'review', first.text);
    const retry = await authorize(server, a.key, body);
    t.is(retry.status, 200, retry.text);
    t.is(retry.body.id, first.body.id);
    const next = await authorize(
      server,
      a.key,
      pay(1_500, 'acme.example', { ap2: { mandate: chain(cred, await closedFor(a, cred, 1_500)) } }),
    );
    assertError(t, next, 409, 'presentation_refused');
    t.regex(next.body.error.message, /waits for approval/);
  },
);

test.serial('the new rule fields are checked like any other when a person sets them', async (t) => {
  const a = await newAgent('hand-set');
  const put = (rule: Record<string, unknown>) => ws.send('PUT', `/agents/${a.agentId}/mandate`, { rules: [rule] });
  const base = { actions: ['payment'], merchants: ['acme.example'] };
  for (const [rule, field] of [
    [{ ...base, budget: { amount: 100 } }, 'rules.0'],
    [{ ...base, currencies: ['EUR'], minAmount: 0 }, 'rules.0.minAmount'],
    [{ ...base, currencies: ['EUR'], recurrence: { frequency: 'HOURLY' } }, 'rules.0.recurrence.frequency'],
    [{ ...base, executionDate: {} }, 'rules.0.executionDate'],
  ] as const) {
    const res = await put(rule);
    assertError(t, res, 400, 'invalid_mandate');
    t.true(
      (res.body.error.errors as Array<{ field: string }>).some((e) => e.field.startsWith(field)),
      JSON.stringify(res.body.error.errors),
    );
  }
  assertError(
    t,
    await authorize(server, a.key, pay(100, 'acme.example', { ap2: { mandate: 42 } })),
    400,
    'invalid_request',
  );
});

// Last: these move the clock by days.

test.serial('budget, recurrence and refusals: a refused presentation must be named before the next', async (t) => {
  const a = await holderAgent('recurring');
  const cred = await open(
    a.holder,
    [
      { type: 'payment.amount_range', currency: 'USD', max: 10_000 },
      { type: 'payment.budget', currency: 'USD', max: 20_000 },
      { type: 'payment.agent_recurrence', frequency: 'DAILY', max_occurrences: 2 },
      REFERENCE,
    ],
    { payeesAt: undefined },
  );
  expectStatus(await importIt(a.agentId, cred), 201, 'import');
  const present = async (amount: number, refusal?: string) =>
    authorize(
      server,
      a.key,
      pay(amount, 'acme.example', {
        ap2: { mandate: chain(cred, await closedFor(a, cred, amount)), ...(refusal ? { refusal } : {}) },
      }),
    );
  const first = await present(8_000);
  t.is(first.body.decision, 'allow', first.text);
  const sameDay = await present(1_000);
  t.is(sameDay.body.decision, 'deny');
  t.deepEqual(sameDay.body.signals, ['recurrence_limit']);
  await laterByDays(1);
  assertError(t, await present(7_000), 409, 'presentation_refused');
  const named = await present(7_000, sameDay.body.id);
  t.is(named.body.decision, 'allow', named.text);
  await laterByDays(1);
  const third = await present(100);
  t.deepEqual(third.body.signals, ['recurrence_limit'], 'two uses in all');
});

test.serial('over the budget is refused even when the recurrence allows', async (t) => {
  const a = await holderAgent('budgeted');
  const cred = await open(
    a.holder,
    [
      { type: 'payment.amount_range', currency: 'USD', max: 10_000 },
      { type: 'payment.budget', currency: 'USD', max: 12_000 },
      { type: 'payment.agent_recurrence', frequency: 'ON_DEMAND' },
      REFERENCE,
    ],
    { payeesAt: undefined },
  );
  expectStatus(await importIt(a.agentId, cred), 201, 'import');
  t.is((await authorize(server, a.key, pay(9_000))).body.decision, 'allow');
  t.deepEqual((await authorize(server, a.key, pay(4_000))).body.signals, ['budget_exhausted']);
  t.is((await authorize(server, a.key, pay(3_000))).body.decision, 'allow');
});

test.serial('execution dates and the credential expiry bound the rule', async (t) => {
  const a = await holderAgent('dated');
  const from = new Date(now + 86_400_000).toISOString();
  const cred = await open(a.holder, [RANGE, { type: 'payment.execution_date', not_before: from }, REFERENCE], {
    payeesAt: undefined,
    expSeconds: sec() + 3 * 86_400,
  });
  expectStatus(await importIt(a.agentId, cred), 201, 'import');
  t.deepEqual((await authorize(server, a.key, pay(1_000, 'any.example'))).body.signals, ['outside_execution_window']);
  await laterByDays(2);
  t.is((await authorize(server, a.key, pay(1_000, 'any.example'))).body.decision, 'allow');
  await laterByDays(2);
  t.deepEqual((await authorize(server, a.key, pay(1_000, 'any.example'))).body.signals, ['mandate_expired']);
});
