import type { ExecutionContext } from 'ava';
import type { ActionView } from '../../src/gate/service.js';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet, type JWTPayload } from 'jose';
import { consoleClient, ownerConsole, expectStatus, type LedgerRecord, type Person } from '../helpers/console.js';
import { authorize } from '../helpers/gate.js';
import { bearer, call, signIn, type Json, type Reply } from '../helpers/http.js';
import type { Served } from '../helpers/process.js';
import { withStore } from '../helpers/store.js';
import { poll } from '../helpers/wait.js';

/**
 * What the approval and kill-switch suites share: people of each role signed in through the real
 * server, agents made through the console (acting for a given person), a payment that waits for a
 * person, the agent's view of its action, receipt claims checked against the JWKS, and a bounded
 * poll.
 */

export const ID = (prefix: string) => new RegExp(`^${prefix}_[0-9A-Za-z]{22}$`);
export const APPROVAL_ID = ID('apr');
export const ACTION_ID = ID('act');
export const EVIDENCE_ID = ID('evr');

/** The server env every suite here uses: many sign-ins per minute (one per person per suite). */
export const SERVER_ENV = { SVC_SIGNIN_RATE_PER_MINUTE: '1000' };

export type Role = 'admin' | 'member' | 'analyst' | 'auditor';

/**
 * A person of the given role added to the workspace in the server's store, then signed in
 * through POST /api/session. Call these one at a time (each opens the store from this process).
 */
export async function addPerson(server: Served, wid: string, email: string, role: Role): Promise<Person> {
  const password = `${role}-password-${email.length}`;
  const user = await withStore(server.dataDir, (app) =>
    app.services.people.addMember({ workspaceId: wid, email, name: email.split('@')[0]!, password, role }),
  );
  return { ...consoleClient(server, wid, await signIn(server.url, email, password)), id: user.id };
}

/** The first-start owner and one person of every other role (two members), all signed in. */
export interface Staff {
  owner: Person;
  admin: Person;
  member: Person;
  otherMember: Person;
  analyst: Person;
  auditor: Person;
}

export async function staff(server: Served): Promise<Staff> {
  const owner = await ownerConsole(server);
  // One at a time: each opens the server's store from this process.
  const admin = await addPerson(server, owner.wid, 'admin@example.com', 'admin');
  const member = await addPerson(server, owner.wid, 'member@example.com', 'member');
  const otherMember = await addPerson(server, owner.wid, 'other.member@example.com', 'member');
  const analyst = await addPerson(server, owner.wid, 'analyst@example.com', 'analyst');
  const auditor = await addPerson(server, owner.wid, 'auditor@example.com', 'auditor');
  return { owner, admin, member, otherMember, analyst, auditor };
}

export interface Bot {
  agentId: string;
  key: string;
}

/**
 * An agent made through the console by `by` (an owner or admin), acting for `actsFor` (a usr_ id;
 * omitted: the creator), with the given mandate rules and one agent key.
 */
export async function makeBot(by: Person, name: string, rules: unknown[], actsFor?: string): Promise<Bot> {
  const agent = expectStatus(await by.send('POST', '/agents', { name, ...(actsFor ? { actsFor } : {}) }), 201, 'agent');
  expectStatus(
    await by.send('PUT', `/agents/${agent.body.id}/mandate`, { rules, confirmBroaden: true }),
    200,
    'mandate',
  );
  const key = expectStatus(await by.send('POST', `/agents/${agent.body.id}/keys`, {}), 201, 'key');
  return { agentId: agent.body.id, key: key.body.key };
}

/** A payment to Acme in EUR, with a summary that names it. */
export function pay(
  amount: number,
  note = 'invoice',
): { type: string; summary: string; payment: { amount: number; currency: string; merchant: string } } {
  return {
    type: 'payment',
    summary: `Pay Acme ${amount} EUR (${note})`,
    payment: { amount, currency: 'EUR', merchant: 'acme.example' },
  };
}

/** A payment rule whose amounts above `above` need a person; `approval` adds to the rule's approval. */
export function reviewRule(approval: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  return {
    actions: ['payment'],
    merchants: ['acme.example'],
    currencies: ['EUR'],
    maxAmount: 5000,
    approval: { above: 2000, ...approval },
    ...extra,
  };
}

/** A payment waiting for a person, as the gate answers it: with its approval and its payment. */
export type PendingPayment = ActionView & { approvalId: string; payment: NonNullable<ActionView['payment']> };

/**
 * Asks for a payment that must wait for a person: asserts the answer is `review` /
 * `pending_approval` with an apr_ approvalId and no receipt; returns the action.
 */
export async function pendingPayment(
  t: ExecutionContext,
  server: Served,
  bot: Bot,
  amount = 3000,
  note = 'invoice',
): Promise<PendingPayment> {
  const res = await authorize(server, bot.key, pay(amount, note));
  t.is(res.status, 200, res.text);
  t.is(res.body.decision, 'review', res.text);
  t.is(res.body.status, 'pending_approval');
  t.regex(res.body.approvalId, APPROVAL_ID);
  t.is(res.body.receipt, null);
  return res.body;
}

/** The agent's own view of its action: GET /v1/actions/{id} with its key. */
export function agentView(server: Served, bot: Bot, actionId: string): Promise<Reply> {
  return call(server.url, 'GET', `/v1/actions/${actionId}`, { headers: bearer(bot.key) });
}

/** One approval as GET /api/w/{wid}/approvals lists it (any status), or undefined. */
export async function findApproval(who: Person, id: string, status?: string): Promise<Json> {
  for (let cursor: string | null = null, first = true; first || cursor; first = false) {
    const query = new URLSearchParams({ limit: '200', ...(status ? { status } : {}), ...(cursor ? { cursor } : {}) });
    const res = expectStatus(await who.get(`/approvals?${query}`), 200, 'approvals');
    const hit = res.body.data.find((a: { id: string }) => a.id === id);
    if (hit) return hit;
    cursor = res.body.next;
  }
  return undefined;
}

/** The receipt's claims, verified with jose against the server's published JWKS (EdDSA only). */
export async function verifiedClaims(server: Served, receipt: string): Promise<JWTPayload> {
  const jwks = await call<JSONWebKeySet>(server.url, 'GET', '/.well-known/jwks.json');
  if (jwks.status !== 200) throw new Error(`jwks: ${jwks.status} ${jwks.text}`);
  const { payload } = await jwtVerify(receipt, createLocalJWKSet(jwks.body), { algorithms: ['EdDSA'] });
  return payload;
}

/** Ledger records about one subject, in order. */
export async function about(reader: Person, subject: string): Promise<LedgerRecord[]> {
  return (await reader.ledger()).filter((r) => r.subject === subject);
}

/**
 * Polls `read` until `done` holds of its result, at most `timeoutMs`; returns the last result
 * (the caller asserts on it, so a timeout fails with what was last seen).
 */
export function until<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 10_000,
  everyMs = 100,
): Promise<T> {
  return poll(read, done, { timeoutMs, everyMs });
}
