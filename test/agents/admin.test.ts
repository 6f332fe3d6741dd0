import test from 'ava';
import { otherWorkspace } from '../helpers/console.js';
import { createAgent } from '../helpers/gate.js';
import { assertError, bearer, call } from '../helpers/http.js';
import { ownedServer, serviceToken } from '../helpers/tokens.js';

/**
 * GET /v1/admin/agents, for a service token with agents:read: the workspace's agents with their
 * status and holds (never a key), and only the token's own workspace.
 */
const served = ownedServer(test);

test.serial('a token lists its workspace’s agents with status and holds, and no key', async (t) => {
  const made = [await createAgent(served.server), await createAgent(served.server), await createAgent(served.server)];
  const stopped = await served.owner.send('POST', `/agents/${made[0]!.agentId}/stop`, { reason: 'listed stopped' });
  t.is(stopped.status, 200, stopped.text);
  const token = await serviceToken(served.owner, 'agents-reader', ['agents:read']);
  const all = await call(served.server.url, 'GET', '/v1/admin/agents', { headers: bearer(token) });
  t.is(all.status, 200, all.text);
  const byId = new Map(
    (all.body.data as Array<{ id: string; status: string; holds: unknown[] }>).map((a) => [a.id, a]),
  );
  for (const a of made) t.truthy(byId.get(a.agentId), a.agentId);
  t.like(byId.get(made[0]!.agentId), { status: 'stopped', holds: [{ reason: 'listed stopped' }] });
  t.like(byId.get(made[1]!.agentId), { status: 'running', holds: [] });
  for (const a of made) t.false(all.text.includes(a.key), 'no key in the list');
});

test.serial('another workspace’s token sees none of them; a token without agents:read is refused', async (t) => {
  const stranger = await otherWorkspace(served.server);
  const theirs = await serviceToken(stranger, 'stranger-reader', ['agents:read']);
  const res = await call(served.server.url, 'GET', '/v1/admin/agents', { headers: bearer(theirs) });
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body.data, []);
  const noScope = await serviceToken(served.owner, 'evidence-only', ['evidence:read']);
  assertError(
    t,
    await call(served.server.url, 'GET', '/v1/admin/agents', { headers: bearer(noScope) }),
    403,
    'missing_scope',
  );
});
