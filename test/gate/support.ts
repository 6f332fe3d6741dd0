import type { ExecutionContext } from 'ava';
import type { ReceiptClaims } from '../../src/receipts/types.js';
import { consoleClient, expectStatus, ledgerRecords, type LedgerRecord } from '../helpers/console.js';
import type { AgentFixture } from '../helpers/gate.js';
import { bearer, call, ownerSession, type Json, type Reply } from '../helpers/http.js';
import type { Served } from '../helpers/process.js';

/**
 * What the gate suites share beyond test/helpers: the ledger records of an action or an agent,
 * agents made through the console (with or without a mandate), and the checks every decision
 * answer must pass.
 */

export const ID = (prefix: string) => new RegExp(`^${prefix}_[0-9A-Za-z]{22}$`);
export const ACTION_ID = ID('act');
export const EVIDENCE_ID = ID('evr');
export const APPROVAL_ID = ID('apr');

/** The ledger records about one subject (an action id). */
export async function recordsAbout(
  server: Served,
  wid: string,
  cookie: string,
  subject: string,
): Promise<LedgerRecord[]> {
  return (await ledgerRecords(server, wid, cookie)).filter((r) => r.subject === subject);
}

/** The ledger records an agent wrote: its decisions. */
export async function recordsBy(
  server: Served,
  fx: { wid: string; cookie: string; agentId: string },
): Promise<LedgerRecord[]> {
  return (await ledgerRecords(server, fx.wid, fx.cookie)).filter((r) => r.actor === `agent:${fx.agentId}`);
}

const sessions = new WeakMap<Served, Promise<string>>();

/** The first-start owner's session, signed in once per server (sign-in is rate limited). */
export function owner(server: Served): Promise<string> {
  let cookie = sessions.get(server);
  if (!cookie) {
    cookie = ownerSession(server);
    sessions.set(server, cookie);
  }
  return cookie;
}

/** An agent fixture (test/helpers/gate.ts) and the id of its key. */
export interface Agent extends AgentFixture {
  keyId: string;
}

/**
 * An agent, its mandate and its key, made through the console as an owner would (like
 * test/helpers/gate.ts createAgent, with one sign-in per server). `rules` null: no mandate is
 * ever saved.
 */
export async function makeAgent(server: Served, rules: unknown[] | null, name: string): Promise<Agent> {
  const ws = consoleClient(server, server.boot.workspaceId!, await owner(server));
  const agent = expectStatus(await ws.send('POST', '/agents', { name }), 201, 'agent');
  if (rules !== null)
    expectStatus(
      await ws.send('PUT', `/agents/${agent.body.id}/mandate`, { rules, confirmBroaden: true }),
      200,
      'mandate',
    );
  const key = expectStatus(await ws.send('POST', `/agents/${agent.body.id}/keys`, {}), 201, 'key');
  return { wid: ws.wid, cookie: ws.cookie, agentId: agent.body.id, key: key.body.key, keyId: key.body.id };
}

/** An agent and its key, made through the console, with no mandate ever saved. */
export async function agentWithoutMandate(server: Served, name: string): Promise<Agent> {
  return makeAgent(server, null, name);
}

export function getAction(server: Served, key: string, id: string) {
  return call(server.url, 'GET', `/v1/actions/${id}`, { headers: bearer(key) });
}

export function settle(server: Served, key: string, id: string, body: unknown) {
  return call(server.url, 'POST', `/v1/actions/${id}/settle`, { headers: bearer(key), json: body });
}

/** POST /v1/actions/authorize with a raw body sent as JSON, as it is (malformed or odd input). */
export function authorizeRaw(server: Served, key: string, raw: string) {
  return call(server.url, 'POST', '/v1/actions/authorize', {
    headers: { ...bearer(key), 'content-type': 'application/json' },
    body: raw,
  });
}

function decodePart(part: string): Json {
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
}

/** A compact JWS: three base64url parts; returns its header and claims. */
export function decodeReceipt(
  t: ExecutionContext,
  receipt: unknown,
): { header: { alg: string; kid: string; typ: string }; claims: ReceiptClaims } {
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
export async function assertDenied(
  t: ExecutionContext,
  server: Served,
  fx: { wid: string; cookie: string; agentId: string },
  res: Reply,
  signal: string,
): Promise<void> {
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

/** Gate answers after authentication carry the per-minute limit headers. */
export function rateHeaders(res: Reply): { limit: number; remaining: number; reset: number } {
  return {
    limit: Number(res.headers['ratelimit-limit']),
    remaining: Number(res.headers['ratelimit-remaining']),
    reset: Number(res.headers['ratelimit-reset']),
  };
}
