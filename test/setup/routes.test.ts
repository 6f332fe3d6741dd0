import test from 'ava';
import { otherWorkspace } from '../helpers/console.js';
import { assertError, bearer, call } from '../helpers/http.js';
import { ownedServer, serviceToken } from '../helpers/tokens.js';

/**
 * The setup routes `svc apply` and `svc export` call (test/cli/apply.test.ts runs the commands):
 * POST /v1/admin/setup/plan says what a workspace file would change and changes nothing, POST
 * /v1/admin/setup applies it (once: the same file again changes nothing), GET /v1/admin/setup
 * gives back the workspace as a file; setup:read plans and exports, only setup:write applies, and a
 * secret written in the file is refused before anything is looked at.
 */
let reader: string;
let writer: string;
const served = ownedServer(test, {}, async ({ owner }) => {
  reader = await serviceToken(owner, 'setup-reader', ['setup:read']);
  writer = await serviceToken(owner, 'setup-writer', ['setup:read', 'setup:write']);
});

const document = {
  version: 1,
  templates: [
    {
      name: 'small-payments',
      rules: [{ actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 5000 }],
    },
  ],
  agents: [{ name: 'routes-bot', templates: ['small-payments'], tags: ['ops'] }],
};

const agentNames = async () =>
  ((await served.owner.get('/agents?limit=200')).body.data as Array<{ name: string }>).map((a) => a.name);

test.serial(
  'a plan names what would change and changes nothing; applying does it once; export gives it back',
  async (t) => {
    const plan = await call(served.server.url, 'POST', '/v1/admin/setup/plan', {
      headers: bearer(reader),
      json: { document },
    });
    t.is(plan.status, 200, plan.text);
    t.true(plan.text.includes('routes-bot') && plan.text.includes('small-payments'), plan.text);
    t.false((await agentNames()).includes('routes-bot'), 'a plan changes nothing');

    assertError(
      t,
      await call(served.server.url, 'POST', '/v1/admin/setup', { headers: bearer(reader), json: { document } }),
      403,
      'missing_scope',
    );
    t.false((await agentNames()).includes('routes-bot'));

    const applied = await call(served.server.url, 'POST', '/v1/admin/setup', {
      headers: bearer(writer),
      json: { document },
    });
    t.is(applied.status, 200, applied.text);
    t.true((await agentNames()).includes('routes-bot'));
    const recordsAfterFirst = (await served.owner.ledger()).length;

    const again = await call(served.server.url, 'POST', '/v1/admin/setup', {
      headers: bearer(writer),
      json: { document },
    });
    t.is(again.status, 200, again.text);
    t.is((await agentNames()).filter((n) => n === 'routes-bot').length, 1, 'the same file again makes no second agent');
    t.is((await served.owner.ledger()).length, recordsAfterFirst, 'and records nothing');

    const exported = await call(served.server.url, 'GET', '/v1/admin/setup', { headers: bearer(reader) });
    t.is(exported.status, 200, exported.text);
    t.like(exported.body.document, { version: 1 });
    t.like(
      exported.body.document.agents.find((a: { name: string }) => a.name === 'routes-bot'),
      { name: 'routes-bot', templates: ['small-payments'], tags: ['ops'] },
    );
    t.deepEqual(
      exported.body.document.templates.map((x: { name: string }) => x.name),
      ['small-payments'],
    );
  },
);

test.serial(
  'a secret written in the file is refused naming its field; bad files and no token are refused',
  async (t) => {
    const withSecret = { version: 1, integrations: { slack: { signingSecret: 'a-literal-secret-123' } } };
    for (const path of ['/v1/admin/setup/plan', '/v1/admin/setup']) {
      const res = await call(served.server.url, 'POST', path, {
        headers: bearer(writer),
        json: { document: withSecret },
      });
      assertError(t, res, 400, 'secret_in_file');
      t.is(res.body.error.errors[0].field, 'integrations.slack.signingSecret');
      t.false(res.text.includes('a-literal-secret-123'), 'the secret is not echoed');
    }
    const unknown = await call(served.server.url, 'POST', '/v1/admin/setup/plan', {
      headers: bearer(writer),
      json: { document: { version: 1, agents: [{ name: 'x', mandate: {} }] } },
    });
    assertError(t, unknown, 400, 'invalid_workspace_file');
    t.is(unknown.body.error.errors[0].field, 'agents[0].mandate');
    assertError(t, await call(served.server.url, 'GET', '/v1/admin/setup'), 401, 'unauthenticated');
  },
);

test.serial(
  'a person named by id must be of this workspace: one of another is refused as one who does not exist',
  async (t) => {
    const stranger = await otherWorkspace(served.server);
    const agentFor = (actsFor: string) => ({ version: 1, agents: [{ name: 'stranger-bot', actsFor }] });
    const theirs = await call(served.server.url, 'POST', '/v1/admin/setup/plan', {
      headers: bearer(writer),
      json: { document: agentFor(stranger.id) },
    });
    const nobody = await call(served.server.url, 'POST', '/v1/admin/setup/plan', {
      headers: bearer(writer),
      json: { document: agentFor('usr_0000000000000000000000') },
    });
    for (const [res, id] of [
      [theirs, stranger.id],
      [nobody, 'usr_0000000000000000000000'],
    ] as const) {
      assertError(t, res, 400, 'invalid_workspace_file');
      t.deepEqual(res.body.error.errors, [
        { field: 'agents[0].actsFor', message: `agents[0].actsFor: ${id} is not a person of this workspace` },
      ]);
    }
    const applied = await call(served.server.url, 'POST', '/v1/admin/setup', {
      headers: bearer(writer),
      json: { document: agentFor(stranger.id) },
    });
    assertError(t, applied, 400, 'invalid_workspace_file');
    t.false((await agentNames()).includes('stranger-bot'));
  },
);

test.serial(
  'a plan by a token that may not apply compares no secret: a right guess and a wrong one read alike',
  async (t) => {
    const document = { version: 1, integrations: { slack: { signingSecret: { fromEnv: 'SLACK_SECRET' } } } };
    const secrets = { SLACK_SECRET: 'the-slack-signing-secret-1' };
    const applied = await call(served.server.url, 'POST', '/v1/admin/setup', {
      headers: bearer(writer),
      json: { document, secrets },
    });
    t.is(applied.status, 200, applied.text);
    const planned = async (token: string, guess: string) => {
      const res = await call(served.server.url, 'POST', '/v1/admin/setup/plan', {
        headers: bearer(token),
        json: { document, secrets: { SLACK_SECRET: guess } },
      });
      t.is(res.status, 200, res.text);
      return res.body.changes.find((c: { section: string; name: string }) => c.name === 'slack');
    };
    // A reader: the secret is listed as one that will be set, whatever the guess.
    const right = await planned(reader, secrets.SLACK_SECRET);
    const wrong = await planned(reader, 'a-wrong-guess-of-it-1');
    t.deepEqual(right, wrong);
    t.like(right, { action: 'update', fields: ['signingSecret'] });
    // A writer, who may set it anyway: compared, so the plan says what applying would do.
    t.like(await planned(writer, secrets.SLACK_SECRET), { action: 'unchanged', fields: [] });
    t.like(await planned(writer, 'a-wrong-guess-of-it-1'), { action: 'update', fields: ['signingSecret'] });
  },
);
