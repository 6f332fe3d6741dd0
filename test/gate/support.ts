import type { ExecutionContext } from 'ava';
import { bearer, call, csrf, ownerSession, type Reply } from '../helpers/http.js';
import type { RunningServer } from '../helpers/process.js';

/**
 * What the gate suites share beyond test/helpers: the ledger as an owner reads it, agents made
 * through the console without a mandate, and the checks every decision answer must pass.
 */

export const ID = (prefix: string) => new RegExp(`^${prefix}_[0-9A-Za-z]{22}$`);
export const ACTION_ID = ID('act');
export const EVIDENCE_ID = ID('evr');
export const APPROVAL_ID = ID('apr');

export interface LedgerRecord {
  index: number;
  id: string;
  at: string;
  workspaceId: string;
  actor: string;
  kind: string;
  subject: string;
  data: Record<string, any>;
}

/** Every record of a workspace's ledger, read page by page through GET /api/w/{wid}/ledger. */
export async function ledgerRecords(server: RunningServer, wid: string, cookie: string): Promise<LedgerRecord[]> {
  const records: LedgerRecord[] = [];
  let after: number | null = null;
  for (;;) {
    const query: string = after === null ? '?limit=200' : `?limit=200&after=${after}`;
    const res: Reply = await call(server.url, 'GET', `/api/w/${wid}/ledger${query}`, { headers: { cookie } });
    if (res.status !== 200) throw new Error(`ledger: ${res.status} ${res.text}`);
    records.push(...(res.body.data as LedgerRecord[]));
    if (res.body.next === null) return records;
    after = res.body.next as number;
  }
}

/** The ledger records about one subject (an action id). */
export async function recordsAbout(server: RunningServer, wid: string, cookie: string, subject: string): Promise<LedgerRecord[]> {
  return (await ledgerRecords(server, wid, cookie)).filter((r) => r.subject === subject);
}

const sessions = new WeakMap<RunningServer, Promise<string>>();

/** The first-start owner's session, signed in once per server (sign-in is rate limited). */
export function owner(server: RunningServer): Promise<string> {
  let cookie = sessions.get(server);
  if (!cookie) {
    cookie = ownerSession(server);
    sessions.set(server, cookie);
  }
  return cookie;
}

export interface Agent {
  wid: string;
  cookie: string;
  agentId: string;
  key: string;
  keyId: string;
}

/**
 * An agent, its mandate and its key, made through the console as an owner would (like
 * test/helpers/gate.ts createAgent, with one sign-in per server). `rules` null: no mandate is
 * ever saved.
 */
export async function makeAgent(server: RunningServer, rules: unknown[] | null, name: string): Promise<Agent> {
  const cookie = await owner(server);
  const wid = server.boot.workspaceId!;
  const headers = { ...csrf, cookie };
  const agent = await call(server.url, 'POST', `/api/w/${wid}/agents`, { headers, json: { name } });
  if (agent.status !== 201) throw new Error(`agent: ${agent.status} ${agent.text}`);
  if (rules !== null) {
    const mandate = await call(server.url, 'PUT', `/api/w/${wid}/agents/${agent.body.id}/mandate`, { headers, json: { rules, confirmBroaden: true } });
    if (mandate.status !== 200) throw new Error(`mandate: ${mandate.status} ${mandate.text}`);
  }
  const key = await call(server.url, 'POST', `/api/w/${wid}/agents/${agent.body.id}/keys`, { headers, json: {} });
  if (key.status !== 201) throw new Error(`key: ${key.status} ${key.text}`);
  return { wid, cookie, agentId: agent.body.id, key: key.body.key, keyId: key.body.id };
}

/** An agent and its key, made through the console, with no mandate ever saved. */
export async function agentWithoutMandate(server: RunningServer, name: string): Promise<Agent> {
  return makeAgent(server, null, name);
}

export function getAction(server: RunningServer, key: string, id: string) {
  return call(server.url, 'GET', `/v1/actions/${id}`, { headers: bearer(key) });
}

export function settle(server: RunningServer, key: string, id: string, body: unknown) {
  return call(server.url, 'POST', `/v1/actions/${id}/settle`, { headers: bearer(key), json: body });
}

function decodePart(part: string): any {
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
}

/** A compact JWS: three base64url parts; returns its header and claims. */
export function decodeReceipt(t: ExecutionContext, receipt: unknown): { header: any; claims: any } {
  t.is(typeof receipt, 'string');
  const parts = String(receipt).split('.');
  t.is(parts.length, 3, 'a receipt is a compact JWS of three parts');
  for (const p of parts) t.regex(p, /^[A-Za-z0-9_-]+$/);
  return { header: decodePart(parts[0]!), claims: decodePart(parts[1]!) };
}

/**
 * A refusal (deny, or a stopped agent) answers 200 with the action: decision deny, status
 * denied, the one signal, no receipt, and an evidenceRecord that the ledger holds as the
 * action.denied record of this action.
 */
export async function assertDenied(t: ExecutionContext, server: RunningServer, fx: { wid: string; cookie: string; agentId: string }, res: Reply, signal: string): Promise<void> {
  t.is(res.status, 200, res.text);
  t.regex(res.body.id, ACTION_ID);
  t.is(res.body.object, 'action');
  t.is(res.body.agentId, fx.agentId);
  t.is(res.body.decision, 'deny');
  t.is(res.body.status, 'denied');
  t.deepEqual(res.body.signals, [signal]);
  t.is(typeof res.body.reason, 'string');
  t.true(res.body.reason.length > 0);
  t.is(res.body.receipt, null);
  t.is(res.body.approvalId, null);
  t.regex(res.body.evidenceRecord, EVIDENCE_ID);
  const records = await ledgerRecords(server, fx.wid, fx.cookie);
  const evidence = records.find((r) => r.id === res.body.evidenceRecord);
  t.truthy(evidence, 'the evidenceRecord is a record of the ledger');
  t.is(evidence?.kind, 'action.denied');
  t.is(evidence?.subject, res.body.id);
  t.is(evidence?.actor, `agent:${fx.agentId}`);
  t.deepEqual(evidence?.data.signals, [signal]);
}

/** Gate answers after authentication carry the per-minute limit headers (SPEC.md 7.6). */
export function rateHeaders(res: Reply): { limit: number; remaining: number; reset: number } {
  return {
    limit: Number(res.headers['ratelimit-limit']),
    remaining: Number(res.headers['ratelimit-remaining']),
    reset: Number(res.headers['ratelimit-reset']),
  };
}
