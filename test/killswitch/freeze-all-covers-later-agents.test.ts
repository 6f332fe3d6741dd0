import test from 'ava';
import { ownerConsole, type Person } from '../helpers/console.js';
import { authorize } from '../helpers/gate.js';
import { stopAndClean, svc } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { makeBot, pay, SERVER_ENV } from '../approvals/support.js';

/**
 * Review 2: `svc freeze --all --local` (commands/freeze.ts:30-31) lists the workspace's agents
 * and puts an `owner` hold on each, one transaction per agent. It does not turn on "stop every
 * agent" (the workspace stop-all record the standing check reads), so an agent created after the
 * command ran (by any member, during the incident) acts normally: the payment below is allowed
 * with a receipt while the operator believes every agent is frozen.
 */

let server: ServedInProcess;
let owner: Person;

test.before(async () => {
  server = await serveInProcess({ env: SERVER_ENV });
  owner = await ownerConsole(server);
});

test.after.always(() => stopAndClean(server));

const RULE = { actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 5000 };

test('after svc freeze --all, an agent created later is stopped too', async (t) => {
  const before = await makeBot(owner, 'before-freeze', [RULE]);
  const count = (await owner.get('/agents?limit=200')).body.data.length as number;
  const run = await svc([
    'freeze',
    '--all',
    '--confirm-count',
    String(count),
    '--reason',
    'incident 42',
    '--local',
    '--data-dir',
    server.dataDir,
    '--json',
  ]);
  t.is(run.code, 0, run.stderr);

  const old = await authorize(server, before.key, pay(100));
  t.deepEqual(old.body.signals, ['agent_frozen'], old.text);

  const later = await makeBot(owner, 'after-freeze', [RULE]);
  const res = await authorize(server, later.key, pay(100));
  t.is(res.status, 200, res.text);
  t.is(
    res.body.decision,
    'deny',
    `an agent created after freeze --all was ${res.body.decision} (receipt ${res.body.receipt ? 'issued' : 'none'})`,
  );
  t.deepEqual(res.body.signals, ['agent_frozen']);
});
