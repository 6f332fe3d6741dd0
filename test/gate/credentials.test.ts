import test from 'ava';
import { consoleClient, expectStatus, type ConsoleClient } from '../helpers/console.js';
import { assertError, bearer, call } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { authorize, payment, PAY_ACME } from '../helpers/gate.js';
import { getAction, makeAgent, owner, recordsBy, settle } from './support.js';

/**
 * Who may use the gate: an agent key only. A workspace key is
 * 403 agent_key_required; the key of a removed agent is 403 agent_not_found; no credential is
 * 401 unauthenticated; a revoked or unknown key is 401 invalid_api_key. Every route of the gate.
 */

let server: ServedInProcess;
/** The owner's console. */
let ws: ConsoleClient;

test.before(async () => {
  server = await serveInProcess();
  ws = consoleClient(server, server.boot.workspaceId!, await owner(server));
});

test.after.always(() => stopAndClean(server));

const ACT = 'act_0000000000000000000000';

/** The three gate routes, each called with the given headers. */
function gateCalls(headers: Record<string, string>) {
  return [
    () => call(server.url, 'POST', '/v1/actions/authorize', { headers, json: payment(100) }),
    () => call(server.url, 'GET', `/v1/actions/${ACT}`, { headers }),
    () => call(server.url, 'POST', `/v1/actions/${ACT}/settle`, { headers, json: { status: 'completed' } }),
  ];
}

async function mintWorkspaceKey(scope: 'inference' | 'admin'): Promise<string> {
  return expectStatus(await ws.send('POST', '/keys', { scope }), 201, 'key').body.key as string;
}

test('a workspace key (inference or admin) on the gate: 403 agent_key_required', async (t) => {
  for (const scope of ['inference', 'admin'] as const) {
    const key = await mintWorkspaceKey(scope);
    for (const send of gateCalls(bearer(key))) assertError(t, await send(), 403, 'agent_key_required');
  }
});

test('the key of an agent that was removed: 403 agent_not_found, and nothing is decided', async (t) => {
  const fx = await makeAgent(server, [PAY_ACME], 'doomed');
  t.is((await authorize(server, fx.key, payment(100))).status, 200, 'the key worked before');
  const removed = await ws.send('DELETE', `/agents/${fx.agentId}`);
  t.is(removed.status, 200, removed.text);
  for (const send of gateCalls(bearer(fx.key))) {
    const res = await send();
    assertError(t, res, 403, 'agent_not_found');
  }
  const decisions = await recordsBy(server, fx);
  t.is(decisions.length, 1, 'only the decision from before the removal');
});

test('no credential: 401 unauthenticated on every gate route', async (t) => {
  for (const send of gateCalls({})) assertError(t, await send(), 401, 'unauthenticated');
});

test("a revoked agent key: 401 invalid_api_key, while the agent's other key still works", async (t) => {
  const fx = await makeAgent(server, [PAY_ACME], 'rotating');
  const second = await ws.send('POST', `/agents/${fx.agentId}/keys`, { name: 'second' });
  t.is(second.status, 201, second.text);
  const decided = await authorize(server, fx.key, payment(100));
  t.is(decided.status, 200);
  const revoked = await ws.send('DELETE', `/agents/${fx.agentId}/keys/${fx.keyId}`);
  t.is(revoked.status, 200, revoked.text);
  for (const send of gateCalls(bearer(fx.key))) assertError(t, await send(), 401, 'invalid_api_key');
  assertError(t, await getAction(server, fx.key, decided.body.id), 401, 'invalid_api_key');
  // The agent keeps its actions: its other key reads and settles them.
  const read = await getAction(server, second.body.key, decided.body.id);
  t.is(read.status, 200, read.text);
  t.is((await settle(server, second.body.key, decided.body.id, { status: 'completed' })).body.status, 'settled');
});

test('an unknown agent key: 401 invalid_api_key', async (t) => {
  for (const send of gateCalls(bearer(`ask_${'A'.repeat(43)}`))) assertError(t, await send(), 401, 'invalid_api_key');
});
