import test from 'ava';
import { assertError } from '../helpers/http.js';
import { ownerConsole, type Person } from '../helpers/console.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';

/**
 * The plan's agent allowance (SVC_PLAN_AGENTS): a workspace that has used it gets 402
 * plan_limit_reached for the next agent, and GET /api/w/{wid}/plan tells the allowances.
 */

let server: ServedInProcess;
let owner: Person;

const create = (name: string) => owner.send('POST', '/agents', { name });
const remove = (aid: string) => owner.send('DELETE', `/agents/${aid}`);
const liveIds = async (): Promise<string[]> =>
  (await owner.get('/agents?limit=200')).body.data.map((a: { id: string }) => a.id);

test.before(async () => {
  server = await serveInProcess({ env: { SVC_PLAN_AGENTS: '2' } });
  owner = await ownerConsole(server);
});

test.after.always(() => stopAndClean(server));

test.serial('a third agent gives 402 plan_limit_reached; after removing one, creating works again', async (t) => {
  const first = await create('one');
  const second = await create('two');
  t.is(first.status, 201, first.text);
  t.is(second.status, 201, second.text);

  const third = await create('three');
  assertError(t, third, 402, 'plan_limit_reached');
  t.true(third.body.error.docs.endsWith('#plan_limit_reached'), third.body.error.docs);
  t.deepEqual((await liveIds()).sort(), [first.body.id, second.body.id].sort());

  t.is((await remove(first.body.id)).status, 200);
  const again = await create('three');
  t.is(again.status, 201, again.text);
  assertError(t, await create('four'), 402, 'plan_limit_reached');
  t.deepEqual((await liveIds()).sort(), [second.body.id, again.body.id].sort());

  // Clean up for the next test: no live agent left.
  for (const id of [second.body.id, again.body.id]) t.is((await remove(id)).status, 200);
  t.deepEqual(await liveIds(), []);
});

test.serial('racing creations cannot pass the allowance', async (t) => {
  const replies = await Promise.all(Array.from({ length: 6 }, (_, i) => create(`racer-${i}`)));
  const statuses = replies.map((r) => r.status).sort();
  t.deepEqual(statuses, [201, 201, 402, 402, 402, 402]);
  for (const r of replies.filter((x) => x.status === 402)) t.is(r.body.error.type, 'plan_limit_reached');
  t.deepEqual(
    (await liveIds()).sort(),
    replies
      .filter((r) => r.status === 201)
      .map((r) => r.body.id)
      .sort(),
  );
});

test.serial('a refused creation leaves no ledger record', async (t) => {
  const refused = await create('never-made');
  assertError(t, refused, 402, 'plan_limit_reached');
  const ledger = await owner.get('/ledger?limit=200');
  t.is(ledger.status, 200, ledger.text);
  const created = ledger.body.data.filter((r: { kind: string }) => r.kind === 'agent.created');
  t.false(created.some((r: { data: { name: string } }) => r.data.name === 'never-made'));
  // Two rounds of the first test (three made), and two racers.
  t.is(created.length, 5);
});

test.serial(
  'the workspace’s plan tells its allowances, the configured ones set and the others unlimited',
  async (t) => {
    const plan = await owner.get('/plan');
    t.is(plan.status, 200, plan.text);
    t.deepEqual(plan.body, {
      plan: 'free',
      paid: false,
      allowances: { agents: 2, mandateRules: null, monthlyRequests: null, people: null },
      subscription: null,
    });
  },
);
