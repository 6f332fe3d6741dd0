import test from 'ava';
import type { App } from '../../src/app.js';
import type { Clock } from '../../src/lib/clock.js';
import type { Table } from '../../src/store/index.js';
import type { DeliveryRecord } from '../../src/webhooks/records.js';
import { removeDir, tempDir } from '../helpers/process.js';
import { withStore } from '../helpers/store.js';

/**
 * Every record with a window is swept after it by the one background sweeper, and nothing inside
 * its window is: for each table, a record just past its window and one just inside it, on a
 * fixed clock that the test moves; the sweep is run directly and the store read before and after.
 */
const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const T0 = Date.parse('2026-11-01T12:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

interface MovableClock extends Clock {
  set(ms: number): void;
}
const movable = (ms: number): MovableClock => {
  let now = ms;
  return { now: () => now, set: (to) => (now = to) };
};

const delivery = (id: string, status: DeliveryRecord['status'], createdAt: number): DeliveryRecord => ({
  id,
  workspaceId: 'ws_a',
  endpointId: 'whk_a',
  eventId: `evr_${id}`,
  eventType: 'action.decided',
  body: '{}',
  createdAt: iso(createdAt),
  status,
  attempts: [],
  nextAttemptAt: status === 'pending' ? iso(createdAt) : null,
});

const call = (id: string, at: number) => ({
  id,
  workspaceId: 'ws_a',
  at: iso(at),
  keyId: 'key_a',
  principal: null,
  team: null,
  agentId: null,
  taskId: 'task_a',
  taskClass: 'general',
  sessionId: 'ses_a',
  shape: 'openai' as const,
  stream: false,
  dryRun: false,
  enforcement: 'shadow',
  requestedModel: 'small',
  model: 'small',
  provider: 'vendor-a',
  attemptedModels: ['small'],
  inputTokens: 1,
  outputTokens: 1,
  costMicros: 1,
  latencyMs: 1,
  overheadMicros: 1,
  outcome: 'ok' as const,
  budgetId: null,
});

/** Puts, for every swept table, one record past its window at T0 ("old") and one inside it ("live"). */
async function seed(app: App): Promise<void> {
  const t = app.store.tables;
  const code = (expiresAt: number) => ({
    clientId: 'mcp_x',
    redirectUri: 'http://127.0.0.1/cb',
    challenge: 'c',
    connectionId: 'cnx_a',
    workspaceId: 'ws_a',
    expiresAt: iso(expiresAt),
    usedAt: iso(expiresAt - 4 * MIN),
  });
  const token = (kind: 'access' | 'refresh', expiresAt: number) => ({
    kind,
    connectionId: 'cnx_a',
    workspaceId: 'ws_a',
    agentId: 'agt_a',
    clientId: 'mcp_x',
    expiresAt: iso(expiresAt),
    usedAt: null,
    pairedAccess: null,
  });
  await app.store.write(async () => {
    // The gate's idempotency keys: 24 hours per agent.
    await t.idempotency.put(['ws_a', 'agt_a', 'old'], {
      actionId: 'act_1',
      fingerprint: 'f',
      expiresAt: iso(T0 - 6 * MIN),
    });
    await t.idempotency.put(['ws_a', 'agt_a', 'live'], {
      actionId: 'act_2',
      fingerprint: 'f',
      expiresAt: iso(T0 + HOUR),
    });
    // Authorization codes: spent or not, kept a day past their expiry (a replay still ends the connection).
    await t.oauthCodes.put('old', code(T0 - DAY - MIN));
    await t.oauthCodes.put('live', code(T0 - DAY + MIN));
    await t.oauthTokens.put('old-access', token('access', T0 - 6 * MIN));
    await t.oauthTokens.put('live-access', token('access', T0 + 30 * MIN));
    await t.oauthTokens.put('old-refresh', { ...token('refresh', T0 - HOUR), usedAt: iso(T0 - 20 * DAY) });
    await t.oauthTokens.put('live-refresh', { ...token('refresh', T0 + 10 * DAY), usedAt: iso(T0 - DAY) });
    await t.oauthConsentsUsed.put('old', iso(T0 - 6 * MIN));
    await t.oauthConsentsUsed.put('live', iso(T0 + 5 * MIN));
    const device = (expiresAt: number) => ({
      userCode: 'BCDFGHJK',
      clientId: 'svc-cli',
      requestedAt: iso(expiresAt - 10 * MIN),
      requestedFrom: '127.0.0.1',
      expiresAt: iso(expiresAt),
      intervalSeconds: 5,
      lastPolledAt: null,
      status: 'used' as const,
      userId: 'usr_a',
      workspaceId: 'ws_a',
      decidedAt: null,
    });
    await t.deviceCodes.put('old', device(T0 - DAY - MIN));
    await t.deviceCodes.put('live', device(T0 - DAY + MIN));
    await t.deviceUserCodes.put('OLD', { hash: 'old', expiresAt: iso(T0 - 6 * MIN) });
    await t.deviceUserCodes.put('LIVE', { hash: 'live', expiresAt: iso(T0 + 5 * MIN) });
    const personToken = (kind: 'access' | 'refresh', expiresAt: number) => ({
      kind,
      loginId: 'lgn_a',
      workspaceId: 'ws_a',
      userId: 'usr_a',
      clientId: 'svc-cli',
      expiresAt: iso(expiresAt),
      usedAt: null,
      pairedAccess: null,
    });
    await t.personTokens.put('old-access', personToken('access', T0 - 6 * MIN));
    await t.personTokens.put('live-access', personToken('access', T0 + 30 * MIN));
    await t.personTokens.put('old-refresh', { ...personToken('refresh', T0 - HOUR), usedAt: iso(T0 - 20 * DAY) });
    await t.personTokens.put('live-refresh', personToken('refresh', T0 + 10 * DAY));
    // Upstream OAuth connections started in the console and never finished.
    for (const [state, expiresAt] of [
      ['old', T0 - 6 * MIN],
      ['live', T0 + 5 * MIN],
    ] as const)
      await t.mcpOAuthPending.put(state, {
        workspaceId: 'ws_a',
        server: 'up',
        serverCreatedAt: iso(T0 - HOUR),
        holder: 'agt_a',
        userId: 'usr_a',
        actor: 'user:usr_a',
        verifierSealed: 'sealed',
        redirectUri: 'http://127.0.0.1/api/mcp-oauth/callback',
        issuer: 'https://as.example',
        metadata: {},
        clientId: 'c',
        clientSecretSealed: null,
        resource: null,
        expiresAt: iso(expiresAt),
      });
    // Single-use identifiers (integrations/once.ts).
    await t.hookOnce.put(['slack', 'old'], T0 - 6 * MIN);
    await t.hookOnce.put(['slack', 'live'], T0 + MIN);
    await t.chatButtons.put('old', {
      workspaceId: 'ws_a',
      approvalId: 'apr_1',
      decision: 'approve',
      expiresAt: iso(T0 - DAY - MIN),
    });
    await t.chatButtons.put('live', {
      workspaceId: 'ws_a',
      approvalId: 'apr_2',
      decision: 'deny',
      expiresAt: iso(T0 - HOUR),
    });
    // Console sessions, with their index by person.
    for (const [hash, expiresAt] of [
      ['old', T0 - MIN],
      ['live', T0 + HOUR],
    ] as const) {
      await t.sessions.put(hash, { userId: 'usr_a', createdAt: iso(expiresAt - 12 * HOUR), expiresAt: iso(expiresAt) });
      await t.sessionsByUser.put(['usr_a', hash], iso(expiresAt));
    }
    await t.drills.put(['ws_a', 'tok_old'], iso(T0 - HOUR - MIN));
    await t.drills.put(['ws_a', 'tok_live'], iso(T0 - 30 * MIN));
    await t.periodUsage.put(['ws_a', 'agt_a', 'u', 'EUR', iso(T0 - 63 * DAY).slice(0, 10)], 100);
    await t.periodUsage.put(['ws_a', 'agt_a', 'u', 'EUR', iso(T0 - 31 * DAY).slice(0, 10)], 200);
    // Operational records: 90 days by default.
    await t.calls.put(['ws_a', 'call_old'], call('call_old', T0 - 90 * DAY - MIN));
    await t.calls.put(['ws_a', 'call_live'], call('call_live', T0 - 89 * DAY));
    await t.tasks.put(['ws_a', 'task_old'], iso(T0 - 91 * DAY));
    await t.tasks.put(['ws_a', 'task_live'], iso(T0 - 89 * DAY));
    await t.deliveries.put(['ws_a', 'whk_a', 'old_done'], delivery('old_done', 'delivered', T0 - 91 * DAY));
    await t.deliveries.put(['ws_a', 'whk_a', 'old_failed'], delivery('old_failed', 'failed', T0 - 100 * DAY));
    await t.deliveries.put(['ws_a', 'whk_a', 'old_pending'], delivery('old_pending', 'pending', T0 - 100 * DAY));
    await t.deliveries.put(['ws_a', 'whk_a', 'live'], delivery('live', 'delivered', T0 - 89 * DAY));
    await t.hookEvents.put(['ws_a', 'issuer', 'old'], { answer: { received: true }, at: iso(T0 - 91 * DAY) });
    await t.hookEvents.put(['ws_a', 'issuer', 'live'], { answer: { received: true }, at: iso(T0 - 89 * DAY) });
  });
}

/** Every swept table's keys, joined, for one comparison. */
async function held(app: App): Promise<Record<string, string[]>> {
  const t = app.store.tables;
  const names = [
    'idempotency',
    'oauthCodes',
    'oauthTokens',
    'oauthConsentsUsed',
    'deviceCodes',
    'deviceUserCodes',
    'personTokens',
    'mcpOAuthPending',
    'hookOnce',
    'chatButtons',
    'sessions',
    'sessionsByUser',
    'drills',
    'periodUsage',
    'calls',
    'tasks',
    'deliveries',
    'hookEvents',
  ] as const;
  return Object.fromEntries(
    await Promise.all(
      names.map(async (n) => [n, (await (t[n] as Table<unknown>).scan([])).map((e) => e.key.join('/'))] as const),
    ),
  );
}

test('a run sweeps each record past its window and keeps every record inside it', async (t) => {
  const dir = await tempDir();
  const clock = movable(T0);
  try {
    await withStore(
      dir,
      async (app) => {
        await seed(app);
        const day63 = iso(T0 - 63 * DAY).slice(0, 10);
        const day31 = iso(T0 - 31 * DAY).slice(0, 10);
        t.deepEqual(await held(app), {
          idempotency: ['ws_a/agt_a/live', 'ws_a/agt_a/old'],
          oauthCodes: ['live', 'old'],
          oauthTokens: ['live-access', 'live-refresh', 'old-access', 'old-refresh'],
          oauthConsentsUsed: ['live', 'old'],
          deviceCodes: ['live', 'old'],
          deviceUserCodes: ['LIVE', 'OLD'],
          personTokens: ['live-access', 'live-refresh', 'old-access', 'old-refresh'],
          mcpOAuthPending: ['live', 'old'],
          hookOnce: ['slack/live', 'slack/old'],
          chatButtons: ['live', 'old'],
          sessions: ['live', 'old'],
          sessionsByUser: ['usr_a/live', 'usr_a/old'],
          drills: ['ws_a/tok_live', 'ws_a/tok_old'],
          periodUsage: [`ws_a/agt_a/u/EUR/${day63}`, `ws_a/agt_a/u/EUR/${day31}`],
          calls: ['ws_a/call_live', 'ws_a/call_old'],
          tasks: ['ws_a/task_live', 'ws_a/task_old'],
          deliveries: ['ws_a/whk_a/live', 'ws_a/whk_a/old_done', 'ws_a/whk_a/old_failed', 'ws_a/whk_a/old_pending'],
          hookEvents: ['ws_a/issuer/live', 'ws_a/issuer/old'],
        });

        const report = await app.services.sweeper.run();
        t.is(report.removed, 20);
        t.deepEqual(await held(app), {
          idempotency: ['ws_a/agt_a/live'],
          oauthCodes: ['live'],
          oauthTokens: ['live-access', 'live-refresh'],
          oauthConsentsUsed: ['live'],
          deviceCodes: ['live'],
          deviceUserCodes: ['LIVE'],
          personTokens: ['live-access', 'live-refresh'],
          mcpOAuthPending: ['live'],
          hookOnce: ['slack/live'],
          chatButtons: ['live'],
          sessions: ['live'],
          sessionsByUser: ['usr_a/live'],
          drills: ['ws_a/tok_live'],
          periodUsage: [`ws_a/agt_a/u/EUR/${day31}`],
          calls: ['ws_a/call_live'],
          tasks: ['ws_a/task_live'],
          deliveries: ['ws_a/whk_a/live', 'ws_a/whk_a/old_pending'],
          hookEvents: ['ws_a/issuer/live'],
        });

        // A second run at the same time finds nothing more: what is inside its window stays.
        t.is((await app.services.sweeper.run()).removed, 0);

        // Once the clock passes every window, the rest goes too; a pending delivery never does.
        clock.set(T0 + 100 * DAY);
        t.is((await app.services.sweeper.run()).removed, 19);
        const after = await held(app);
        t.deepEqual(after.deliveries, ['ws_a/whk_a/old_pending']);
        t.true(
          Object.entries(after).every(([name, keys]) => name === 'deliveries' || keys.length === 0),
          JSON.stringify(after),
        );
      },
      { clock },
    );
  } finally {
    await removeDir(dir);
  }
});

test('the retention follows retention.days, and the ledger is never swept', async (t) => {
  const dir = await tempDir();
  const clock = movable(T0);
  try {
    await withStore(
      dir,
      async (app) => {
        const t_ = app.store.tables;
        await app.store.write(async () => {
          await t_.calls.put(['ws_a', 'call_8d'], call('call_8d', T0 - 8 * DAY));
          await t_.calls.put(['ws_a', 'call_6d'], call('call_6d', T0 - 6 * DAY));
          await app.services.ledger.record({
            workspaceId: 'ws_a',
            actor: 'system',
            kind: 'test.kept',
            subject: 'x',
            data: {},
          });
        });
        await app.services.ledger.checkpointAll();
        const ledger = (await t_.ledger.scan([])).length;
        const checkpoints = (await t_.checkpoints.scan([])).length;
        t.true(ledger > 0 && checkpoints > 0);
        t.is((await app.services.sweeper.run()).removed, 1);
        t.deepEqual(
          (await t_.calls.scan([])).map((e) => e.key[1]),
          ['call_6d'],
        );
        clock.set(T0 + 10 * 365 * DAY);
        await app.services.sweeper.run();
        t.is((await t_.ledger.scan([])).length, ledger, 'ten years on, every ledger record is there');
        t.is((await t_.checkpoints.scan([])).length, checkpoints);
        t.deepEqual(await t_.calls.scan([]), []);
      },
      { clock, overrides: { 'retention.days': 7 } },
    );
  } finally {
    await removeDir(dir);
  }
});
