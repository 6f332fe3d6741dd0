import test from 'ava';
import { assertError } from '../helpers/http.js';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';

/**
 * 402 plan_limit_reached when the plan's mandate allowance (SVC_PLAN_MANDATE_RULES,
 * rules over all of a workspace's agents) would be passed; a refused mandate leaves the old one.
 */

const rule = (n: number) => ({ actions: [`ops.task${n}`] });

let server: ServedInProcess;
let owner: Person;

const newAgent = async (name: string): Promise<string> =>
  expectStatus(await owner.send('POST', '/agents', { name }), 201, 'agent').body.id;
const put = (aid: string, rules: unknown[]) => owner.send('PUT', `/agents/${aid}/mandate`, { rules });
const mandate = async (aid: string) => (await owner.get(`/agents/${aid}/mandate`)).body;
const mandateRecords = async (aid: string) =>
  (await owner.ledger()).filter((r) => r.kind === 'mandate.updated' && r.subject === aid);

test.before(async () => {
  server = await serveInProcess({ env: { SVC_PLAN_MANDATE_RULES: '2' } });
  owner = await ownerConsole(server);
});

test.after.always(() => stopAndClean(server));

// Serial: the allowance is shared by the whole workspace.

test.serial('a mandate of three rules gives 402 plan_limit_reached and the earlier mandate stays', async (t) => {
  const aid = await newAgent('solo');
  const saved = await put(aid, [rule(1), rule(2)]);
  t.is(saved.status, 200, saved.text);

  const over = await put(aid, [rule(1), rule(2), rule(3)]);
  assertError(t, over, 402, 'plan_limit_reached');
  t.deepEqual(await mandate(aid), saved.body);
  t.is((await mandateRecords(aid)).length, 1);

  // Replacing an agent's rules does not count the old ones twice.
  const replaced = await put(aid, [rule(3), rule(4)]);
  t.is(replaced.status, 200, replaced.text);
  t.deepEqual(
    (await mandate(aid)).rules.map((r: { actions: string[] }) => r.actions[0]),
    ['ops.task3', 'ops.task4'],
  );

  t.is((await put(aid, [])).status, 200);
});

test.serial('rules over two agents count together: three in all gives 402 and each mandate stays', async (t) => {
  const [a, b] = [await newAgent('pair-a'), await newAgent('pair-b')];
  const savedA = await put(a, [rule(1), rule(2)]);
  t.is(savedA.status, 200, savedA.text);

  const overB = await put(b, [rule(3)]);
  assertError(t, overB, 402, 'plan_limit_reached');
  t.deepEqual((await mandate(b)).rules, []);
  t.deepEqual(await mandate(a), savedA.body);

  const narrowedA = await put(a, [savedA.body.rules[0]]);
  t.is(narrowedA.status, 200, narrowedA.text);
  const savedB = await put(b, [rule(3)]);
  t.is(savedB.status, 200, savedB.text);

  const overA = await put(a, [savedA.body.rules[0], rule(4)]);
  assertError(t, overA, 402, 'plan_limit_reached');
  t.deepEqual(await mandate(a), narrowedA.body);
  t.deepEqual(await mandate(b), savedB.body);

  for (const id of [a, b]) t.is((await put(id, [])).status, 200);
});

test.serial('two agents racing for the last rules cannot both pass the allowance', async (t) => {
  const [a, b] = [await newAgent('racer-a'), await newAgent('racer-b')];
  const replies = await Promise.all([put(a, [rule(1), rule(2)]), put(b, [rule(3), rule(4)])]);
  t.deepEqual(replies.map((r) => r.status).sort(), [200, 402]);
  const total = (await mandate(a)).rules.length + (await mandate(b)).rules.length;
  t.is(total, 2);
  for (const id of [a, b]) t.is((await put(id, [])).status, 200);
});

test.serial('the rules of a removed agent no longer use the allowance', async (t) => {
  const gone = await newAgent('retiring');
  t.is((await put(gone, [rule(1), rule(2)])).status, 200);
  const removed = await owner.send('DELETE', `/agents/${gone}`);
  t.is(removed.status, 200, removed.text);

  const next = await newAgent('successor');
  const res = await put(next, [rule(1), rule(2)]);
  t.is(res.status, 200, res.text);
  t.is((await mandate(next)).rules.length, 2);
});
