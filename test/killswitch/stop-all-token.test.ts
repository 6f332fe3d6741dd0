import test from 'ava';
import { authorize, createAgent, payment } from '../helpers/gate.js';
import { assertError, bearer, call } from '../helpers/http.js';
import { ownedServer, serviceToken } from '../helpers/tokens.js';

/**
 * "Stop every agent" from a pipeline: GET /v1/admin/stop-all (agents:read) tells whether the
 * workspace is stopped, by whom and why; POST /v1/admin/stop-all (agents:freeze) with a reason
 * stops it (within the token's ceiling, at once), every agent is refused from then on, and the
 * ledger names the token. Lifting it is a person's (the console): no token route does it.
 */
const served = ownedServer(test);

test.serial('a token reads the state, stops every agent with a reason, and the agents are refused', async (t) => {
  const agent = await createAgent(served.server);
  const reader = await serviceToken(served.owner, 'stop-reader', ['agents:read']);
  const freezer = await serviceToken(served.owner, 'stop-freezer', ['agents:read', 'agents:freeze']);
  const before = await call(served.server.url, 'GET', '/v1/admin/stop-all', { headers: bearer(reader) });
  t.is(before.status, 200, before.text);
  t.deepEqual(before.body, { stopped: false, reason: null, by: null, at: null });
  t.is((await authorize(served.server, agent.key, payment(100))).body.decision, 'allow');

  assertError(
    t,
    await call(served.server.url, 'POST', '/v1/admin/stop-all', { headers: bearer(reader), json: { reason: 'drill' } }),
    403,
    'missing_scope',
  );
  assertError(
    t,
    await call(served.server.url, 'POST', '/v1/admin/stop-all', { headers: bearer(freezer), json: {} }),
    400,
    'reason_required',
  );

  const stopped = await call(served.server.url, 'POST', '/v1/admin/stop-all', {
    headers: bearer(freezer),
    json: { reason: 'incident 12' },
  });
  t.is(stopped.status, 200, stopped.text);
  t.like(stopped.body, { stopped: true, reason: 'incident 12', by: 'token:stop-freezer' });
  t.true(Date.parse(stopped.body.at) > 0);
  const after = await call(served.server.url, 'GET', '/v1/admin/stop-all', { headers: bearer(reader) });
  t.deepEqual(after.body, stopped.body);

  // The gate's answer to an agent under the hold: a recorded deny naming it.
  const refused = await authorize(served.server, agent.key, payment(100));
  t.is(refused.status, 200, refused.text);
  t.like(refused.body, { decision: 'deny', signals: ['agent_frozen'] });
  t.regex(refused.body.reason, /incident 12/);
  const record = (await served.owner.ledger()).find((r) => r.actor === 'token:stop-freezer');
  t.truthy(record, 'the ledger names the token');
});

test.serial('without a token, or with an agent key, the state is not told', async (t) => {
  assertError(t, await call(served.server.url, 'GET', '/v1/admin/stop-all'), 401, 'unauthenticated');
  const agent = await createAgent(served.server);
  assertError(
    t,
    await call(served.server.url, 'GET', '/v1/admin/stop-all', { headers: bearer(agent.key) }),
    401,
    'unauthenticated',
  );
});
