import test from 'ava';
import { ownerConsole, type Person } from '../helpers/console.js';
import { authorize, payment } from '../helpers/gate.js';
import { stopAndClean, svc } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { withStore } from '../helpers/store.js';

/**
 * `svc agents create --local` (mandate from templates only) and `svc agents list` (through the
 * server with SVC_TOKEN, or --local), as spawned processes against a running server's store.
 */
let server: ServedInProcess;
let owner: Person;
let templateId: string;

test.before(async () => {
  server = await serveInProcess();
  owner = await ownerConsole(server);
  const tpl = await owner.send('POST', '/templates', {
    name: 'pay acme',
    rules: [{ actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 5000 }],
  });
  templateId = tpl.body.id;
});

test.after.always(() => stopAndClean(server));

test.serial(
  'agents create --local: the agent acts for a member, its mandate comes from the template, and it works',
  async (t) => {
    const res = await svc([
      'agents',
      'create',
      '--name',
      'cli-bot',
      '--acts-for',
      'admin@localhost',
      '--template',
      templateId,
      '--tag',
      'cli',
      '--local',
      '--data-dir',
      server.dataDir,
      '--json',
    ]);
    t.is(res.code, 0, res.stderr);
    const agent = JSON.parse(res.stdout);
    t.like(agent, { name: 'cli-bot', actsFor: owner.id, tags: ['cli'], status: 'running', mandateRules: 1 });
    const mandate = await owner.get(`/agents/${agent.id}/mandate`);
    t.like(mandate.body.rules[0], { actions: ['payment'], merchants: ['acme.example'], maxAmount: 5000 });

    const key = await svc([
      'keys',
      'create',
      '--scope',
      'agent',
      '--agent',
      agent.id,
      '--local',
      '--data-dir',
      server.dataDir,
      '--json',
    ]);
    t.is(key.code, 0, key.stderr);
    const decided = await authorize(server, JSON.parse(key.stdout).key, payment(100));
    t.is(decided.body.decision, 'allow');
  },
);

test.serial('agents create: an unknown template or member is refused, and no agent is made', async (t) => {
  const before = (await owner.get('/agents?limit=200')).body.data.length;
  const badTemplate = await svc([
    'agents',
    'create',
    '--name',
    'x',
    '--template',
    'tpl_0000000000000000000000',
    '--local',
    '--data-dir',
    server.dataDir,
    '--json',
  ]);
  t.is(badTemplate.code, 2, badTemplate.stdout);
  t.is(JSON.parse(badTemplate.stdout).error.type, 'unknown_template');
  const badMember = await svc([
    'agents',
    'create',
    '--name',
    'x',
    '--acts-for',
    'nobody@example.com',
    '--local',
    '--data-dir',
    server.dataDir,
    '--json',
  ]);
  t.is(badMember.code, 2, badMember.stdout);
  t.is((await owner.get('/agents?limit=200')).body.data.length, before);
});

test.serial('agents list: through the server with SVC_TOKEN, and --local, agree; --status filters', async (t) => {
  const token = await withStore(
    server.dataDir,
    async (app) =>
      (
        await app.services.serviceTokens.create(owner.wid, {
          name: 'lister',
          scopes: ['agents:read'],
          expiresInDays: 1,
        })
      ).token,
  );
  const remote = await svc(['agents', 'list', '--url', server.url, '--json'], { env: { SVC_TOKEN: token } });
  t.is(remote.code, 0, remote.stderr);
  const local = await svc(['agents', 'list', '--local', '--data-dir', server.dataDir, '--json']);
  t.is(local.code, 0, local.stderr);
  const ids = (out: string) =>
    JSON.parse(out)
      .data.map((a: { id: string }) => a.id)
      .sort();
  t.deepEqual(ids(remote.stdout), ids(local.stdout));
  t.true(ids(remote.stdout).length >= 1);
  const stopped = await svc(['agents', 'list', '--status', 'stopped', '--url', server.url, '--json'], {
    env: { SVC_TOKEN: token },
  });
  t.deepEqual(JSON.parse(stopped.stdout).data, []);
  const human = await svc(['agents', 'list', '--local', '--data-dir', server.dataDir]);
  t.regex(human.stdout, /agt_\w+ {2}running {2}cli-bot {2}\[cli\]/);
  const noToken = await svc(['agents', 'list', '--url', server.url, '--json']);
  t.is(noToken.code, 2);
});

test.serial(
  'agents create through the server: SVC_TOKEN (agents:write) and a blueprint; the ledger names the token',
  async (t) => {
    const blueprint = (
      await owner.send('POST', '/blueprints', { name: 'acme payers', tags: ['payers'], templates: [templateId] })
    ).body.id as string;
    const token = await withStore(
      server.dataDir,
      async (app) =>
        (
          await app.services.serviceTokens.create(owner.wid, {
            name: 'provisioner',
            scopes: ['agents:write'],
            expiresInDays: 1,
          })
        ).token,
    );
    const res = await svc(
      [
        'agents',
        'create',
        '--blueprint',
        blueprint,
        '--name',
        'payer-1',
        '--acts-for',
        'admin@localhost',
        '--tag',
        'night',
        '--url',
        server.url,
        '--json',
      ],
      { env: { SVC_TOKEN: token } },
    );
    t.is(res.code, 0, res.stdout + res.stderr);
    const agent = JSON.parse(res.stdout);
    t.like(agent, {
      name: 'payer-1',
      actsFor: owner.id,
      tags: ['payers', 'night'],
      blueprint,
      mandateRules: 1,
      status: 'running',
    });
    t.like(
      (await owner.ledger()).find((r) => r.kind === 'agent.created' && r.subject === agent.id),
      { actor: 'token:provisioner' },
    );

    const noBlueprint = await svc(['agents', 'create', '--name', 'x', '--url', server.url, '--json'], {
      env: { SVC_TOKEN: token },
    });
    t.is(noBlueprint.code, 2);
    t.regex(JSON.parse(noBlueprint.stdout).error.message, /--blueprint/);
    const unknown = await svc(
      ['agents', 'create', '--blueprint', 'bp_0000000000000000000000', '--name', 'x', '--url', server.url, '--json'],
      { env: { SVC_TOKEN: token } },
    );
    t.is(unknown.code, 2);
    t.is(JSON.parse(unknown.stdout).error.type, 'unknown_template');
    const noToken = await svc([
      'agents',
      'create',
      '--blueprint',
      blueprint,
      '--name',
      'x',
      '--url',
      server.url,
      '--json',
    ]);
    t.is(noToken.code, 2);
    t.is(JSON.parse(noToken.stdout).error.type, 'unauthenticated');
  },
);
