import { bearer, call, csrf, ownerSession } from './http.js';
import type { Served } from './process.js';

/**
 * Gate fixtures made through the console API, as an owner would: an agent, its mandate and its
 * key. Returns what an agent holds (its key) and what an owner holds (the session cookie).
 */
export interface AgentFixture {
  wid: string;
  cookie: string;
  agentId: string;
  key: string;
}

export const PAY_ACME = {
  actions: ['payment'],
  merchants: ['acme.example'],
  currencies: ['EUR'],
  maxAmount: 5000,
  periodLimit: { amount: 20000, period: 'day' },
};

export async function createAgent(
  server: Served,
  rules: unknown[] = [PAY_ACME],
  name = 'billing-bot',
): Promise<AgentFixture> {
  const cookie = await ownerSession(server);
  const wid = server.boot.workspaceId!;
  const headers = { ...csrf, cookie };
  const agent = await call(server.url, 'POST', `/api/w/${wid}/agents`, { headers, json: { name } });
  if (agent.status !== 201) throw new Error(`agent: ${agent.status} ${agent.text}`);
  const mandate = await call(server.url, 'PUT', `/api/w/${wid}/agents/${agent.body.id}/mandate`, {
    headers,
    json: { rules, confirmBroaden: true },
  });
  if (mandate.status !== 200) throw new Error(`mandate: ${mandate.status} ${mandate.text}`);
  const key = await call(server.url, 'POST', `/api/w/${wid}/agents/${agent.body.id}/keys`, { headers, json: {} });
  if (key.status !== 201) throw new Error(`key: ${key.status} ${key.text}`);
  return { wid, cookie, agentId: agent.body.id, key: key.body.key };
}

export function authorize(server: Served, key: string, body: unknown, headers: Record<string, string> = {}) {
  return call(server.url, 'POST', '/v1/actions/authorize', { headers: { ...bearer(key), ...headers }, json: body });
}

export const payment = (amount: number, extra: Record<string, unknown> = {}) => ({
  type: 'payment',
  summary: `Pay invoice to Acme (${amount})`,
  payment: { amount, currency: 'EUR', merchant: 'acme.example' },
  ...extra,
});
