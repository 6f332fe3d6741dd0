import test from 'ava';
import { call } from '../helpers/http.js';
import { authorize } from '../helpers/gate.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { makeAgent, type Agent } from './support.js';

/**
 * Review: a rule for `*.acme.example` covers acme.example's subdomains (README: "where
 * `*.example.com` covers subdomains"). A merchant name that is not a subdomain of acme.example,
 * but merely ends in ".acme.example", must not be allowed, nor get a valid receipt naming it.
 */

let server: ServedInProcess;
let fx: Agent;

test.before(async () => {
  server = await serveInProcess();
  fx = await makeAgent(
    server,
    [{ actions: ['payment'], merchants: ['*.acme.example'], currencies: ['EUR'], maxAmount: 5000 }],
    'wildcard-bot',
  );
});

test.after.always(() => stopAndClean(server));

test('a subdomain is covered (control)', async (t) => {
  const res = await authorize(server, fx.key, {
    type: 'payment',
    summary: 'Pay',
    payment: { amount: 100, currency: 'EUR', merchant: 'shop.acme.example' },
  });
  t.is(res.body.decision, 'allow', res.text);
});

for (const merchant of [
  'evil.example/.acme.example',
  'evil.example#.acme.example',
  'https://evil.example?.acme.example',
  'evil.example .acme.example',
  'evil.example@.acme.example',
]) {
  test(`merchant ${JSON.stringify(merchant)} is not a subdomain of acme.example and is not allowed`, async (t) => {
    const res = await authorize(server, fx.key, {
      type: 'payment',
      summary: 'Pay',
      payment: { amount: 100, currency: 'EUR', merchant },
    });
    t.true(
      res.status === 400 || res.body.decision === 'deny',
      `${res.status} decision ${res.body.decision}, receipt mer ${res.body.receipt ? JSON.parse(Buffer.from(res.body.receipt.split('.')[1], 'base64url').toString()).mer : null}`,
    );
    if (res.body.receipt) {
      const verified = await call(server.url, 'POST', '/v1/verify', { json: { receipt: res.body.receipt } });
      t.log(`online verification: valid=${verified.body.valid} mer=${verified.body.claims?.mer}`);
    }
  });
}
