import test from 'ava';
import { authorize, createAgent, payment } from '../helpers/gate.js';
import { assertError, bearer, call } from '../helpers/http.js';
import { ownedServer, serviceToken } from '../helpers/tokens.js';

/**
 * POST /v1/admin/drills, as a pipeline calls it with a service token (`svc drill` is the same
 * route: test/cli/drill.test.ts): a drill runs against an agent of its own, answers 201 with its
 * report, is in the ledger, and leaves real agents serving; a second drill within the hour is
 * refused before it runs; a token without agents:freeze, or any other credential, is refused.
 */
const served = ownedServer(test);

test.serial(
  'a drill answers 201 with a passing report for each enforcement point, recorded, real agents untouched',
  async (t) => {
    const real = await createAgent(served.server);
    const token = await serviceToken(served.owner, 'route-drill', ['agents:freeze']);
    const agentsBefore = (await served.owner.get('/agents?limit=200')).body.data.length;

    const res = await call(served.server.url, 'POST', '/v1/admin/drills', { headers: bearer(token), json: {} });
    t.is(res.status, 201, res.text);
    t.true(res.body.passed);
    t.regex(res.body.id, /^[a-z]+_[0-9A-Za-z]+$/);
    t.deepEqual(
      res.body.points.map((p: { point: string; passed: boolean }) => [p.point, p.passed]),
      [
        ['gate', true],
        ['gateway', true],
        ['mcp', true],
      ],
    );
    for (const point of res.body.points) t.is(typeof point.timeToEffectMs, 'number', point.point);
    t.true(Date.parse(res.body.finishedAt) >= Date.parse(res.body.startedAt));

    // The drill's own agent is gone; the real one still gets its allow.
    t.is((await served.owner.get('/agents?limit=200')).body.data.length, agentsBefore);
    t.is((await authorize(served.server, real.key, payment(100))).body.decision, 'allow');
    const completed = (await served.owner.ledger()).filter((r) => r.kind === 'drill.completed');
    t.is(completed.length, 1);
    t.like(completed[0], { actor: 'token:route-drill', data: { passed: true } });

    // Within the hour: refused before anything runs, with when to come back.
    const again = await call(served.server.url, 'POST', '/v1/admin/drills', { headers: bearer(token), json: {} });
    assertError(t, again, 429, 'drill_cooldown');
    t.regex(String(again.headers['retry-after']), /^[1-9]\d*$/);
    t.is(
      (await served.owner.ledger()).filter((r) => r.kind === 'drill.completed').length,
      1,
      'the refused drill did not run',
    );
  },
);

test.serial('a token without agents:freeze, an agent key or no credential cannot run a drill', async (t) => {
  const reader = await serviceToken(served.owner, 'route-reader', ['agents:read']);
  assertError(
    t,
    await call(served.server.url, 'POST', '/v1/admin/drills', { headers: bearer(reader), json: {} }),
    403,
    'missing_scope',
  );
  const agent = await createAgent(served.server);
  // An agent key is no credential of the admin routes at all.
  assertError(
    t,
    await call(served.server.url, 'POST', '/v1/admin/drills', { headers: bearer(agent.key), json: {} }),
    401,
    'unauthenticated',
  );
  assertError(t, await call(served.server.url, 'POST', '/v1/admin/drills', { json: {} }), 401, 'unauthenticated');
  t.is((await served.owner.ledger()).filter((r) => r.kind === 'drill.completed').length, 1, 'no drill ran for them');
});
