import test from 'ava';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { consoleClient, expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { call, csrf, signIn } from '../helpers/http.js';
import { startMcpUpstream, type McpUpstream } from '../helpers/mcp-upstream.js';
import {
  removeDir,
  ROOT,
  startServer,
  stopAndClean,
  svc,
  tempDir,
  type CliResult,
  type RunningServer,
} from '../helpers/process.js';

/**
 * Setup as code (docs/setup-as-code.md): `svc apply -f FILE` and `svc export` through a spawned
 * `svc serve` with the spawned `svc`, signed in with a service token (SVC_TOKEN, setup:read and
 * setup:write) made in the console; `svc workspaces create|list` signed in as the owner. What
 * each run leaves is read back through the console's routes and the ledger.
 */
let server: RunningServer;
let upstream: McpUpstream;
let owner: Person;
let ownerPassword: string;
let dir: string;
let token: string;
const SECRETS = { STRIPE_WEBHOOK_SECRET: 'whsec_stripe-secret-one-1234', FILES_TOKEN: 'upstream-secret-1' };

const json = (r: CliResult) => JSON.parse(r.stdout);
/** oclif's error text as one line: its wrapping (a new line and the " ›" margin) undone. */
const unwrapped = (stderr: string) => stderr.replace(/\s*\n\s*›\s*/g, ' ');
const run = (args: string[], env: Record<string, string> = {}, input?: string) =>
  svc([...args, '--url', server.url], { env: { SVC_TOKEN: token, ...SECRETS, ...env }, ...(input ? { input } : {}) });
const write = async (name: string, text: string) => {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
};

const FILE = (
  v: {
    maxAmount?: number;
    tags?: string;
    budget?: number;
    allow?: string;
    stripeEnv?: string;
    extraAgent?: boolean;
  } = {},
) => `version: 1
templates:
  - name: small-payments
    rules:
      - actions: [payment]
        merchants: [acme.example]
        currencies: [EUR]
        maxAmount: ${v.maxAmount ?? 5000}
        approval: { above: 2000, approvers: [admin@localhost] }
blueprints:
  - name: billing
    tags: [billing]
    templates: [small-payments]
agents:
  - name: invoice-bot
    blueprint: billing
    actsFor: admin@localhost
    tags: [${v.tags ?? 'eu'}]
${
  v.extraAgent === false
    ? ''
    : `  - name: spare-bot
    blueprint: billing
`
}budgets:
  - scope: { kind: agent, agent: invoice-bot }
    amountMicros: ${v.budget ?? 5000000}
    period: day
mcpServers:
  - name: files
    url: ${upstream.url}
    secret: { fromEnv: FILES_TOKEN }
    allowTools: [${v.allow ?? 'echo'}]
integrations:
  issuer: {}
  stripe:
    signingSecret: { fromEnv: ${v.stripeEnv ?? 'STRIPE_WEBHOOK_SECRET'} }
`;

test.before(async () => {
  upstream = await startMcpUpstream({ secrets: ['upstream-secret-1', 'upstream-secret-2'] });
  server = await startServer({ env: { SVC_MCP_ALLOW_PRIVATE_UPSTREAMS: '1', SVC_SIGNIN_RATE_PER_MINUTE: '1000' } });
  owner = await ownerConsole(server);
  ownerPassword = `${server.boot.owner!.password}-changed`;
  const made = expectStatus(
    await owner.send('POST', '/service-tokens', {
      name: 'ci',
      scopes: ['setup:read', 'setup:write'],
      expiresInDays: 1,
    }),
    201,
    'token',
  );
  token = made.body.token as string;
  dir = await tempDir('svc-apply-');
});

test.after.always(async () => {
  await stopAndClean(server);
  await upstream?.close();
  if (dir) await removeDir(dir);
});

test.serial(
  'apply on an empty workspace creates every resource, through the services and their ledger records',
  async (t) => {
    const file = await write('ws.yaml', FILE());
    const res = await run(['apply', '-f', file, '--json']);
    t.is(res.code, 0, res.stderr);
    const out = json(res);
    t.true(out.changed);
    t.like(out.summary, { create: 8, update: 0, remove: 0 });
    t.deepEqual(
      out.changes
        .filter((c: { action: string }) => c.action === 'create')
        .map((c: { section: string; name: string }) => `${c.section}/${c.name}`),
      [
        'templates/small-payments',
        'blueprints/billing',
        'agents/invoice-bot',
        'agents/spare-bot',
        'budgets/agent:invoice-bot:day',
        'mcpServers/files',
        'integrations/issuer',
        'integrations/stripe',
      ],
    );
    // The issuer's secret is made by svc and shown this once; no secret of the file is ever answered.
    t.is(out.secrets.length, 1);
    t.regex(out.secrets[0].secret, /^whs_/);
    t.false(res.stdout.includes(SECRETS.STRIPE_WEBHOOK_SECRET));
    t.false(res.stdout.includes(SECRETS.FILES_TOKEN));

    // What the console sees.
    const templates = (await owner.get('/templates')).body.data;
    t.is(templates.length, 1);
    t.like(templates[0].rules[0], {
      actions: ['payment'],
      maxAmount: 5000,
      approval: { above: 2000, approvers: [owner.id] },
    });
    const agents = (await owner.get('/agents')).body.data as Array<{
      id: string;
      name: string;
      tags: string[];
      actsFor: string;
    }>;
    const bot = agents.find((a) => a.name === 'invoice-bot')!;
    t.deepEqual([...bot.tags].sort(), ['billing', 'eu']);
    t.is(bot.actsFor, owner.id);
    const mandate = (await owner.get(`/agents/${bot.id}/mandate`)).body;
    t.is(mandate.rules.length, 1);
    t.like((await owner.get('/mcp-servers')).body.data[0], { name: 'files', hasSecret: true, allowTools: ['echo'] });
    const integrations = (await owner.get('/integrations')).body.data.map((i: { kind: string }) => i.kind).sort();
    t.deepEqual(integrations, ['issuer', 'stripe']);
    const budgets = (await owner.get('/budgets')).body.data;
    t.like(budgets[0], { scope: { kind: 'agent', id: bot.id }, amountMicros: 5000000, period: 'day' });

    const ledger = await owner.ledger();
    for (const kind of ['template.created', 'blueprint.created', 'agent.created', 'budget.created', 'mcp.server_added'])
      t.like(
        ledger.find((r) => r.kind === kind),
        { actor: 'token:ci' },
        kind,
      );
    t.like(
      ledger.find((r) => r.kind === 'setup.applied'),
      { actor: 'token:ci', data: { create: 8, update: 0, remove: 0 } },
    );
    t.false(JSON.stringify(ledger).includes(SECRETS.STRIPE_WEBHOOK_SECRET));
  },
);

test.serial('applying the same file again changes nothing, writes nothing, and says so', async (t) => {
  const file = join(dir, 'ws.yaml');
  const before = (await owner.ledger()).length;
  const text = await run(['apply', '-f', file]);
  t.is(text.code, 0, text.stderr);
  t.regex(text.stdout, /^No change: the workspace already matches .*ws\.yaml \(8 unchanged\)\.$/m);
  const again = await run(['apply', '-f', file, '--json']);
  t.is(again.code, 0, again.stderr);
  t.false(json(again).changed);
  t.like(json(again).summary, { create: 0, update: 0, remove: 0, unchanged: 8 });
  // The file from standard input (-f -), as a pipeline gives it.
  const piped = await run(['apply', '-f', '-', '--json'], {}, await readFile(file, 'utf8'));
  t.is(piped.code, 0, piped.stderr);
  t.false(json(piped).changed);
  t.is((await owner.ledger()).length, before);
});

test.serial(
  'an edited file: the dry run names the changed fields and writes nothing; apply updates them',
  async (t) => {
    const file = await write(
      'ws.yaml',
      FILE({ maxAmount: 7000, tags: 'us', budget: 9000000, allow: 'echo, add', stripeEnv: 'STRIPE_NEXT' }),
    );
    const env = { STRIPE_NEXT: 'whsec_stripe-secret-two-5678', FILES_TOKEN: 'upstream-secret-2' };
    const before = (await owner.ledger()).length;
    const dry = await run(['apply', '-f', file, '--dry-run'], env);
    t.is(dry.code, 0, dry.stderr);
    t.regex(dry.stdout, /^~ templates +small-payments {2}update: rules$/m);
    t.regex(dry.stdout, /^~ agents +invoice-bot {2}update: tags, mandate$/m);
    t.regex(dry.stdout, /^~ agents +spare-bot {2}update: mandate$/m);
    t.regex(dry.stdout, /^~ budgets +agent:invoice-bot:day {2}update: amountMicros$/m);
    t.regex(dry.stdout, /^~ mcpServers +files {2}update: secret, allowTools$/m);
    t.regex(dry.stdout, /^~ integrations +stripe {2}update: signingSecret$/m);
    t.regex(dry.stdout, /^Dry run, nothing written: 0 to create, 6 to update, 0 to remove, 2 unchanged/m);
    t.is((await owner.ledger()).length, before);
    t.is((await owner.get('/templates')).body.data[0].rules[0].maxAmount, 5000);

    const applied = await run(['apply', '-f', file, '--json'], env);
    t.is(applied.code, 0, applied.stderr);
    t.like(json(applied).summary, { create: 0, update: 6, unchanged: 2 });
    t.is((await owner.get('/templates')).body.data[0].rules[0].maxAmount, 7000);
    const bot = (await owner.get('/agents')).body.data.find((a: { name: string }) => a.name === 'invoice-bot');
    t.deepEqual([...bot.tags].sort(), ['billing', 'us']);
    t.is((await owner.get(`/agents/${bot.id}/mandate`)).body.rules[0].maxAmount, 7000);
    t.like((await owner.get('/budgets')).body.data[0], { amountMicros: 9000000 });
    t.deepEqual((await owner.get('/mcp-servers')).body.data[0].allowTools, ['echo', 'add']);
    const ledger = await owner.ledger();
    for (const kind of [
      'template.updated',
      'mandate.updated',
      'agent.updated',
      'budget.updated',
      'mcp.server_updated',
      'integration.rotated',
    ])
      t.like(
        ledger.find((r) => r.kind === kind),
        { actor: 'token:ci' },
        kind,
      );
    // And now it matches.
    t.false(json(await run(['apply', '-f', file, '--json'], env)).changed);
  },
);

test.serial('a secret written in the file is refused before anything is sent, naming the field and line', async (t) => {
  const text = FILE().replace(
    'signingSecret: { fromEnv: STRIPE_WEBHOOK_SECRET }',
    'signingSecret: whsec_written-in-the-file',
  );
  const file = await write('literal.yaml', text);
  const res = await run(['apply', '-f', file, '--json']);
  t.is(res.code, 2);
  const line = text.split('\n').findIndex((l) => l.includes('whsec_written')) + 1;
  t.like(json(res), {
    error: {
      type: 'secret_in_file',
      exitCode: 2,
      line,
      errors: [{ field: 'integrations.stripe.signingSecret', line }],
    },
  });
  t.truthy(json(res).error.fix);
  t.false(res.stdout.includes('whsec_written-in-the-file'));
  // A secret's form anywhere is refused too, and the text names file and line.
  const tag = await write('tag.yaml', FILE({ tags: 'ims_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG' }));
  const plain = await run(['apply', '-f', tag]);
  t.is(plain.code, 2);
  t.regex(unwrapped(plain.stderr), /tag\.yaml:\d+: agents\[0\]\.tags\[0\] holds a secret written in the file/);
});

test.serial(
  'a variable the file refers to that is not set: exit 2, secret_unset, naming field and variable',
  async (t) => {
    const file = await write('unset.yaml', FILE({ stripeEnv: 'NOT_SET_ANYWHERE' }));
    const res = await run(['apply', '-f', file, '--json']);
    t.is(res.code, 2);
    t.like(json(res), {
      error: { type: 'secret_unset', exitCode: 2, errors: [{ field: 'integrations.stripe.signingSecret' }] },
    });
    t.regex(json(res).error.message, /NOT_SET_ANYWHERE/);

    // svc's own variables are never a secret to send: the CLI's token would go to the file's server.
    const own = await write('own.yaml', FILE({ stripeEnv: 'SVC_TOKEN' }));
    const refused = await run(['apply', '-f', own, '--json']);
    t.is(refused.code, 2);
    t.like(json(refused), {
      error: { type: 'invalid_workspace_file', exitCode: 2, errors: [{ field: 'integrations.stripe.signingSecret' }] },
    });
    t.regex(json(refused).error.message, /SVC_TOKEN/);
  },
);

test.serial('bad files: YAML, shape and references, each with its path and line, exit 2', async (t) => {
  const yaml = await write('broken.yaml', 'version: 1\ntemplates:\n  - name: a\n    rules: [\n');
  const broken = await run(['apply', '-f', yaml, '--json']);
  t.is(broken.code, 2);
  t.is(json(broken).error.type, 'invalid_workspace_file');
  t.is(typeof json(broken).error.line, 'number');

  const shape = await write(
    'shape.yaml',
    'version: 1\nagents:\n  - name: ok\n  - blueprint: billing\n    colour: red\nbudgets:\n  - scope: { kind: agent }\n    amountMicros: -1\n    period: year\n',
  );
  const bad = await run(['apply', '-f', shape, '--json']);
  t.is(bad.code, 2);
  const errors = json(bad).error.errors as Array<{ field: string; line: number; message: string }>;
  const at = (field: string) => errors.find((e) => e.field === field);
  t.like(at('agents[1].name'), { line: 4 });
  t.like(at('agents[1].colour'), { line: 5 });
  t.like(at('budgets[0].scope.agent'), { line: 7 });
  t.like(at('budgets[0].amountMicros'), { line: 8 });
  t.like(at('budgets[0].period'), { line: 9 });
  const text = await run(['apply', '-f', shape]);
  t.regex(unwrapped(text.stderr), /shape\.yaml:5: agents\[1\]\.colour is not allowed/);

  const version = await write('version.yaml', 'templates: []\n');
  t.like(json(await run(['apply', '-f', version, '--json'])), {
    error: { type: 'invalid_workspace_file', errors: [{ field: 'version' }] },
  });

  // What only the workspace knows is the server's answer: the same type, the path, exit 2.
  const refs = await write(
    'refs.yaml',
    'version: 1\nagents:\n  - name: x\n    blueprint: nowhere\n    actsFor: nobody@else.example\n',
  );
  const missing = await run(['apply', '-f', refs, '--json']);
  t.is(missing.code, 2);
  t.like(json(missing), {
    error: {
      type: 'invalid_workspace_file',
      exitCode: 2,
      line: 4,
      errors: [{ field: 'agents[0].blueprint', line: 4 }],
    },
  });
  t.regex(
    unwrapped((await run(['apply', '-f', refs])).stderr),
    /refs\.yaml:4: agents\[0\]\.blueprint: no blueprint nowhere/,
  );

  const none = await run(['apply', '-f', join(dir, 'no-such.yaml'), '--json']);
  t.like(json(none), { error: { type: 'usage', exitCode: 2 } });
  t.regex(json(none).error.message, /no-such\.yaml: there is no such file$/);
  t.truthy(json(none).error.fix);
});

test.serial('export writes the file with secrets as references, and applying it shows no change', async (t) => {
  const env = { STRIPE_NEXT: 'whsec_stripe-secret-two-5678', FILES_TOKEN: 'upstream-secret-2' };
  const exported = await run(['export'], env);
  t.is(exported.code, 0, exported.stderr);
  for (const secret of [...Object.values(SECRETS), ...Object.values(env)]) t.false(exported.stdout.includes(secret));
  const doc = parse(exported.stdout);
  t.deepEqual(doc.integrations.stripe, { signingSecret: { fromEnv: 'STRIPE_NEXT' } });
  t.deepEqual(doc.mcpServers[0].secret, { fromEnv: 'FILES_TOKEN' });
  t.deepEqual(
    doc.agents.find((a: { name: string }) => a.name === 'invoice-bot'),
    {
      name: 'invoice-bot',
      blueprint: 'billing',
      actsFor: 'admin@localhost',
      tags: ['billing', 'us'],
    },
  );
  t.deepEqual(doc.templates[0].rules[0].approval.approvers, ['admin@localhost']);
  const file = await write('exported.yaml', exported.stdout);
  const dry = await run(['apply', '-f', file, '--dry-run', '--json'], env);
  t.is(dry.code, 0, dry.stderr);
  t.false(json(dry).changed, dry.stdout);
  t.like(json(dry).summary, { create: 0, update: 0, remove: 0, unmanaged: 0 });

  // --json: { document }, the same document.
  t.deepEqual(json(await run(['export', '--json'])).document, doc);
});

test.serial(
  'resources not in the file are left alone and listed; --prune removes only what a file created',
  async (t) => {
    expectStatus(await owner.send('POST', '/agents', { name: 'made-by-hand', actsFor: owner.id }), 201, 'agent');
    const env = { STRIPE_NEXT: 'whsec_stripe-secret-two-5678', FILES_TOKEN: 'upstream-secret-2' };
    const file = await write(
      'fewer.yaml',
      FILE({
        maxAmount: 7000,
        tags: 'us',
        budget: 9000000,
        allow: 'echo, add',
        stripeEnv: 'STRIPE_NEXT',
        extraAgent: false,
      }),
    );
    const left = await run(['apply', '-f', file], env);
    t.is(left.code, 0, left.stderr);
    t.regex(left.stdout, /^ {2}agents +spare-bot {2}not in the file \(left alone\)$/m);
    t.regex(left.stdout, /^ {2}agents +made-by-hand {2}not in the file \(left alone\)$/m);
    t.regex(left.stdout, /^No change/m);

    const pruned = await run(['apply', '-f', file, '--prune', '--json'], env);
    t.is(pruned.code, 0, pruned.stderr);
    const actions = Object.fromEntries(
      json(pruned).changes.map((c: { name: string; action: string }) => [c.name, c.action]),
    );
    t.is(actions['spare-bot'], 'remove');
    t.is(actions['made-by-hand'], 'unmanaged');
    const names = (await owner.get('/agents')).body.data.map((a: { name: string }) => a.name).sort();
    t.deepEqual(names, ['invoice-bot', 'made-by-hand']);
    t.like(
      (await owner.ledger()).find((r) => r.kind === 'agent.removed'),
      { actor: 'token:ci' },
    );
  },
);

test.serial('scopes: a setup:read token may dry-run and export, not apply; no token is a usage error', async (t) => {
  const reader = expectStatus(
    await owner.send('POST', '/service-tokens', { name: 'reader', scopes: ['setup:read'], expiresInDays: 1 }),
    201,
    'token',
  ).body.token as string;
  const file = await write(
    'scoped.yaml',
    'version: 1\ntemplates:\n  - name: other\n    rules: [{ actions: [email] }]\n',
  );
  t.is((await run(['apply', '-f', file, '--dry-run'], { SVC_TOKEN: reader })).code, 0);
  t.is((await run(['export'], { SVC_TOKEN: reader })).code, 0);
  const refused = await run(['apply', '-f', file, '--json'], { SVC_TOKEN: reader });
  t.is(refused.code, 1);
  t.like(json(refused), { error: { type: 'missing_scope', exitCode: 1 } });
  const anonymous = await svc(['apply', '-f', file, '--url', server.url, '--json']);
  t.is(anonymous.code, 2);
  t.like(json(anonymous), { error: { type: 'unauthenticated', exitCode: 2 } });
});

test.serial(
  'an owner creates a second workspace from the CLI; what is applied to one is not seen in the other',
  async (t) => {
    const person = { SVC_EMAIL: 'admin@localhost', SVC_PASSWORD: ownerPassword };
    const created = await svc(['workspaces', 'create', 'Staging', '--url', server.url, '--json'], { env: person });
    t.is(created.code, 0, created.stderr);
    const staging = json(created) as { id: string; name: string; role: string };
    t.like(staging, { name: 'Staging', role: 'owner' });
    t.regex(staging.id, /^ws_[0-9A-Za-z]{22}$/);

    const listed = await svc(['workspaces', 'list', '--url', server.url], { env: person });
    t.is(listed.code, 0, listed.stderr);
    t.regex(listed.stdout, new RegExp(`^${staging.id} {2}owner +Staging$`, 'm'));
    t.regex(listed.stdout, new RegExp(`^${owner.wid} {2}owner +Default$`, 'm'));

    // Recorded in both ledgers, under the person.
    t.like(
      (await owner.ledger()).find((r) => r.kind === 'workspace.created'),
      { actor: `user:${owner.id}`, subject: staging.id },
    );
    const other = consoleClient(server, staging.id, owner.cookie);
    t.like((await other.ledger())[0], { kind: 'workspace.created', actor: `user:${owner.id}` });

    // A token of the new workspace sees an empty setup, and its own apply stays there.
    const stagingToken = expectStatus(
      await other.send('POST', '/service-tokens', {
        name: 'staging-ci',
        scopes: ['setup:read', 'setup:write'],
        expiresInDays: 1,
      }),
      201,
      'token',
    ).body.token as string;
    const empty = json(await run(['export', '--json'], { SVC_TOKEN: stagingToken })).document;
    t.deepEqual(
      [empty.templates, empty.blueprints, empty.agents, empty.budgets, empty.mcpServers, empty.integrations],
      [[], [], [], [], [], {}],
    );
    const before = json(await run(['export', '--json'])).document;
    const file = await write(
      'staging.yaml',
      'version: 1\ntemplates:\n  - name: staging-only\n    rules: [{ actions: [email] }]\n',
    );
    const applied = await run(['apply', '-f', file, '--json'], { SVC_TOKEN: stagingToken });
    t.is(applied.code, 0, applied.stderr);
    t.deepEqual(
      (await other.get('/templates')).body.data.map((x: { name: string }) => x.name),
      ['staging-only'],
    );
    t.deepEqual(json(await run(['export', '--json'])).document, before);
    t.false((await owner.get('/templates')).body.data.some((x: { name: string }) => x.name === 'staging-only'));
  },
);

test.serial('who is not an owner may not create a workspace: the route and the CLI refuse', async (t) => {
  expectStatus(
    await owner.send('POST', '/members', {
      email: 'admin2@acme.example',
      name: 'Admin',
      role: 'admin',
      password: 'admin-password-123',
    }),
    201,
    'member',
  );
  const res = await svc(['workspaces', 'create', 'Mine', '--url', server.url, '--json'], {
    env: { SVC_EMAIL: 'admin2@acme.example', SVC_PASSWORD: 'admin-password-123' },
  });
  t.is(res.code, 1, res.stdout);
  t.like(json(res), { error: { type: 'forbidden', exitCode: 1 } });
  const cookie = await signIn(server.url, 'admin2@acme.example', 'admin-password-123');
  const direct = await call(server.url, 'POST', '/api/workspaces', {
    headers: { cookie, ...csrf },
    json: { name: 'Mine' },
  });
  t.is(direct.status, 403);
  t.is(direct.body.error.type, 'forbidden');
  const mine = await call(server.url, 'GET', '/api/workspaces', { headers: { cookie } });
  t.deepEqual(
    mine.body.data.map((w: { role: string }) => w.role),
    ['admin'],
  );
  // Without a person: a usage error that says what to set.
  const nobody = await svc(['workspaces', 'create', 'Mine', '--url', server.url, '--json']);
  t.is(nobody.code, 2);
  t.like(json(nobody), { error: { type: 'unauthenticated', exitCode: 2 } });
});

test.serial("the docs' example file applies as written, and applying it again changes nothing", async (t) => {
  const page = await readFile(join(ROOT, 'docs', 'setup-as-code.md'), 'utf8');
  const example = /```yaml\n([\s\S]*?)```/.exec(page)![1]!;
  const person = { SVC_EMAIL: 'admin@localhost', SVC_PASSWORD: ownerPassword };
  const made = json(await svc(['workspaces', 'create', 'Docs', '--url', server.url, '--json'], { env: person }));
  const docs = consoleClient(server, made.id, owner.cookie);
  const docsToken = expectStatus(
    await docs.send('POST', '/service-tokens', {
      name: 'docs-ci',
      scopes: ['setup:read', 'setup:write'],
      expiresInDays: 1,
    }),
    201,
    'token',
  ).body.token as string;
  const file = await write('docs-example.yaml', example);
  const env = { SVC_TOKEN: docsToken, DOCS_MCP_TOKEN: 'docs-token-1', STRIPE_WEBHOOK_SECRET: 'whsec_docs-example-1' };
  const applied = await run(['apply', '-f', file, '--json'], env);
  t.is(applied.code, 0, applied.stderr + applied.stdout);
  t.like(json(applied).summary, { create: 10, update: 0 });
  t.false(json(await run(['apply', '-f', file, '--json'], env)).changed);
  const exported = await run(['export'], env);
  const again = await write('docs-exported.yaml', exported.stdout);
  t.false(json(await run(['apply', '-f', again, '--dry-run', '--json'], env)).changed);
});
