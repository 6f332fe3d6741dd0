import test from 'ava';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { addressProblem, safeDispatcher, targetProblem, type LookupFn } from '../../src/lib/safe-target.js';

/**
 * The one rule for workspace-chosen targets (lib/safe-target.ts), enforced at connect: a name is
 * vetted on the addresses the connection itself resolves, so a name that rebinds to link-local
 * (or to a private address, unless allowed) is refused however it looked when checked.
 */
let server: Server;
let port: number;

test.before(async () => {
  server = createServer((_req, res) => res.writeHead(200).end('ok'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
test.after.always(
  () =>
    new Promise<void>((r) => {
      server.close(() => r());
    }),
);

/** A resolver answering `address` for every name (DNS rebinding, as the connection sees it). */
const resolvesTo =
  (address: string): LookupFn =>
  (_host, options, cb) => {
    const family = address.includes(':') ? 6 : 4;
    if (options.all) cb(null, [{ address, family }]);
    else cb(null, address, family);
  };

test('address ranges: public unicast only; loopback and private when allowed; link-local never', (t) => {
  t.is(addressProblem('93.184.216.34', false), null);
  t.regex(addressProblem('127.0.0.1', false)!, /loopback/);
  t.is(addressProblem('127.0.0.1', true), null);
  t.is(addressProblem('10.1.2.3', true), null);
  t.is(addressProblem('fd00::1', true), null);
  for (const a of ['169.254.169.254', 'fe80::1', '::ffff:169.254.169.254'])
    t.regex(addressProblem(a, true)!, /link-local/);
  for (const a of ['0.0.0.0', '100.64.0.1', '224.0.0.1', '255.255.255.255']) t.truthy(addressProblem(a, true), a);
});

test('a name resolving to link-local at connect is refused, even with private targets allowed', async (t) => {
  const dispatcher = safeDispatcher({ allowPrivateTargets: true, lookup: resolvesTo('169.254.169.254') });
  const err = await t.throwsAsync(request(`http://metadata.test:${port}/`, { dispatcher }));
  t.regex(String((err as Error & { cause?: Error }).cause?.message ?? err?.message), /link-local/);
  await dispatcher.close();
});

test('a name resolving to loopback connects only when private targets are allowed', async (t) => {
  const refused = safeDispatcher({ allowPrivateTargets: false, lookup: resolvesTo('127.0.0.1') });
  await t.throwsAsync(request(`http://rebound.test:${port}/`, { dispatcher: refused }));
  await refused.close();
  const allowed = safeDispatcher({ allowPrivateTargets: true, lookup: resolvesTo('127.0.0.1') });
  const res = await request(`http://rebound.test:${port}/`, { dispatcher: allowed });
  t.is(res.statusCode, 200);
  await res.body.dump();
  await allowed.close();
});

test('an address written in the URL is vetted too', async (t) => {
  const dispatcher = safeDispatcher({ allowPrivateTargets: false });
  await t.throwsAsync(request(`http://127.0.0.1:${port}/`, { dispatcher }));
  await t.throwsAsync(request('http://169.254.169.254/', { dispatcher }));
  await dispatcher.close();
});

test('the configure-time check: https only when asked, unless private targets are allowed', async (t) => {
  t.regex(
    (await targetProblem('http://idp.test/jwks', {
      allowPrivateTargets: false,
      httpsOnly: true,
      lookup: resolvesTo('93.184.216.34'),
    }))!,
    /https/,
  );
  t.is(
    await targetProblem('https://idp.test/jwks', {
      allowPrivateTargets: false,
      httpsOnly: true,
      lookup: resolvesTo('93.184.216.34'),
    }),
    null,
  );
  t.regex(
    (await targetProblem('https://idp.test/jwks', {
      allowPrivateTargets: true,
      lookup: resolvesTo('169.254.169.254'),
    }))!,
    /link-local/,
  );
  t.regex((await targetProblem('https://u:p@idp.test/', { allowPrivateTargets: true }))!, /credentials/);
});
