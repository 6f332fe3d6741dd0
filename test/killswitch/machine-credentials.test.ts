import test from 'ava';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { authorize } from '../helpers/gate.js';
import { bearer, call, csrf } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { withStore } from '../helpers/store.js';
import {
  agentView,
  findApproval,
  makeBot,
  pay,
  pendingPayment,
  reviewRule,
  SERVER_ENV,
  type Bot,
  type PendingPayment,
} from '../approvals/support.js';

/**
 * No route reachable by a key or token decides an approval or lifts a freeze: bearer tokens are
 * ignored on these routes. From outside, the proof is that every such route
 * answers 401 to every kind of machine credential (an agent key, a workspace admin key, a service
 * token with every agent and approval scope), even with the CSRF header a browser would send, and
 * that nothing changed afterwards.
 */

let server: ServedInProcess;
let owner: Person;
let bot: Bot;
let stoppedBot: Bot;
let waiting: PendingPayment;
const credentials: Record<string, string> = {};

test.before(async () => {
  server = await serveInProcess({ env: SERVER_ENV });
  owner = await ownerConsole(server);
  bot = await makeBot(owner, 'machine-bot', [reviewRule()]);
  stoppedBot = await makeBot(owner, 'machine-stopped', [reviewRule()]);
  credentials['agent key'] = bot.key;
  credentials['workspace admin key'] = expectStatus(
    await owner.send('POST', '/keys', { scope: 'admin', name: 'ops-admin' }),
    201,
    'admin key',
  ).body.key;
  credentials['workspace inference key'] = expectStatus(
    await owner.send('POST', '/keys', { scope: 'inference', name: 'ops-inference' }),
    201,
    'inference key',
  ).body.key;
  const token = await withStore(server.dataDir, (app) =>
    app.services.serviceTokens.create(owner.wid, {
      name: 'ops-token',
      scopes: ['agents:read', 'agents:write', 'agents:freeze', 'approvals:read', 'evidence:read'],
      expiresInDays: 30,
    }),
  );
  credentials['service token'] = token.token;
});

test.after.always(() => stopAndClean(server));

test.serial(
  'approve, deny, restart and lifting stop-all answer 401 to every machine credential; nothing changes',
  async (t) => {
    // The state a machine would like to change: a waiting approval, a stopped agent, every agent stopped.
    waiting = await pendingPayment(t, server, bot);
    expectStatus(await owner.send('POST', `/agents/${stoppedBot.agentId}/stop`, { reason: 'held' }), 200, 'stop');
    expectStatus(await owner.send('POST', '/stop-all', { reason: 'everything held' }), 200, 'stop-all');

    const wid = owner.wid;
    const routes: [string, string, unknown][] = [
      ['POST', `/api/w/${wid}/approvals/${waiting.approvalId}/approve`, { note: 'machine' }],
      ['POST', `/api/w/${wid}/approvals/${waiting.approvalId}/deny`, { note: 'machine' }],
      ['POST', `/api/w/${wid}/agents/${stoppedBot.agentId}/restart`, {}],
      ['DELETE', `/api/w/${wid}/stop-all`, undefined],
      // Reading and the other switches are session routes too.
      ['GET', `/api/w/${wid}/approvals?status=pending`, undefined],
      ['POST', `/api/w/${wid}/stop-all`, { reason: 'machine' }],
      ['POST', `/api/w/${wid}/agents/${bot.agentId}/stop`, { reason: 'machine' }],
    ];
    for (const [name, value] of Object.entries(credentials)) {
      for (const [method, path, json] of routes) {
        const headers = method === 'GET' ? bearer(value) : { ...csrf, ...bearer(value) };
        const res = await call(server.url, method, path, { headers, ...(json === undefined ? {} : { json }) });
        t.is(res.status, 401, `${name}: ${method} ${path} → ${res.status} ${res.text}`);
        t.is(res.body?.error?.type, 'unauthenticated', `${name}: ${method} ${path}`);
        t.is(res.body?.error?.requestId, res.headers['x-request-id']);
      }
    }

    // Nothing changed.
    t.like(await findApproval(owner, waiting.approvalId), { status: 'pending', approvals: [] });
    t.is((await agentView(server, bot, waiting.id)).body.decision, 'review');
    t.like((await owner.get(`/agents/${stoppedBot.agentId}`)).body, { holds: [{ hold: 'owner', reason: 'held' }] });
    t.like((await owner.get('/stop-all')).body, { stopped: true, reason: 'everything held', by: `user:${owner.id}` });
    // Running on its own account; stopped only by the workspace's stop-all, which shows as its hold.
    t.like((await owner.get(`/agents/${bot.agentId}`)).body, {
      status: 'stopped',
      holds: [{ hold: 'workspace', reason: 'everything held' }],
    });
    const machineRecords = (await owner.ledger()).filter(
      (r) => !r.actor.startsWith('user:') && !r.actor.startsWith('agent:') && r.kind !== 'approval.expired',
    );
    t.false(
      machineRecords.some((r) => /^(approval\.|agent\.(stopped|restarted)|workspace\.stop_all)/.test(r.kind)),
      JSON.stringify(machineRecords),
    );
  },
);

test.serial(
  "a machine credential sent alongside no session is not mistaken for one: the same calls with the owner's cookie succeed",
  async (t) => {
    // The refusals above are about the credential, not the routes: a person does all of it.
    const lift = await call(server.url, 'DELETE', `/api/w/${owner.wid}/stop-all`, {
      headers: { ...csrf, cookie: owner.cookie, ...bearer(credentials['service token']!) },
    });
    t.is(lift.status, 200, lift.text);
    t.false(lift.body.stopped);
    const restart = await owner.send('POST', `/agents/${stoppedBot.agentId}/restart`);
    t.is(restart.status, 200, restart.text);
    const approve = await owner.send('POST', `/approvals/${waiting.approvalId}/approve`, { note: 'a person' });
    t.is(approve.status, 200, approve.text);
    t.is((await agentView(server, bot, waiting.id)).body.decision, 'allow');
    t.is((await authorize(server, stoppedBot.key, pay(100))).body.decision, 'allow');
  },
);
