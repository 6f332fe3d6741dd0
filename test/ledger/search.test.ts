import test from 'ava';
import fc from 'fast-check';
import { matches, type LedgerFilter } from '../../src/ledger/search.js';
import type { LedgerRecord } from '../../src/ledger/service.js';
import { inProcessServer, type InProcess } from '../helpers/in-process.js';

/**
 * The console's ledger read (Ledger.search, GET /api/w/{wid}/ledger with filters): for any filter,
 * order and page size, reading page after page (resuming at `next`) gives exactly the records the
 * filter matches, each once, in index order or its reverse, and the last page says null. And
 * `matches` itself: a kind matches its own kind and those under it, an actor its whole name or
 * its id alone.
 */
const KINDS = ['agent.created', 'agent.stopped', 'agentx.other', 'key.minted', 'budget.created'];
const ACTORS = ['user:usr_a', 'agent:agt_b', 'system', 'token:ops'];
const SUBJECTS = ['s1', 's2', 's3'];

let running: InProcess;
let wid: string;
let all: LedgerRecord[];

test.before(async () => {
  running = await inProcessServer();
  const { people, ledger } = running.app.services;
  wid = (
    await people.createWorkspace({ name: 'Search', ownerEmail: 'o@acme.example', ownerPassword: 'a-long-password-1' })
  ).workspaceId;
  await running.app.store.write(async () => {
    for (let i = 0; i < 90; i += 1)
      await ledger.record({
        workspaceId: wid,
        actor: ACTORS[i % ACTORS.length]!,
        kind: KINDS[(i * 7) % KINDS.length]!,
        subject: SUBJECTS[(i * 5) % SUBJECTS.length]!,
        data: { i },
      });
  });
  all = (await ledger.list(wid, { limit: 200 })).data;
});

test.after.always(() => running?.close());

const filterArb: fc.Arbitrary<LedgerFilter> = fc.record(
  {
    kind: fc.constantFrom('agent', 'agent.created', 'agentx', 'key', 'budget.created', 'nothing'),
    actor: fc.constantFrom(...ACTORS, 'usr_a', 'agt_b', 'agt_zzz'),
    subject: fc.constantFrom(...SUBJECTS, 'none'),
  },
  { requiredKeys: [] },
);

test('paging through any filter gives exactly its matches, once each, in order', async (t) => {
  const { ledger } = running.app.services;
  await fc.assert(
    fc.asyncProperty(
      filterArb,
      fc.constantFrom('asc' as const, 'desc' as const),
      fc.integer({ min: 1, max: 40 }),
      async (filter, order, limit) => {
        const seen: number[] = [];
        let cursor: number | undefined;
        for (let pages = 0; pages < 200; pages += 1) {
          const page = await ledger.search(wid, { filter, order, limit, ...(cursor === undefined ? {} : { cursor }) });
          if (page.data.length > limit) return false;
          seen.push(...page.data.map((r) => r.index));
          if (page.next === null) break;
          cursor = page.next;
        }
        const expected = all.filter((r) => matches(r, filter)).map((r) => r.index);
        return JSON.stringify(seen) === JSON.stringify(order === 'asc' ? expected : expected.reverse());
      },
    ),
    { numRuns: 200 },
  );
  t.pass();
});

test('a kind matches itself and the kinds under it, never a longer word; an actor by name or id', (t) => {
  const record = (kind: string, actor: string) =>
    ({
      index: 0,
      id: 'evr_x',
      at: '2026-11-24T10:00:00.000Z',
      workspaceId: wid,
      kind,
      actor,
      subject: 's',
      data: {},
    }) as LedgerRecord;
  t.true(matches(record('agent.stopped', 'system'), { kind: 'agent' }));
  t.true(matches(record('agent.stopped', 'system'), { kind: 'agent.stopped' }));
  t.false(matches(record('agentx.other', 'system'), { kind: 'agent' }));
  t.true(matches(record('x', 'agent:agt_b'), { actor: 'agt_b' }));
  t.true(matches(record('x', 'agent:agt_b'), { actor: 'agent:agt_b' }));
  t.false(matches(record('x', 'agent:agt_bc'), { actor: 'agt_b' }));
  t.true(matches(record('x', 'system'), { from: '2026-11-24T10:00:00.000Z', to: '2026-11-24T10:00:00.001Z' }));
  t.false(matches(record('x', 'system'), { to: '2026-11-24T10:00:00.000Z' }));
});
