import test from 'ava';
import { ownerConsole, type Person } from '../helpers/console.js';
import { assertError, bearer, call } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { withStore } from '../helpers/store.js';
import { makeBot, pendingPayment, reviewRule, SERVER_ENV } from './support.js';

/**
 * Approvals for automation (approvals:read): a token reads what waits for people and
 * the rules people's repeated approvals suggest; it can never decide (see the route-table test).
 */
let server: ServedInProcess;
let owner: Person;
let token: string;
let other: string;

test.before(async () => {
  server = await serveInProcess({ env: SERVER_ENV });
  owner = await ownerConsole(server);
  ({ token, other } = await withStore(server.dataDir, async (app) => ({
    token: (
      await app.services.serviceTokens.create(owner.wid, {
        name: 'ops-bot',
        scopes: ['approvals:read'],
        expiresInDays: 1,
      })
    ).token,
    other: (
      await app.services.serviceTokens.create(owner.wid, {
        name: 'freezer',
        scopes: ['agents:freeze'],
        expiresInDays: 1,
      })
    ).token,
  })));
});

test.after.always(() => stopAndClean(server));

test.serial('waiting approvals, then the rule that three approvals of the same payment suggest', async (t) => {
  const bot = await makeBot(owner, 'needs-approval', [reviewRule()]);
  const pending = [];
  for (const amount of [2500, 3000, 3500]) pending.push(await pendingPayment(t, server, bot, amount));

  const waiting = await call(server.url, 'GET', '/v1/admin/approvals', { headers: bearer(token) });
  t.is(waiting.status, 200, waiting.text);
  t.deepEqual(waiting.body.data.map((a: { id: string }) => a.id).sort(), pending.map((p) => p.approvalId).sort());
  t.true(waiting.body.data.every((a: { status: string }) => a.status === 'pending'));

  t.deepEqual((await call(server.url, 'GET', '/v1/admin/approvals/suggestions', { headers: bearer(token) })).body, {
    data: [],
  });
  for (const p of pending) t.is((await owner.send('POST', `/approvals/${p.approvalId}/approve`, {})).status, 200);

  const suggested = await call(server.url, 'GET', '/v1/admin/approvals/suggestions', { headers: bearer(token) });
  t.is(suggested.status, 200);
  t.deepEqual(suggested.body.data, [
    {
      agentId: bot.agentId,
      approvedCount: 3,
      rule: { actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 3500 },
    },
  ]);
  t.deepEqual((await call(server.url, 'GET', '/v1/admin/approvals', { headers: bearer(token) })).body.data, []);
});

test('approvals:read is needed; no token is 401', async (t) => {
  assertError(
    t,
    await call(server.url, 'GET', '/v1/admin/approvals', { headers: bearer(other) }),
    403,
    'missing_scope',
  );
  assertError(
    t,
    await call(server.url, 'GET', '/v1/admin/approvals/suggestions', { headers: bearer(other) }),
    403,
    'missing_scope',
  );
  assertError(t, await call(server.url, 'GET', '/v1/admin/approvals'), 401, 'unauthenticated');
});
