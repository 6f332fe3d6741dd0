import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Hapi from '@hapi/hapi';
import test from 'ava';
import { createRefusals } from '../../src/http/inbound.js';
import { createIntegrationRegistry } from '../../src/integrations/registry.js';
import { createLedger } from '../../src/ledger/service.js';
import { randomIds } from '../../src/lib/ids.js';
import { createSigningKeys } from '../../src/signing/service.js';
import { openStore } from '../../src/store/open.js';
import { manualClock } from '../helpers/clock.js';

/**
 * Inbound refusals are counted in the store: two server instances over one store add to one
 * count per workspace and kind, and a new instance (a restart) reads it. A workspace that has not
 * set the kind up, or an address naming none, is not counted.
 */
const WID = 'ws_0123456789abcdefghijkl';
const OTHER = 'ws_zyxwvutsrqponmlkjihgfe';

test('refusals of two instances add to one count per workspace and kind, kept across a restart', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-refusals-'));
  const store = await openStore(dir);
  const clock = manualClock();
  const masterKey = Buffer.alloc(32, 3);
  t.teardown(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  // The issuer set up in one workspace (its record as configuring writes it).
  await store.write(async (tx) => {
    await tx.integrations.put([WID, 'issuer'], {
      kind: 'issuer',
      workspaceId: WID,
      secrets: [],
      config: {},
      updatedAt: new Date(clock.now()).toISOString(),
      updatedBy: 'test',
    });
  });
  const instance = async () => {
    const signingKeys = createSigningKeys({ store, masterKey, clock });
    const ledger = createLedger({ store, clock, ids: randomIds, signingKeys, originHost: 'svc.test' });
    const registry = createIntegrationRegistry({ store, clock, ids: randomIds, masterKey, ledger });
    const refusals = createRefusals(registry);
    const server = Hapi.server();
    server.route({
      method: 'POST',
      path: '/v1/hooks/issuer/{wid}',
      options: { ext: { onPreResponse: { method: refusals.counter('issuer') } } },
      handler: (request, h) => h.response({ refused: true }).code(request.query.ok ? 200 : 401),
    });
    await server.initialize();
    return { server, refusals };
  };
  const [a, b] = await Promise.all([instance(), instance()]);

  const send = (s: Hapi.Server, wid: string, ok = false) =>
    s.inject({ method: 'POST', url: `/v1/hooks/issuer/${wid}${ok ? '?ok=1' : ''}` });
  t.is((await send(a.server, WID)).statusCode, 401);
  t.is((await send(b.server, WID)).statusCode, 401);
  await Promise.all([send(a.server, WID), send(b.server, WID), send(a.server, WID)]);
  t.is((await send(b.server, WID, true)).statusCode, 200, 'an accepted request is not counted');
  await send(a.server, OTHER);
  await send(b.server, 'not-a-workspace');

  t.is(await a.refusals.get(WID, 'issuer'), 5, 'both instances count into one');
  t.is(await b.refusals.get(WID, 'issuer'), 5);
  t.is(await a.refusals.get(OTHER, 'issuer'), 0, 'a workspace without the issuer is not counted');
  t.deepEqual(
    (await store.tables.integrationRefusals.scan([])).map((e) => e.key),
    [[WID, 'issuer']],
    'nothing stored for the others',
  );

  // A restart: a new instance reads the count from the store.
  const c = await instance();
  t.is(await c.refusals.get(WID, 'issuer'), 5);
  await Promise.all([a.server.stop(), b.server.stop(), c.server.stop()]);
});
