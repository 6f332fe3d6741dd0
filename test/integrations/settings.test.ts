import test from 'ava';
import fc from 'fast-check';
import { SERVER_ENV } from '../approvals/support.js';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { assertError } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { INTEGRATION_KINDS } from '../../src/integrations/kinds.js';

/**
 * Integration settings: `PUT /api/w/{wid}/integrations/{kind}` for the six kinds.
 * Generated secrets (issuer, github, chat-relay) are answered once; a provider's own signing
 * secret (stripe, slack) is taken, never answered back, and replacing it keeps the old one for a
 * day; the identity provider takes its issuer, audience and keys. Secrets never reach the
 * ledger or a listing.
 */
let server: ServedInProcess;
let owner: Person;

test.before(async () => {
  server = await serveInProcess({ env: SERVER_ENV });
  owner = await ownerConsole(server);
});

test.after.always(async () => {
  await stopAndClean(server);
});

const viewOf = async (kind: string) =>
  (
    (await owner.get('/integrations')).body.data as Array<{
      kind: string;
      config: Record<string, unknown>;
      secrets: Array<{ retiresAt: string | null }>;
    }>
  ).find((v) => v.kind === kind);

test.serial(
  "a provider's signing secret is taken, never answered, and replacing it keeps the old one a day",
  async (t) => {
    const missing = await owner.send('PUT', '/integrations/stripe', {});
    assertError(t, missing, 400, 'invalid_request');
    t.regex(missing.body.error.message, /signingSecret/);
    const first = expectStatus(
      await owner.send('PUT', '/integrations/stripe', { signingSecret: 'whsec_first_secret_value' }),
      200,
      'stripe',
    );
    t.false(JSON.stringify(first.body).includes('whsec_first'), 'the secret is not answered back');
    t.is(first.body.secret, undefined);
    t.deepEqual(
      (await viewOf('stripe'))?.secrets.map((s) => s.retiresAt),
      [null],
    );

    // The same secret again changes nothing; a new one retires the old one in 24 hours.
    expectStatus(
      await owner.send('PUT', '/integrations/stripe', { signingSecret: 'whsec_first_secret_value' }),
      200,
      'same',
    );
    t.is((await viewOf('stripe'))?.secrets.length, 1);
    const rotated = expectStatus(
      await owner.send('PUT', '/integrations/stripe', { signingSecret: 'whsec_second_secret_value' }),
      200,
      'rotate',
    );
    const retires = Date.parse(rotated.body.previousRetiresAt);
    t.true(Math.abs(retires - (Date.now() + 86_400_000)) < 60_000, 'the old secret retires in a day');
    const secrets = (await viewOf('stripe'))!.secrets;
    t.is(secrets.length, 2);
    t.is(secrets[0]!.retiresAt, null);
    t.is(secrets[1]!.retiresAt, rotated.body.previousRetiresAt);

    expectStatus(
      await owner.send('PUT', '/integrations/slack', { signingSecret: '8f742231b10e8888abcd99yyyzzz85a5' }),
      200,
      'slack',
    );
    const everything = JSON.stringify({
      listing: (await owner.get('/integrations')).body,
      ledger: await owner.ledger(),
    });
    for (const secret of ['whsec_first', 'whsec_second', '8f742231b10e8888'])
      t.false(everything.includes(secret), `${secret} is nowhere to be read`);
    t.true((await owner.ledger()).some((r) => r.kind === 'integration.rotated' && r.subject === 'stripe'));
  },
);

test.serial(
  'generated secrets are answered once; the chat relay takes its url and may change it without a new secret',
  async (t) => {
    for (const kind of ['github', 'chat-relay']) {
      const body = kind === 'chat-relay' ? { url: 'https://relay.example/cards' } : {};
      const made = expectStatus(await owner.send('PUT', `/integrations/${kind}`, body), 200, kind);
      t.regex(made.body.secret, /^whs_[A-Za-z0-9_-]{43}$/);
      assertError(t, await owner.send('PUT', `/integrations/${kind}`, {}), 400, 'invalid_request');
      const again = expectStatus(
        await owner.send('PUT', `/integrations/${kind}`, { rotate: true }),
        200,
        `${kind} rotate`,
      );
      t.not(again.body.secret, made.body.secret);
      t.false(JSON.stringify((await owner.get('/integrations')).body).includes(made.body.secret));
    }
    const moved = expectStatus(
      await owner.send('PUT', '/integrations/chat-relay', { url: 'https://relay.example/v2' }),
      200,
      'move',
    );
    t.is(moved.body.secret, undefined, 'a settings change is not a rotation');
    t.like(await viewOf('chat-relay'), { config: { url: 'https://relay.example/v2' } });
    const bad = await owner.send('PUT', '/integrations/chat-relay', { url: 'ftp://relay.example' });
    assertError(t, bad, 400, 'invalid_request');
    t.is(bad.body.error.errors[0].field, 'url');
  },
);

test.serial('the identity provider takes its issuer, audience, and either a JWKS address or the keys', async (t) => {
  const neither = await owner.send('PUT', '/integrations/ssf', { issuer: 'https://idp.example', audience: 'svc' });
  assertError(t, neither, 400, 'invalid_request');
  const both = await owner.send('PUT', '/integrations/ssf', {
    issuer: 'https://idp.example',
    audience: 'svc',
    jwksUri: 'https://idp.example/jwks',
    jwks: { keys: [{ kty: 'EC' }] },
  });
  assertError(t, both, 400, 'invalid_request');
  const missing = await owner.send('PUT', '/integrations/ssf', { jwksUri: 'https://idp.example/jwks' });
  assertError(t, missing, 400, 'invalid_request');
  t.deepEqual(missing.body.error.errors.map((e: { field: string }) => e.field).sort(), ['audience', 'issuer']);
  const ok = expectStatus(
    await owner.send('PUT', '/integrations/ssf', {
      issuer: 'https://idp.example',
      audience: 'svc',
      jwksUri: 'https://idp.example/jwks',
    }),
    200,
    'ssf',
  );
  t.like(ok.body, {
    kind: 'ssf',
    config: { issuer: 'https://idp.example', audience: 'svc', jwksUri: 'https://idp.example/jwks' },
  });
  t.is(ok.body.secret, undefined);
  assertError(t, await owner.send('PUT', '/integrations/fax', {}), 400, 'invalid_request');
});

test.serial(
  'whatever a settings body holds, the answer is 200 or a 400 naming fields, never a failure of the server',
  async (t) => {
    const before = (await owner.ledger()).length;
    let changed = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...INTEGRATION_KINDS),
        fc.oneof(
          fc.jsonValue(),
          fc.dictionary(
            fc.constantFrom('rotate', 'signingSecret', 'url', 'issuer', 'audience', 'jwksUri', 'jwks'),
            fc.jsonValue(),
          ),
        ),
        async (kind, body) => {
          const res = await owner.send('PUT', `/integrations/${kind}`, body);
          if (res.status === 200) {
            changed += 1;
            return;
          }
          if (res.status !== 400) throw new Error(`${res.status} for ${JSON.stringify(body)}: ${res.text}`);
          if (!['invalid_request', 'invalid_json'].includes(res.body.error.type)) throw new Error(res.text);
        },
      ),
      { numRuns: 60 },
    );
    t.true((await owner.ledger()).length >= before + changed, 'each accepted change is in the ledger');
  },
);

test.serial('revokePrevious ends the old secret at once; a JWKS with a private key member is refused', async (t) => {
  await owner.send('PUT', '/integrations/issuer', {}); // set up here, unless an earlier test did
  await owner.send('PUT', '/integrations/issuer', { revokePrevious: true });
  const rotated = expectStatus(await owner.send('PUT', '/integrations/issuer', { rotate: true }), 200, 'rotate');
  t.truthy(rotated.body.previousRetiresAt);
  t.is((await viewOf('issuer'))?.secrets.length, 2);
  const revoked = expectStatus(
    await owner.send('PUT', '/integrations/issuer', { revokePrevious: true }),
    200,
    'revoke',
  );
  t.is(revoked.body.secret, undefined, 'revoking is not a rotation: no new secret');
  t.deepEqual(
    (await viewOf('issuer'))?.secrets.map((s) => s.retiresAt),
    [null],
  );
  const record = (await owner.ledger()).filter((r) => r.subject === 'issuer').at(-1)!;
  t.like(record, { kind: 'integration.updated', data: { previousRevoked: 1 } });

  const priv = await owner.send('PUT', '/integrations/ssf', {
    issuer: 'https://idp.example',
    audience: 'svc',
    jwks: { keys: [{ kty: 'EC', crv: 'P-256', x: 'x', y: 'y', d: 'private' }] },
  });
  assertError(t, priv, 400, 'invalid_request');
  t.regex(priv.body.error.message, /public keys only/);
  t.false(JSON.stringify((await owner.get('/integrations')).body).includes('private'));
});
