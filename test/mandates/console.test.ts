import test from 'ava';
import { assertError, bearer, call, type Reply } from '../helpers/http.js';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { authorize, payment } from '../helpers/gate.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';

/**
 * An agent's mandate, the mandate rule and templates in the console, and their errors
 * (invalid_mandate, confirm_broaden). Every mandate change is a ledger record.
 */

const RULE_ID = /^mnd_[0-9A-Za-z]{22}$/;
const TEMPLATE_ID = /^tpl_[0-9A-Za-z]{22}$/;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

const PAY_ACME = { actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 5000 };
const PAY_ANYWHERE = { actions: ['payment'], merchants: ['*'], currencies: ['EUR'], maxAmount: 1000 };
const CRM = { actions: ['crm.update'], domains: ['api.example.com'] };
const EMAIL = { actions: ['email'] };

let server: ServedInProcess;
/** The first-start owner's console. */
let owner: Person;

const putMandate = (agentId: string, body: unknown) => owner.send('PUT', `/agents/${agentId}/mandate`, body);

async function newAgent(name: string): Promise<string> {
  return expectStatus(await owner.send('POST', '/agents', { name, actsFor: owner.id }), 201, 'agent').body.id;
}

const fieldsOf = (res: Reply): Array<string | null> =>
  (res.body?.error?.errors ?? []).map((e: { field: string | null }) => e.field);

test.before(async () => {
  server = await serveInProcess({ env: { SVC_SIGNIN_RATE_PER_MINUTE: '1000' } });
  owner = await ownerConsole(server);
});

test.after.always(() => stopAndClean(server));

// The mandate

test('an agent without a mandate has no rules', async (t) => {
  const aid = await newAgent('fresh-bot');
  const res = await owner.get(`/agents/${aid}/mandate`);
  t.is(res.status, 200, res.text);
  t.is(res.body.agentId, aid);
  t.deepEqual(res.body.rules, []);
  t.is(res.body.updatedAt, null);
  t.is(res.body.updatedBy, null);
});

test('PUT saves the rules with mnd_ ids, and GET and the ledger show them', async (t) => {
  const aid = await newAgent('saved-bot');
  const res = await putMandate(aid, { rules: [PAY_ACME, CRM] });
  t.is(res.status, 200, res.text);
  t.is(res.body.agentId, aid);
  t.is(res.body.rules.length, 2);
  t.like(res.body.rules[0], PAY_ACME);
  t.like(res.body.rules[1], CRM);
  for (const rule of res.body.rules) t.regex(rule.id, RULE_ID);
  t.not(res.body.rules[0].id, res.body.rules[1].id);
  t.regex(res.body.updatedAt, ISO);
  t.is(res.body.updatedBy, `user:${owner.id}`);

  const read = await owner.get(`/agents/${aid}/mandate`);
  t.is(read.status, 200);
  t.deepEqual(read.body, res.body);

  const records = (await owner.ledger()).filter((r) => r.kind === 'mandate.updated' && r.subject === aid);
  t.is(records.length, 1);
  t.is(records[0]!.actor, `user:${owner.id}`);
  t.deepEqual(records[0]!.data.rules, res.body.rules);
});

test('the saved mandate is what the gate enforces', async (t) => {
  const aid = await newAgent('enforced-bot');
  t.is((await putMandate(aid, { rules: [PAY_ACME] })).status, 200);
  const key = await owner.send('POST', `/agents/${aid}/keys`, {});
  t.is(key.status, 201, key.text);

  const allowed = await authorize(server, key.body.key, payment(1250));
  t.is(allowed.status, 200, allowed.text);
  t.is(allowed.body.decision, 'allow');
  const elsewhere = await authorize(server, key.body.key, {
    type: 'payment',
    summary: 'Pay Globex',
    payment: { amount: 100, currency: 'EUR', merchant: 'globex.example' },
  });
  t.is(elsewhere.status, 200, elsewhere.text);
  t.is(elsewhere.body.decision, 'deny');
  t.deepEqual(elsewhere.body.signals, ['merchant_not_allowed']);
  const tooMuch = await authorize(server, key.body.key, payment(5001));
  t.is(tooMuch.body.decision, 'deny');
  t.deepEqual(tooMuch.body.signals, ['over_limit']);

  // Replacing the mandate with none: everything is denied again.
  t.is((await putMandate(aid, { rules: [] })).status, 200);
  const after = await authorize(server, key.body.key, payment(1250));
  t.is(after.body.decision, 'deny');
  const poll = await call(server.url, 'GET', `/v1/actions/${after.body.id}`, { headers: bearer(key.body.key) });
  t.is(poll.body.decision, 'deny');
});

test('a rule sent with its existing id keeps it; new rules get new ids; dropped rules are gone', async (t) => {
  const aid = await newAgent('evolving-bot');
  const first = await putMandate(aid, { rules: [PAY_ACME, CRM] });
  t.is(first.status, 200, first.text);
  const [pay, crm] = first.body.rules;

  const second = await putMandate(aid, { rules: [{ ...pay, maxAmount: 7000 }, EMAIL] });
  t.is(second.status, 200, second.text);
  t.is(second.body.rules.length, 2);
  t.is(second.body.rules[0].id, pay.id);
  t.is(second.body.rules[0].maxAmount, 7000);
  t.regex(second.body.rules[1].id, RULE_ID);
  t.false([pay.id, crm.id].includes(second.body.rules[1].id));
  t.like(second.body.rules[1], EMAIL);

  // The same rule sent again without its id is a new rule.
  const third = await putMandate(aid, { rules: [EMAIL] });
  t.is(third.status, 200, third.text);
  t.not(third.body.rules[0].id, second.body.rules[1].id);

  t.deepEqual((await owner.get(`/agents/${aid}/mandate`)).body.rules, third.body.rules);
});

test("an id of another agent's rule, or an unknown id, is not kept", async (t) => {
  const [a, b] = await Promise.all([newAgent('owner-of-rule'), newAgent('borrower')]);
  const theirs = await putMandate(a, { rules: [PAY_ACME] });
  t.is(theirs.status, 200, theirs.text);
  const foreignId = theirs.body.rules[0].id;

  const res = await putMandate(b, {
    rules: [
      { ...PAY_ACME, id: foreignId },
      { ...CRM, id: 'mnd_0000000000000000000000' },
    ],
  });
  t.is(res.status, 200, res.text);
  t.not(res.body.rules[0].id, foreignId);
  t.not(res.body.rules[1].id, 'mnd_0000000000000000000000');
  t.regex(res.body.rules[0].id, RULE_ID);
  // The first agent's rule is untouched.
  t.deepEqual((await owner.get(`/agents/${a}/mandate`)).body.rules, theirs.body.rules);
});

test('two rules sent with the same id never share one id in the saved mandate', async (t) => {
  const aid = await newAgent('duplicate-bot');
  const first = await putMandate(aid, { rules: [PAY_ACME] });
  t.is(first.status, 200, first.text);
  const id = first.body.rules[0].id;

  const res = await putMandate(aid, {
    rules: [
      { ...PAY_ACME, id },
      { ...EMAIL, id },
    ],
  });
  // Either refused as a malformed mandate, or saved with one fresh id: never two rules with one id.
  if (res.status === 200) {
    t.is(res.body.rules[0].id, id);
    t.not(res.body.rules[1].id, id, JSON.stringify(res.body.rules));
  } else {
    assertError(t, res, 400, 'invalid_mandate');
  }
  const saved = (await owner.get(`/agents/${aid}/mandate`)).body.rules.map((r: { id: string }) => r.id);
  t.is(new Set(saved).size, saved.length, JSON.stringify(saved));
});

test('names are saved lower-case and approval defaults are filled in', async (t) => {
  const aid = await newAgent('normalised-bot');
  const res = await putMandate(aid, {
    rules: [{ actions: ['payment'], merchants: ['ACME.Example'], currencies: ['EUR'], approval: { above: 2000 } }],
  });
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body.rules[0].merchants, ['acme.example']);
  t.deepEqual(res.body.rules[0].approval, { above: 2000, count: 1, separationOfDuties: false });
});

test('every documented rule field is accepted together', async (t) => {
  const aid = await newAgent('complete-bot');
  const rule = {
    actions: ['payment', 'refund'],
    merchants: ['acme.example', 'globex.example'],
    currencies: ['EUR', 'USD'],
    maxAmount: 5000,
    periodLimit: { amount: 20000, period: 'week' },
    approval: { above: 2000, approvers: [owner.id], count: 1, separationOfDuties: true },
  };
  const res = await putMandate(aid, {
    rules: [rule, { actions: ['crm.*'], domains: ['*.example.com'] }, { actions: ['*'], domains: ['api.example.com'] }],
  });
  t.is(res.status, 200, res.text);
  t.like(res.body.rules[0], rule);
});

const invalid: Array<[string, unknown, string]> = [
  ['actions empty', { actions: [] }, 'rules.0.actions'],
  ['a single-word action that is not built in', { actions: ['pay'] }, 'rules.0.actions.0'],
  [
    'a lower-case currency',
    { actions: ['payment'], merchants: ['acme.example'], currencies: ['eur'] },
    'rules.0.currencies.0',
  ],
  [
    'maxAmount 0',
    { actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 0 },
    'rules.0.maxAmount',
  ],
  [
    'maxAmount 1.5',
    { actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 1.5 },
    'rules.0.maxAmount',
  ],
  [
    'periodLimit.period year',
    {
      actions: ['payment'],
      merchants: ['acme.example'],
      currencies: ['EUR'],
      periodLimit: { amount: 100, period: 'year' },
    },
    'rules.0.periodLimit.period',
  ],
  [
    'approval.count 3',
    { actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], approval: { above: 10, count: 3 } },
    'rules.0.approval.count',
  ],
  ['merchants empty', { actions: ['payment'], merchants: [], currencies: ['EUR'] }, 'rules.0.merchants'],
  [
    'two approvals asked of one named approver',
    {
      actions: ['payment'],
      merchants: ['acme.example'],
      currencies: ['EUR'],
      approval: { above: 10, count: 2, approvers: ['usr_AAAAAAAAAAAAAAAAAAAAAA'] },
    },
    'rules.0.approval',
  ],
  [
    'an unknown rule field',
    { actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], budget: 5 },
    'rules.0.budget',
  ],
];

for (const [what, rule, field] of invalid) {
  test(`${what} gives 400 invalid_mandate naming ${field}, and the mandate is unchanged`, async (t) => {
    const aid = await newAgent(`invalid-${field}`);
    const saved = await putMandate(aid, { rules: [EMAIL] });
    t.is(saved.status, 200, saved.text);

    const res = await putMandate(aid, { rules: [rule, EMAIL] });
    assertError(t, res, 400, 'invalid_mandate');
    t.deepEqual(fieldsOf(res), [field]);
    t.is(res.body.error.message, res.body.error.errors.map((e: { message: string }) => e.message).join('; '));
    t.true(res.body.error.docs.endsWith('#invalid_mandate'), res.body.error.docs);
    t.deepEqual((await owner.get(`/agents/${aid}/mandate`)).body, saved.body);
  });
}

test('maxAmount without currencies gives 400 invalid_mandate naming the rule', async (t) => {
  const aid = await newAgent('currencyless-bot');
  const res = await putMandate(aid, { rules: [{ actions: ['payment'], merchants: ['acme.example'], maxAmount: 500 }] });
  assertError(t, res, 400, 'invalid_mandate');
  t.is(res.body.error.errors.length, 1);
  t.regex(String(res.body.error.errors[0].field), /^rules\.0(\.|$)/);
  t.regex(res.body.error.errors[0].message, /currencies/);
  t.deepEqual((await owner.get(`/agents/${aid}/mandate`)).body.rules, []);
});

test('every malformed field of every rule is listed', async (t) => {
  const aid = await newAgent('many-faults-bot');
  const res = await putMandate(aid, {
    rules: [
      { actions: ['pay'], merchants: ['acme.example'], currencies: ['eur'] },
      { actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 0 },
    ],
  });
  assertError(t, res, 400, 'invalid_mandate');
  t.deepEqual([...fieldsOf(res)].sort(), ['rules.0.actions.0', 'rules.0.currencies.0', 'rules.1.maxAmount']);
});

test('a body without rules, or with an unknown top-level field, gives 400 invalid_mandate', async (t) => {
  const aid = await newAgent('bodyless-mandate-bot');
  const missing = await putMandate(aid, {});
  assertError(t, missing, 400, 'invalid_mandate');
  t.deepEqual(fieldsOf(missing), ['rules']);
  const extra = await putMandate(aid, { rules: [], mandate: 'everything' });
  assertError(t, extra, 400, 'invalid_mandate');
  t.deepEqual(fieldsOf(extra), ['mandate']);
});

test('a rule allowing any merchant beside a narrower one gives 409 confirm_broaden naming both rules; confirmBroaden: true saves it', async (t) => {
  const aid = await newAgent('broadening-bot');
  const narrow = await putMandate(aid, { rules: [PAY_ACME] });
  t.is(narrow.status, 200, narrow.text);
  const narrowId = narrow.body.rules[0].id;

  const refused = await putMandate(aid, { rules: [narrow.body.rules[0], PAY_ANYWHERE] });
  assertError(t, refused, 409, 'confirm_broaden');
  const reason = String(refused.body.error.reason);
  const named: string[] = reason.match(/mnd_[0-9A-Za-z]{22}/g) ?? [];
  t.true(named.includes(narrowId), reason);
  t.is(new Set(named).size, 2, reason);
  // Refused: the mandate is as it was, and the ledger has no record of the attempt.
  t.deepEqual((await owner.get(`/agents/${aid}/mandate`)).body, narrow.body);
  t.is((await owner.ledger()).filter((r) => r.kind === 'mandate.updated' && r.subject === aid).length, 1);

  const confirmed = await putMandate(aid, { rules: [narrow.body.rules[0], PAY_ANYWHERE], confirmBroaden: true });
  t.is(confirmed.status, 200, confirmed.text);
  t.is(confirmed.body.rules[0].id, narrowId);
  t.like(confirmed.body.rules[1], PAY_ANYWHERE);
  t.deepEqual((await owner.get(`/agents/${aid}/mandate`)).body, confirmed.body);

  const records = (await owner.ledger()).filter((r) => r.kind === 'mandate.updated' && r.subject === aid);
  t.is(records.length, 2);
  t.deepEqual(records[1]!.data.rules, confirmed.body.rules);
  t.is(records[1]!.data.confirmBroaden, true);
});

test("a new agent's mandate with a wildcard and a narrow rule in one request also needs confirmBroaden", async (t) => {
  const aid = await newAgent('eager-bot');
  const refused = await putMandate(aid, { rules: [PAY_ANYWHERE, PAY_ACME] });
  assertError(t, refused, 409, 'confirm_broaden');
  t.is(
    new Set(String(refused.body.error.reason).match(/mnd_[0-9A-Za-z]{22}/g) ?? []).size,
    2,
    refused.body.error.reason,
  );
  t.deepEqual((await owner.get(`/agents/${aid}/mandate`)).body.rules, []);
});

test('a rule allowing any domain beside one naming its domains also needs confirmBroaden', async (t) => {
  const aid = await newAgent('domain-bot');
  const rules = [CRM, { actions: ['crm.update'], domains: ['*'] }];
  const refused = await putMandate(aid, { rules });
  assertError(t, refused, 409, 'confirm_broaden');
  t.regex(String(refused.body.error.reason), /api\.example\.com/);
  t.deepEqual((await owner.get(`/agents/${aid}/mandate`)).body.rules, []);
  const confirmed = await putMandate(aid, { rules, confirmBroaden: true });
  t.is(confirmed.status, 200, confirmed.text);
  t.deepEqual(
    confirmed.body.rules.map((r: { domains: string[] }) => r.domains),
    [['api.example.com'], ['*']],
  );
});

test('each accepted mandate change is one mandate.updated ledger record by the owner', async (t) => {
  const aid = await newAgent('audited-bot');
  const saves = [
    await putMandate(aid, { rules: [PAY_ACME] }),
    await putMandate(aid, { rules: [EMAIL] }),
    await putMandate(aid, { rules: [{ actions: ['pay'] }] }),
    await putMandate(aid, { rules: [] }),
  ];
  t.deepEqual(
    saves.map((s) => s.status),
    [200, 200, 400, 200],
  );
  const records = (await owner.ledger()).filter((r) => r.kind === 'mandate.updated' && r.subject === aid);
  t.is(records.length, 3);
  for (const r of records) t.is(r.actor, `user:${owner.id}`);
  t.deepEqual(
    records.map((r) => r.data.rules),
    [saves[0]!.body.rules, saves[1]!.body.rules, []],
  );
});

// Templates

test('POST templates answers 201 with a tpl_ id and the rules, and GET lists it', async (t) => {
  const res = await owner.send('POST', '/templates', { name: 'Pay Acme', rules: [PAY_ACME, EMAIL] });
  t.is(res.status, 201, res.text);
  t.regex(res.body.id, TEMPLATE_ID);
  t.is(res.body.name, 'Pay Acme');
  t.is(res.body.rules.length, 2);
  t.like(res.body.rules[0], PAY_ACME);
  t.like(res.body.rules[1], EMAIL);
  t.regex(res.body.createdAt, ISO);

  const list = await owner.get('/templates?limit=200');
  t.is(list.status, 200, list.text);
  t.deepEqual(Object.keys(list.body).sort(), ['data', 'next']);
  t.deepEqual(
    list.body.data.find((tpl: { id: string }) => tpl.id === res.body.id),
    res.body,
  );

  const records = (await owner.ledger()).filter((r) => r.subject === res.body.id);
  t.deepEqual(
    records.map((r) => [r.kind, r.actor]),
    [['template.created', `user:${owner.id}`]],
  );
});

test('templates with malformed rules give 400 invalid_mandate and are not saved', async (t) => {
  const res = await owner.send('POST', '/templates', {
    name: 'Broken',
    rules: [{ actions: ['payment'], currencies: ['eur'] }],
  });
  assertError(t, res, 400, 'invalid_mandate');
  t.deepEqual(fieldsOf(res), ['rules.0.currencies.0']);
  const list = await owner.get('/templates?limit=200');
  t.false(list.body.data.some((tpl: { name: string }) => tpl.name === 'Broken'));
});

test('a template without a name gives 400', async (t) => {
  const res = await owner.send('POST', '/templates', { rules: [EMAIL] });
  t.is(res.status, 400, res.text);
  t.true(fieldsOf(res).includes('name'), res.text);
});

test('writes to templates and mandates without x-svc-csrf give 403 csrf', async (t) => {
  const aid = await newAgent('csrf-mandate-bot');
  const tpl = await call(server.url, 'POST', owner.api('/templates'), {
    headers: { cookie: owner.cookie },
    json: { name: 'Forged', rules: [EMAIL] },
  });
  assertError(t, tpl, 403, 'csrf');
  const mandate = await call(server.url, 'PUT', owner.api(`/agents/${aid}/mandate`), {
    headers: { cookie: owner.cookie },
    json: { rules: [EMAIL] },
  });
  assertError(t, mandate, 403, 'csrf');
  t.deepEqual((await owner.get(`/agents/${aid}/mandate`)).body.rules, []);
  t.false((await owner.get('/templates?limit=200')).body.data.some((x: { name: string }) => x.name === 'Forged'));
});

// Serial: no other template is created while pages are walked.
test.serial('the template list pages with ?limit and the next cursor', async (t) => {
  for (const name of ['tpl-a', 'tpl-b', 'tpl-c'])
    t.is((await owner.send('POST', '/templates', { name, rules: [EMAIL] })).status, 201);
  const all = await owner.get('/templates?limit=200');
  const seen: string[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 100; i += 1) {
    const page: Reply = await owner.get(`/templates?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    t.is(page.status, 200, page.text);
    t.true(page.body.data.length <= 1);
    seen.push(...page.body.data.map((x: { id: string }) => x.id));
    cursor = page.body.next;
    if (cursor === null) break;
  }
  t.is(cursor, null);
  t.is(new Set(seen).size, seen.length);
  t.deepEqual([...seen].sort(), all.body.data.map((x: { id: string }) => x.id).sort());
  t.true(seen.length >= 3);
});
