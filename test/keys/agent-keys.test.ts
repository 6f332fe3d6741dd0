import test from 'ava';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { assertError } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { addPerson, SERVER_ENV } from '../approvals/support.js';

/**
 * An agent's keys as its page in the console lists them (GET /api/w/{wid}/agents/{aid}/keys):
 * for whoever may mint and revoke them (owners, admins, the member the agent acts for; any other
 * agent is not found to a member), oldest first, revoked ones with revokedAt, never a key's value
 * or its hash (a value is shown once, when minted).
 */

let server: ServedInProcess;
let owner: Person;
let member: Person;

test.before(async () => {
  server = await serveInProcess({ env: SERVER_ENV });
  owner = await ownerConsole(server);
  member = await addPerson(server, owner.wid, 'member@example.com', 'member');
});

test.after.always(() => stopAndClean(server));

test('lists the keys minted, oldest first, revoked ones marked, without their values', async (t) => {
  const agent = expectStatus(await owner.send('POST', '/agents', { name: 'keyed-bot' }), 201, 'agent').body;
  const first = expectStatus(await owner.send('POST', `/agents/${agent.id}/keys`, { name: 'laptop' }), 201, 'key');
  const second = expectStatus(await owner.send('POST', `/agents/${agent.id}/keys`, {}), 201, 'key');
  expectStatus(await owner.send('DELETE', `/agents/${agent.id}/keys/${first.body.id}`), 200, 'revoke');

  const listed = await owner.get(`/agents/${agent.id}/keys`);
  t.is(listed.status, 200, listed.text);
  t.is(listed.body.next, null);
  const data = listed.body.data as Array<Record<string, unknown>>;
  t.deepEqual(data.map((k) => k.id).sort(), [first.body.id, second.body.id].sort());
  const byId = new Map(data.map((k) => [k.id, k]));
  t.like(byId.get(first.body.id), { name: 'laptop', scope: 'agent', agentId: agent.id });
  t.regex(String(byId.get(first.body.id)!.revokedAt), /^\d{4}-\d\d-\d\dT/);
  t.is(byId.get(second.body.id)!.revokedAt, null);
  t.false(listed.text.includes(first.body.key), 'no key value');
  t.false(listed.text.includes(second.body.key), 'no key value');
  for (const k of data) t.false('hash' in k || 'key' in k);
  // Oldest first.
  t.true(String(data[0]!.createdAt) <= String(data[1]!.createdAt));
});

test("a member lists the keys of an agent acting for them; any other agent's are not found", async (t) => {
  const own = expectStatus(await member.send('POST', '/agents', { name: 'members-own' }), 201, 'agent').body;
  expectStatus(await member.send('POST', `/agents/${own.id}/keys`, {}), 201, 'key');
  const mine = await member.get(`/agents/${own.id}/keys`);
  t.is(mine.status, 200, mine.text);
  t.is(mine.body.data.length, 1);

  const others = expectStatus(await owner.send('POST', '/agents', { name: 'owners-own' }), 201, 'agent').body;
  assertError(t, await member.get(`/agents/${others.id}/keys`), 404, 'not_found');
  assertError(t, await owner.get('/agents/agt_0000000000000000000000/keys'), 404, 'not_found');
});
