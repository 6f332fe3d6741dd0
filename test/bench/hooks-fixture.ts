/**
 * The card-authorization benchmark's server, set up through the real product as an owner and a
 * card issuer would (see test/integrations/issuer.test.ts):
 * - `svc serve` from dist/ on a first start (info-level request logs), its owner's session after
 *   the one-time password is replaced (helpers/http.ts ownerSession);
 * - an agent whose mandate allows payments to acme.example in EUR up to 5000 each, with no period
 *   limit (gate-fixture.ts BENCH_RULE), so that a run never uses it up;
 * - the generic issuer integration set up (its secret answered once) and one card mapped to the
 *   agent.
 * Deliveries are `authorization.request` events of one fixed size, each with a fresh id, an
 * amount within the mandate and `createdAt` now, signed at send time with `svc-signature`
 * (`t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`), as the issuer signs them.
 * Rate limits are lifted: the benchmark measures the work of each request, not the limiter.
 */
import { createHmac } from 'node:crypto';
import { call, csrf, ownerSession } from '../helpers/http.js';
import { BIN, cleanEnv } from '../helpers/process.js';
import { startChild, type Child } from './children.js';
import { BENCH_RULE, type ServeBoot } from './gate-fixture.js';

const UNLIMITED = '100000000';
export const CARD_ID = 'card_bench';

export interface HooksBench {
  server: Child<ServeBoot>;
  workspaceId: string;
  agentId: string;
  /** The issuer's `svc-signature` secret. */
  secret: string;
  /** The owner's session cookie. */
  cookie: string;
}

const expect = (what: string, reply: { status: number; text: string }, status: number) => {
  if (reply.status !== status)
    throw new Error(`${what}: expected ${status}, got ${reply.status} ${reply.text.slice(0, 400)}`);
};

export async function startHooksBench(dataDir: string, nodeFlags: string[] = []): Promise<HooksBench> {
  const env = cleanEnv({
    SVC_LOG_LEVEL: 'info',
    SVC_GATE_RATE_PER_MINUTE: UNLIMITED,
    SVC_PUBLIC_RATE_PER_MINUTE: UNLIMITED,
  });
  const server = await startChild<ServeBoot>(
    [...nodeFlags, BIN, 'serve', '--json', '--data-dir', dataDir, '--port', '0'],
    env,
  );
  try {
    const cookie = await ownerSession(server);
    const wid = server.boot.workspaceId!;
    const headers = { ...csrf, cookie };
    const agent = await call(server.url, 'POST', `/api/w/${wid}/agents`, { headers, json: { name: 'card-bench-bot' } });
    expect('agent', agent, 201);
    expect(
      'mandate',
      await call(server.url, 'PUT', `/api/w/${wid}/agents/${agent.body.id}/mandate`, {
        headers,
        json: { rules: [BENCH_RULE], confirmBroaden: true },
      }),
      200,
    );
    const issuer = await call(server.url, 'PUT', `/api/w/${wid}/integrations/issuer`, { headers, json: {} });
    expect('issuer integration', issuer, 200);
    if (typeof issuer.body.secret !== 'string')
      throw new Error(`the issuer integration answered no secret: ${issuer.text}`);
    expect(
      'card mapping',
      await call(server.url, 'PUT', `/api/w/${wid}/issuer/cards/${CARD_ID}`, {
        headers,
        json: { agentId: agent.body.id },
      }),
      200,
    );
    return { server, workspaceId: wid, agentId: agent.body.id as string, secret: issuer.body.secret as string, cookie };
  } catch (err) {
    await server.stop();
    throw err;
  }
}

/**
 * A source of `authorization.request` bodies, all of one size: the id is `evt_<prefix>_<sequence>`
 * (fixed width, unique per source), the amount 1000..4999 (within BENCH_RULE's 5000), `createdAt`
 * an ISO timestamp of now (always 24 characters).
 */
export function authorizationEvents(prefix: string): () => string {
  let sequence = 0;
  return () => {
    sequence += 1;
    return JSON.stringify({
      id: `evt_${prefix}_${String(sequence).padStart(9, '0')}`,
      type: 'authorization.request',
      cardId: CARD_ID,
      amount: 1000 + (sequence % 4000),
      currency: 'EUR',
      merchant: { name: 'Acme', domain: 'acme.example', mcc: '5734' },
      createdAt: new Date().toISOString(),
    });
  };
}

/** The issuer's `svc-signature` header for `body`, signed now. */
export function signature(secret: string, body: string): Record<string, string> {
  const t = Math.floor(Date.now() / 1000);
  return { 'svc-signature': `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}` };
}

/** Every record of the workspace's ledger after index `after` (-1: all), page by page. */
export async function ledgerAfter(
  bench: HooksBench,
  after: number,
): Promise<Array<{ index: number; kind: string; subject: string }>> {
  const records: Array<{ index: number; kind: string; subject: string }> = [];
  let next: number | null = after;
  while (next !== null) {
    const page = await call(bench.server.url, 'GET', `/api/w/${bench.workspaceId}/ledger?after=${next}&limit=200`, {
      headers: { cookie: bench.cookie },
    });
    expect('ledger', page, 200);
    records.push(...(page.body.data as Array<{ index: number; kind: string; subject: string }>));
    next = page.body.next as number | null;
  }
  return records;
}
