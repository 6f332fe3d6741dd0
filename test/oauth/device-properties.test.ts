import test from 'ava';
import fc from 'fast-check';
import { CliFailure } from '../../src/cli/base-command.js';
import { CONTEXT_NAME, contextName } from '../../src/cli/contexts.js';
import { parseDeviceAuthorization, parseTokens } from '../../src/cli/device-login.js';
import { PERSON_SCOPES } from '../../src/oauth/device/person-access.js';
import {
  USER_CODE_ALPHABET,
  formatUserCode,
  newUserCode,
  normalizeUserCode,
} from '../../src/oauth/device/user-code.js';
import { permissions } from '../../src/people/permissions.js';
import { ownerConsole, type Person } from '../helpers/console.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { stopAndClean } from '../helpers/process.js';

/**
 * fast-check over what `svc login` parses and validates: the user codes a person types, the
 * device authorization and token answers the CLI reads, context names; the person scopes never
 * exceed the console's permissions; and the device endpoints, the /device page and the machine
 * routes given a `pat_` token never answer 5xx, whatever they are sent.
 */
let server: ServedInProcess;
let owner: Person;

test.before(async () => {
  server = await serveInProcess();
  owner = await ownerConsole(server);
});

test.after.always(() => stopAndClean(server));

const anyText = fc.string({ unit: 'binary', maxLength: 80 });
const validCode = fc
  .array(fc.constantFrom(...USER_CODE_ALPHABET), { minLength: 8, maxLength: 8 })
  .map((c) => c.join(''));

test('user codes: new ones are eight letters of the alphabet; anything typed normalises to one or to null', (t) => {
  for (let i = 0; i < 200; i++) {
    const code = newUserCode();
    t.regex(code, /^[BCDFGHJKLMNPQRSTVWXZ]{8}$/);
    t.is(normalizeUserCode(formatUserCode(code)), code);
  }
  fc.assert(
    fc.property(anyText, (typed) => {
      const code = normalizeUserCode(typed);
      return code === null || /^[BCDFGHJKLMNPQRSTVWXZ]{8}$/.test(code);
    }),
  );
  // However a person types a valid code (case, dashes, spaces), it is the same code.
  fc.assert(
    fc.property(
      validCode,
      fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
      fc.array(fc.constantFrom('', '-', ' ', '  '), { minLength: 9, maxLength: 9 }),
      (code, lower, seps) => {
        const typed = [...code].map((c, i) => `${seps[i]}${lower[i] ? c.toLowerCase() : c}`).join('') + seps[8];
        return normalizeUserCode(typed) === code;
      },
    ),
  );
  // A character outside the alphabet (a vowel, a digit) is never part of a code.
  fc.assert(
    fc.property(validCode, fc.nat(7), fc.constantFrom('A', 'E', 'I', 'O', 'U', 'Y', '0', '1', '_'), (c, at, bad) => {
      return normalizeUserCode(c.slice(0, at) + bad + c.slice(at + 1)) === null;
    }),
  );
  // The draw has no bias to speak of: each letter about 1/20 of 16,000 letters.
  const counts = new Map<string, number>();
  for (let i = 0; i < 2000; i++) for (const c of newUserCode()) counts.set(c, (counts.get(c) ?? 0) + 1);
  for (const c of USER_CODE_ALPHABET) t.true((counts.get(c) ?? 0) > 500 && (counts.get(c) ?? 0) < 1100, c);
});

test('the CLI reads device authorization and token answers without throwing, and only valid ones', (t) => {
  fc.assert(
    fc.property(fc.jsonValue(), (body) => {
      const device = parseDeviceAuthorization(body);
      const tokens = parseTokens(body);
      return (
        (device === null || (device.interval > 0 && device.expiresIn > 0 && /^https?:/.test(device.verificationUri))) &&
        (tokens === null || (tokens.access.length > 0 && tokens.refresh.length > 0 && tokens.expiresIn > 0))
      );
    }),
  );
  const good = {
    device_code: 'dvc_x',
    user_code: 'BCDF-GHJK',
    verification_uri: 'https://svc.example/device',
    verification_uri_complete: 'https://svc.example/device?user_code=BCDF-GHJK',
    expires_in: 600,
    interval: 5,
  };
  t.like(parseDeviceAuthorization(good), { deviceCode: 'dvc_x', interval: 5, expiresIn: 600 });
  t.is(parseDeviceAuthorization({ ...good, interval: undefined })?.interval, 5, 'RFC 8628: 5 s without an interval');
  const bad: Record<string, unknown[]> = {
    device_code: [null, '', 0],
    user_code: [null, '', 'BCDF GHJK', 12345678],
    verification_uri: [null, 'ftp://svc.example/device', 'not a url'],
    verification_uri_complete: [null, 'javascript:alert(1)'],
    expires_in: [null, 0, -1, 1.5, '600'],
    interval: [null, 0, -1, 1.5, '5'],
  };
  fc.assert(
    fc.property(
      fc.constantFrom(...Object.entries(bad).flatMap(([field, values]) => values.map((v) => [field, v] as const))),
      ([field, value]) => parseDeviceAuthorization({ ...good, [field]: value }) === null,
    ),
  );
  t.like(parseTokens({ access_token: 'pat_a', refresh_token: 'prt_b', token_type: 'Bearer', expires_in: 3600 }), {
    access: 'pat_a',
    refresh: 'prt_b',
  });
  t.is(parseTokens({ access_token: 'pat_a', token_type: 'Bearer', expires_in: 3600 }), null, 'no refresh token');
  t.is(parseTokens({ access_token: 'pat a', refresh_token: 'x', token_type: 'Bearer', expires_in: 1 }), null);
});

test('context names: exactly those of the pattern are taken; others are a usage error, never another', (t) => {
  fc.assert(
    fc.property(fc.oneof(anyText, fc.stringMatching(CONTEXT_NAME)), (name) => {
      try {
        return contextName(name) === name && CONTEXT_NAME.test(name);
      } catch (err) {
        return err instanceof CliFailure && err.exitCode === 2 && !CONTEXT_NAME.test(name);
      }
    }),
  );
  t.notThrows(() => contextName('prod'));
  t.notThrows(() => contextName('127.0.0.1:8080'));
  t.throws(() => contextName('../etc'));
});

test("a person's token never allows more than the console: each scope's roles are within its permission", (t) => {
  for (const [scope, { within, roles }] of Object.entries(PERSON_SCOPES)) {
    const console = permissions[within] as readonly string[];
    t.deepEqual(
      roles.filter((r) => !console.includes(r)),
      [],
      `${scope} within ${within}`,
    );
  }
  t.false(PERSON_SCOPES['agents:freeze'].roles.includes('member'));
  t.false(PERSON_SCOPES['approvals:read'].roles.includes('member'));
});

test('the device endpoints never answer 5xx, and answer the OAuth error shape', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(anyText, fc.constant('svc-cli')),
      fc.constantFrom('urn:ietf:params:oauth:grant-type:device_code', 'refresh_token', ''),
      fc.oneof(anyText, fc.constant('dvc_x'), fc.constant('prt_x')),
      async (clientId, grant, secret) => {
        const started = await server.http.server.inject({
          method: 'POST',
          url: '/oauth/device_authorization',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: new URLSearchParams({ client_id: clientId, scope: secret }).toString(),
        });
        const polled = await server.http.server.inject({
          method: 'POST',
          url: '/oauth/token',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: new URLSearchParams({
            grant_type: grant,
            client_id: clientId,
            device_code: secret,
            refresh_token: secret,
          }).toString(),
        });
        const revoked = await server.http.server.inject({
          method: 'POST',
          url: '/oauth/revoke',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: new URLSearchParams({ client_id: clientId, token: secret }).toString(),
        });
        const okStart =
          started.statusCode === 200
            ? clientId === 'svc-cli'
            : started.statusCode < 500 && typeof JSON.parse(started.payload).error === 'string';
        return (
          okStart &&
          polled.statusCode >= 400 &&
          polled.statusCode < 500 &&
          typeof JSON.parse(polled.payload).error === 'string' &&
          revoked.statusCode < 500
        );
      },
    ),
    { numRuns: 100 },
  );
  t.pass();
});

test('the /device page and its form, and the machine routes given a pat_ token, never answer 5xx', async (t) => {
  await fc.assert(
    fc.asyncProperty(anyText, fc.constantFrom('approve', 'deny', 'maybe'), anyText, async (typed, decision, token) => {
      const page = await server.http.server.inject({
        method: 'GET',
        url: `/device?user_code=${encodeURIComponent(typed)}`,
        headers: { cookie: owner.cookie },
      });
      const posted = await server.http.server.inject({
        method: 'POST',
        url: '/device',
        headers: { cookie: owner.cookie, 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ user_code: typed, decision, workspace: owner.wid }).toString(),
      });
      const machine = await server.http.server.inject({
        method: 'GET',
        url: '/v1/admin/agents',
        headers: { authorization: `Bearer pat_${token.replace(/\s/g, 'x')}` },
      });
      return page.statusCode < 500 && posted.statusCode < 500 && machine.statusCode === 401;
    }),
    { numRuns: 100 },
  );
  t.pass();
});
