import test from 'ava';
import type { AgentView } from '../../src/agents/service.js';
import type { MandateView } from '../../src/mandates/service.js';
import { assertError, bearer, call, signIn } from '../helpers/http.js';
import { consoleClient, expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { withStore } from '../helpers/store.js';

/**
 * The agents routes by role: owners and admins manage every agent; a member
 * manages the agents that act for them, gives them only template rules, and makes no templates;
 * the ledger is for owners, admins and auditors.
 */

const PAY_ACME = {
  actions: ['payment'],
  merchants: ['acme.example'],
  currencies: ['EUR'],
  maxAmount: 5000,
  approval: { above: 2000 },
};
const EMAIL = { actions: ['email'] };
const NO_ACTION = '/v1/actions/act_0000000000000000000000';

let server: ServedInProcess;
let owner: Person;
let admin: Person;
let member: Person;
let auditor: Person;
let analyst: Person;
/** An agent acting for the owner, with a mandate and a key. */
let ownersAgent: AgentView;
let ownersMandate: MandateView;
let ownersKeyId: string;

async function person(email: string, role: 'admin' | 'member' | 'auditor' | 'analyst'): Promise<Person> {
  const user = await withStore(server.dataDir, (app) =>
    app.services.people.addMember({ workspaceId: owner.wid, email, name: role, password: `${role}-password-1`, role }),
  );
  return { ...consoleClient(server, owner.wid, await signIn(server.url, email, `${role}-password-1`)), id: user.id };
}

test.before(async () => {
  server = await serveInProcess({ env: { SVC_SIGNIN_RATE_PER_MINUTE: '1000' } });
  owner = await ownerConsole(server);
  // One at a time: each opens the store from this process.
  admin = await person('admin@example.com', 'admin');
  member = await person('member@example.com', 'member');
  auditor = await person('auditor@example.com', 'auditor');
  analyst = await person('analyst@example.com', 'analyst');

  ownersAgent = (await owner.send('POST', '/agents', { name: 'owners-bot', actsFor: owner.id })).body;
  ownersMandate = (await owner.send('PUT', `/agents/${ownersAgent.id}/mandate`, { rules: [PAY_ACME] })).body;
  ownersKeyId = (await owner.send('POST', `/agents/${ownersAgent.id}/keys`, {})).body.id;
  expectStatus(await owner.send('POST', '/templates', { name: 'Pay Acme', rules: [PAY_ACME] }), 201, 'template');
});

test.after.always(() => stopAndClean(server));

// Members

test('a member creates an agent, which acts for them by default', async (t) => {
  const res = await member.send('POST', '/agents', { name: 'members-bot', tags: ['mine'] });
  t.is(res.status, 201, res.text);
  t.like(res.body, { name: 'members-bot', actsFor: member.id, tags: ['mine'], status: 'running', holds: [] });
  const read = await owner.get(`/agents/${res.body.id}`);
  t.is(read.body.actsFor, member.id);
  const records = (await owner.ledger()).filter((r) => r.subject === res.body.id);
  t.deepEqual(
    records.map((r) => [r.kind, r.actor]),
    [['agent.created', `user:${member.id}`]],
  );
});

test('a member cannot create an agent acting for someone else', async (t) => {
  const res = await member.send('POST', '/agents', { name: 'proxy-bot', actsFor: owner.id });
  assertError(t, res, 400, 'invalid_request');
  t.is(res.body.error.errors[0].field, 'actsFor');
  const list = await owner.get('/agents?limit=200');
  t.false(list.body.data.some((a: { name: string }) => a.name === 'proxy-bot'));
});

test('a member manages their own agent: rename, keys, mandate from a template, removal', async (t) => {
  const agent = (await member.send('POST', '/agents', { name: 'own-bot' })).body;
  const renamed = await member.send('PATCH', `/agents/${agent.id}`, { name: 'own-bot-2' });
  t.is(renamed.status, 200, renamed.text);
  t.is(renamed.body.name, 'own-bot-2');

  const key = await member.send('POST', `/agents/${agent.id}/keys`, {});
  t.is(key.status, 201, key.text);
  assertError(t, await call(server.url, 'GET', NO_ACTION, { headers: bearer(key.body.key) }), 404, 'not_found');

  const mandate = await member.get(`/agents/${agent.id}/mandate`);
  t.is(mandate.status, 200, mandate.text);
  t.deepEqual(mandate.body.rules, []);

  // The template's rules, sent as a person would type them (defaults left out): accepted.
  const put = await member.send('PUT', `/agents/${agent.id}/mandate`, { rules: [PAY_ACME] });
  t.is(put.status, 200, put.text);
  t.like(put.body.rules[0], PAY_ACME);
  t.is(put.body.updatedBy, `user:${member.id}`);

  const revoked = await member.send('DELETE', `/agents/${agent.id}/keys/${key.body.id}`);
  t.is(revoked.status, 200, revoked.text);
  assertError(t, await call(server.url, 'GET', NO_ACTION, { headers: bearer(key.body.key) }), 401, 'invalid_api_key');

  const removed = await member.send('DELETE', `/agents/${agent.id}`);
  t.is(removed.status, 200, removed.text);
  assertError(t, await owner.get(`/agents/${agent.id}`), 404, 'not_found');
});

test("a member may copy a template's rules as the template lists them, ids included", async (t) => {
  const agent = (await member.send('POST', '/agents', { name: 'copy-bot' })).body;
  const templates = await member.get('/templates?limit=200');
  t.is(templates.status, 200, templates.text);
  const tpl = templates.body.data.find((x: { name: string }) => x.name === 'Pay Acme');
  const res = await member.send('PUT', `/agents/${agent.id}/mandate`, { rules: tpl.rules });
  t.is(res.status, 200, res.text);
  t.like(res.body.rules[0], PAY_ACME);
  // The agent's rule is its own: not the template's rule id.
  t.not(res.body.rules[0].id, tpl.rules[0].id);
});

test('a member giving rules beyond the templates gets 403 forbidden and the mandate is unchanged', async (t) => {
  const agent = (await member.send('POST', '/agents', { name: 'ambitious-bot' })).body;
  const start = await member.send('PUT', `/agents/${agent.id}/mandate`, { rules: [PAY_ACME] });
  t.is(start.status, 200, start.text);

  // The templates of this file hold only PAY_ACME (before) and a deploy rule (the admin's).
  const attempts = [
    [{ ...PAY_ACME, maxAmount: 50000 }],
    [{ ...PAY_ACME, merchants: ['*'] }],
    [PAY_ACME, { actions: ['browse'] }],
    [{ ...PAY_ACME, approval: undefined }],
  ];
  for (const rules of attempts) {
    const res = await member.send('PUT', `/agents/${agent.id}/mandate`, { rules, confirmBroaden: true });
    assertError(t, res, 403, 'forbidden');
  }
  t.deepEqual((await member.get(`/agents/${agent.id}/mandate`)).body, start.body);
  const records = (await owner.ledger()).filter((r) => r.kind === 'mandate.updated' && r.subject === agent.id);
  t.is(records.length, 1);
});

test('a member cannot see or touch an agent acting for someone else: 404 not_found, nothing changes', async (t) => {
  const aid = ownersAgent.id;
  const attempts = [
    await member.send('PATCH', `/agents/${aid}`, { name: 'hijacked' }),
    await member.send('POST', `/agents/${aid}/keys`, {}),
    await member.send('DELETE', `/agents/${aid}/keys/${ownersKeyId}`),
    await member.get(`/agents/${aid}/mandate`),
    await member.send('PUT', `/agents/${aid}/mandate`, { rules: [PAY_ACME] }),
    await member.send('DELETE', `/agents/${aid}`),
    await member.get(`/agents/${aid}`),
  ];
  for (const res of attempts) {
    assertError(t, res, 404, 'not_found');
    t.is(res.body.key, undefined);
    t.false(res.text.includes(owner.id), 'nothing says whom it acts for');
  }
  t.false(
    (await member.get('/agents?limit=200')).body.data.some((a: { id: string }) => a.id === aid),
    'nor is it listed',
  );
  t.deepEqual((await owner.get(`/agents/${aid}`)).body, ownersAgent);
  t.deepEqual((await owner.get(`/agents/${aid}/mandate`)).body, ownersMandate);
  const keys = await owner.get('/keys?limit=200');
  t.is(keys.body.data.find((k: { id: string }) => k.id === ownersKeyId)?.revokedAt, null);
  t.is(keys.body.data.filter((k: { agentId: string }) => k.agentId === aid).length, 1);
});

test('a member cannot hand their agent to someone else', async (t) => {
  const agent = (await member.send('POST', '/agents', { name: 'keep-bot' })).body;
  const res = await member.send('PATCH', `/agents/${agent.id}`, { actsFor: owner.id });
  t.is(res.status, 400, res.text);
  t.is(res.body.error.errors[0].field, 'actsFor');
  t.is((await member.get(`/agents/${agent.id}`)).body.actsFor, member.id);
});

test('a member cannot create templates (403 forbidden), but reads them', async (t) => {
  const res = await member.send('POST', '/templates', { name: 'Anything goes', rules: [{ actions: ['*'] }] });
  assertError(t, res, 403, 'forbidden');
  t.regex(res.body.error.message, /owner|admin/);
  const list = await member.get('/templates?limit=200');
  t.is(list.status, 200, list.text);
  t.false(list.body.data.some((x: { name: string }) => x.name === 'Anything goes'));
});

// Admins

test('an admin manages an agent acting for the owner, with any rules', async (t) => {
  const agent = (await owner.send('POST', '/agents', { name: 'admin-managed', actsFor: owner.id })).body;
  const put = await admin.send('PUT', `/agents/${agent.id}/mandate`, {
    rules: [EMAIL, { actions: ['crm.update'], domains: ['api.example.com'] }],
  });
  t.is(put.status, 200, put.text);
  t.is(put.body.updatedBy, `user:${admin.id}`);
  const patched = await admin.send('PATCH', `/agents/${agent.id}`, { tags: ['admin-touched'] });
  t.is(patched.status, 200, patched.text);
  const tpl = await admin.send('POST', '/templates', { name: 'Admin template', rules: [{ actions: ['deploy'] }] });
  t.is(tpl.status, 201, tpl.text);
  const records = (await owner.ledger()).filter((r) => r.kind === 'mandate.updated' && r.subject === agent.id);
  t.deepEqual(
    records.map((r) => r.actor),
    [`user:${admin.id}`],
  );
});

// Ledger access

test('the ledger is read by an owner, an admin and an auditor; a member and an analyst get 403 forbidden', async (t) => {
  for (const who of [owner, admin, auditor]) {
    const res = await who.get('/ledger');
    t.is(res.status, 200, res.text);
    t.true(Array.isArray(res.body.data));
    t.true(res.body.data.length > 0);
  }
  for (const who of [member, analyst]) {
    const res = await who.get('/ledger');
    assertError(t, res, 403, 'forbidden');
    t.regex(res.body.error.message, /auditor/);
    t.is(res.body.data, undefined);
  }
});

test('an auditor and an analyst cannot create or change agents (403 forbidden)', async (t) => {
  for (const who of [auditor, analyst]) {
    assertError(t, await who.send('POST', '/agents', { name: 'reader-bot' }), 403, 'forbidden');
    assertError(t, await who.send('PATCH', `/agents/${ownersAgent.id}`, { name: 'reader-edit' }), 403, 'forbidden');
    assertError(t, await who.send('PUT', `/agents/${ownersAgent.id}/mandate`, { rules: [] }), 403, 'forbidden');
    assertError(t, await who.send('POST', `/agents/${ownersAgent.id}/keys`, {}), 403, 'forbidden');
    assertError(t, await who.send('POST', '/templates', { name: 'reader-template', rules: [] }), 403, 'forbidden');
  }
  t.deepEqual((await owner.get(`/agents/${ownersAgent.id}/mandate`)).body, ownersMandate);
  const list = await owner.get('/agents?limit=200');
  t.false(list.body.data.some((a: { name: string }) => a.name === 'reader-bot'));
});
