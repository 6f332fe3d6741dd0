import test from 'ava';
import { PAY_ACME } from '../helpers/gate.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { authorizeRaw, makeAgent, type Agent } from './support.js';

/**
 * 500 is kept for server faults. A number too large for a double in metadata
 * (valid JSON, parsed as Infinity) with an idempotency key must be a 4xx or a decision, never 500.
 */

let server: ServedInProcess;
let fx: Agent;

test.before(async () => {
  server = await serveInProcess();
  fx = await makeAgent(server, [PAY_ACME, { actions: ['crm.*'] }], 'infinity-bot');
});

test.after.always(() => stopAndClean(server));

test('metadata holding 1e400 with an idempotency key is not a 500', async (t) => {
  const res = await authorizeRaw(
    server,
    fx.key,
    '{"type":"crm.update","summary":"Update","idempotencyKey":"inf-1","metadata":{"n":1e400}}',
  );
  t.true(res.status < 500, `${res.status} ${res.text}`);
});

test('metadata holding -1e400 in a payment with an idempotency key is not a 500', async (t) => {
  const res = await authorizeRaw(
    server,
    fx.key,
    '{"type":"payment","summary":"Pay","idempotencyKey":"inf-2","payment":{"amount":100,"currency":"EUR","merchant":"acme.example"},"metadata":{"n":-1e400}}',
  );
  t.true(res.status < 500, `${res.status} ${res.text}`);
});
