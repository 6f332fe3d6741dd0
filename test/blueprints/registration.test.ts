import test from 'ava';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { authorize, payment, PAY_ACME } from '../helpers/gate.js';
import { assertError, bearer, call } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { addPerson, ID, SERVER_ENV } from '../approvals/support.js';

/**
 * Blueprints and registering agents from them by service token (`agents:write`): the mandate comes from templates only (400 template_only for
 * anything else),
 * a blueprint or template the workspace lacks is 400 unknown_template, and a refused
 * registration leaves nothing behind.
 */
let server: ServedInProcess;
let owner: Person;
let member: Person;
let payTemplate: string;
let mailTemplate: string;
let billing: { id: string; name: string };
let writer: { token: string; id: string };
let reader: string;
let freezer: string;

const MAIL = { actions: ['email'], domains: ['mail.example.com'] };

const register = (token: string, body: unknown) =>
  call(server.url, 'POST', '/v1/admin/agents', { headers: bearer(token), json: body });
const liveAgents = async () => (await owner.get('/agents?limit=200')).body.data as Array<{ id: string; name: string }>;
const tokenOf = async (name: string, scopes: string[]) => {
  const res = expectStatus(
    await owner.send('POST', '/service-tokens', { name, scopes, expiresInDays: 7 }),
    201,
    'token',
  );
  return { token: res.body.token as string, id: res.body.id as string };
};

test.before(async () => {
  server = await serveInProcess({ env: SERVER_ENV });
  owner = await ownerConsole(server);
  member = await addPerson(server, owner.wid, 'member@example.com', 'member');
  payTemplate = expectStatus(
    await owner.send('POST', '/templates', { name: 'pay acme', rules: [PAY_ACME] }),
    201,
    'template',
  ).body.id;
  mailTemplate = expectStatus(await owner.send('POST', '/templates', { name: 'mail', rules: [MAIL] }), 201, 'template')
    .body.id;
  billing = expectStatus(
    await owner.send('POST', '/blueprints', { name: 'billing', tags: ['billing', 'eu'], templates: [payTemplate] }),
    201,
    'blueprint',
  ).body;
  writer = await tokenOf('provisioner', ['agents:write']);
  reader = (await tokenOf('inventory', ['agents:read'])).token;
  freezer = (await tokenOf('kill', ['agents:freeze'])).token;
});

test.after.always(() => stopAndClean(server));

test.serial('an owner creates and lists blueprints; a member may read but not create them', async (t) => {
  t.regex(billing.id, ID('bp'));
  t.like(billing, { name: 'billing', tags: ['billing', 'eu'], templates: [payTemplate] });
  const listed = await member.get('/blueprints');
  t.is(listed.status, 200);
  t.deepEqual(
    listed.body.data.map((b: { id: string }) => b.id),
    [billing.id],
  );
  assertError(
    t,
    await member.send('POST', '/blueprints', { name: 'mine', templates: [payTemplate] }),
    403,
    'forbidden',
  );
  assertError(
    t,
    await owner.send('POST', '/blueprints', { name: 'ghost', templates: ['tpl_0000000000000000000000'] }),
    400,
    'unknown_template',
  );
  t.deepEqual(
    (await owner.get('/blueprints')).body.data.map((b: { name: string }) => b.name),
    ['billing'],
    'the refused blueprint was not kept',
  );
  const record = (await owner.ledger()).find((r) => r.kind === 'blueprint.created');
  t.like(record, { subject: billing.id, actor: `user:${await owner.userId()}`, data: { templates: [payTemplate] } });
});

test.serial(
  'a token registers an agent from a blueprint: its tags, its mandate from templates, a ledger record with the token id',
  async (t) => {
    const res = await register(writer.token, { blueprint: billing.id, name: 'billing-7', tags: ['night'] });
    t.is(res.status, 201, res.text);
    t.regex(res.body.id, ID('agt'));
    t.like(res.body, {
      name: 'billing-7',
      actsFor: null,
      tags: ['billing', 'eu', 'night'],
      status: 'running',
      holds: [],
      blueprint: billing.id,
      mandateRules: 1,
    });

    const mandate = (await owner.get(`/agents/${res.body.id}/mandate`)).body;
    t.is(mandate.rules.length, 1);
    const { id: ruleId, ...rule } = mandate.rules[0];
    t.regex(ruleId, ID('mnd'));
    t.deepEqual(rule, PAY_ACME);
    t.is(mandate.updatedBy, 'token:provisioner');

    const key = expectStatus(await owner.send('POST', `/agents/${res.body.id}/keys`, {}), 201, 'key').body.key;
    t.is((await authorize(server, key, payment(1200))).body.decision, 'allow');
    t.deepEqual(
      (
        await authorize(
          server,
          key,
          payment(1200, { payment: { amount: 1200, currency: 'EUR', merchant: 'other.example' } }),
        )
      ).body.signals,
      ['merchant_not_allowed'],
    );

    const records = (await owner.ledger()).filter((r) => r.subject === res.body.id);
    t.deepEqual(
      records.map((r) => r.kind),
      ['agent.created', 'mandate.updated'],
    );
    for (const r of records) t.like(r, { actor: 'token:provisioner', tokenId: writer.id });
    t.like(records[0], { data: { blueprint: billing.id, tags: ['billing', 'eu', 'night'] } });
  },
);

test.serial(
  'templates named beside the blueprint add their rules after its own; a repeated rule is kept once',
  async (t) => {
    const res = await register(writer.token, {
      blueprint: billing.id,
      name: 'billing-mail',
      templates: [mailTemplate, payTemplate],
    });
    t.is(res.status, 201, res.text);
    t.is(res.body.mandateRules, 2);
    const rules = (await owner.get(`/agents/${res.body.id}/mandate`)).body.rules.map(
      ({ id: _id, ...r }: { id: string }) => r,
    );
    t.deepEqual(rules, [PAY_ACME, MAIL]);
  },
);

test.serial('400 template_only: a token that sends a mandate or rules of its own registers nothing', async (t) => {
  const before = (await liveAgents()).length;
  assertError(
    t,
    await register(writer.token, {
      blueprint: billing.id,
      name: 'sneaky',
      rules: [{ actions: ['*'], merchants: ['*'] }],
    }),
    400,
    'template_only',
  );
  assertError(
    t,
    await register(writer.token, { blueprint: billing.id, name: 'sneaky', mandate: { rules: [] } }),
    400,
    'template_only',
  );
  // Whatever else is wrong with the body, rules of its own are what the token hears about first.
  const both = await register(writer.token, { rules: [PAY_ACME], tags: 'not-a-list' });
  assertError(t, both, 400, 'template_only');
  t.is((await liveAgents()).length, before);
});

test.serial('400 unknown_template: a blueprint or template the workspace lacks registers nothing', async (t) => {
  const before = (await liveAgents()).length;
  const ledgerBefore = (await owner.ledger()).length;
  const noBlueprint = await register(writer.token, { blueprint: 'bp_0000000000000000000000', name: 'ghost' });
  assertError(t, noBlueprint, 400, 'unknown_template');
  t.regex(noBlueprint.body.error.message, /bp_0000000000000000000000/);
  const noTemplate = await register(writer.token, {
    blueprint: billing.id,
    name: 'ghost',
    templates: [payTemplate, 'tpl_0000000000000000000000'],
  });
  assertError(t, noTemplate, 400, 'unknown_template');
  t.regex(noTemplate.body.error.message, /tpl_0000000000000000000000/);
  t.is((await liveAgents()).length, before);
  t.is((await owner.ledger()).length, ledgerBefore, 'no ledger record of a registration that did not happen');
});

test.serial(
  'registration needs agents:write, a blueprint and a name; actsFor must name a person of the workspace',
  async (t) => {
    assertError(t, await register(reader, { blueprint: billing.id, name: 'x' }), 403, 'missing_scope');
    assertError(t, await register(freezer, { blueprint: billing.id, name: 'x' }), 403, 'missing_scope');
    const missing = await register(writer.token, { name: 'x' });
    assertError(t, missing, 400, 'invalid_request');
    t.like(missing.body.error.errors[0], { field: 'blueprint' });
    assertError(t, await register(writer.token, { blueprint: billing.id }), 400, 'invalid_request');
    assertError(
      t,
      await register(writer.token, { blueprint: billing.id, name: 'x', actsFor: 'usr_0000000000000000000000' }),
      400,
      'invalid_request',
    );
    const forMember = await register(writer.token, { blueprint: billing.id, name: 'for-member', actsFor: member.id });
    t.is(forMember.status, 201, forMember.text);
    t.is(forMember.body.actsFor, member.id);
    t.true(
      (await member.get('/agents')).body.data.some((a: { id: string }) => a.id === forMember.body.id),
      'the member sees the agent that acts for them',
    );
  },
);

test.serial(
  'in the console an agent created with a blueprint starts with its tags and mandate, and a freeze can select by blueprint',
  async (t) => {
    const made = await member.send('POST', '/agents', { name: 'member-billing', blueprint: billing.id });
    t.is(made.status, 201, made.text);
    t.like(made.body, { actsFor: member.id, tags: ['billing', 'eu'], blueprint: billing.id });
    t.is((await member.get(`/agents/${made.body.id}/mandate`)).body.rules.length, 1);
    assertError(
      t,
      await owner.send('POST', '/agents', { name: 'ghost', blueprint: 'bp_0000000000000000000000' }),
      400,
      'unknown_template',
    );

    const fromBlueprint = (await liveAgents()).filter((a) => (a as { blueprint?: string }).blueprint === billing.id);
    t.true(fromBlueprint.length >= 4);
    const res = await call(server.url, 'POST', '/v1/admin/freezes', {
      headers: bearer(freezer),
      json: { selector: { blueprint: billing.id }, reason: 'billing incident', confirmCount: fromBlueprint.length },
    });
    t.is(res.status, 200, res.text);
    t.deepEqual([...res.body.agentIds].sort(), fromBlueprint.map((a) => a.id).sort());
    const listed = (await call(server.url, 'GET', '/v1/admin/agents?status=stopped', { headers: bearer(reader) })).body
      .data;
    t.deepEqual(listed.map((a: { id: string }) => a.id).sort(), fromBlueprint.map((a) => a.id).sort());
  },
);
