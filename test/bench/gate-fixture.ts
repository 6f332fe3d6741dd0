/**
 * What the gate benchmarks need, made through the real product's console API as an owner would
 * (see test/helpers/gate.ts): the first-start owner's session after the one-time password is
 * replaced, an agent, its mandate, its key; then one allowed payment, whose receipt the verify
 * benchmark checks again and again.
 */
import { bearer, call, csrf, ownerSession } from '../helpers/http.js';

export interface ServeBoot {
  listening: string;
  workspaceId?: string;
  owner?: { email: string; password: string };
}

/** Payments to acme.example in EUR up to 5000 each, with no period limit: a run never uses it up. */
export const BENCH_RULE = { actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 5000 };

/** An allowed payment under BENCH_RULE, without an idempotency key: every request is a new action. */
export const BENCH_PAYMENT = {
  type: 'payment',
  summary: 'Pay invoice 1042 to Acme',
  payment: { amount: 1200, currency: 'EUR', merchant: 'acme.example' },
};

export interface GateFixture {
  key: string;
  /** The answer to one authorize: its body, and the receipt it carries. */
  authorizeAnswer: string;
  receipt: string;
  /** The answer to a verify of that receipt once it was seen (`replayed: true`), as the benchmark gets it. */
  verifyAnswer: string;
}

export async function gateFixture(server: { url: string; boot: ServeBoot }): Promise<GateFixture> {
  const cookie = await ownerSession(server);
  const wid = server.boot.workspaceId!;
  const headers = { ...csrf, cookie };
  const agent = await call(server.url, 'POST', `/api/w/${wid}/agents`, { headers, json: { name: 'bench-bot' } });
  if (agent.status !== 201) throw new Error(`agent: ${agent.status} ${agent.text}`);
  const mandate = await call(server.url, 'PUT', `/api/w/${wid}/agents/${agent.body.id}/mandate`, {
    headers,
    json: { rules: [BENCH_RULE], confirmBroaden: true },
  });
  if (mandate.status !== 200) throw new Error(`mandate: ${mandate.status} ${mandate.text}`);
  const minted = await call(server.url, 'POST', `/api/w/${wid}/agents/${agent.body.id}/keys`, { headers, json: {} });
  if (minted.status !== 201) throw new Error(`key: ${minted.status} ${minted.text}`);
  const key = minted.body.key as string;

  const allowed = await call(server.url, 'POST', '/v1/actions/authorize', {
    headers: bearer(key),
    json: BENCH_PAYMENT,
  });
  if (allowed.status !== 200 || allowed.body.decision !== 'allow' || typeof allowed.body.receipt !== 'string') {
    throw new Error(`authorize did not allow the benchmark payment: ${allowed.status} ${allowed.text}`);
  }
  const receipt = allowed.body.receipt as string;
  let verified;
  for (let i = 0; i < 2; i += 1) {
    verified = await call(server.url, 'POST', '/v1/verify', { json: { receipt } });
    if (verified.status !== 200 || verified.body.valid !== true)
      throw new Error(`verify: ${verified.status} ${verified.text}`);
  }
  return { key, authorizeAnswer: allowed.text, receipt, verifyAnswer: verified!.text };
}
