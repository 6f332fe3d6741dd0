import { createPublicKey, type KeyObject } from 'node:crypto';
import { readStanding } from '../agents/standing.js';
import { AppError } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { Ledger } from '../ledger/service.js';
import { nameMatches } from '../mandates/evaluate.js';
import type { Mandates } from '../mandates/index.js';
import type { Store } from '../store/index.js';
import { directoryJwk, generateAgentKey, unsealAgentKey, type DirectoryJwk } from './keys.js';
import { signResponse } from './httpsig.js';
import {
  DIRECTORY_MEDIA_TYPE,
  DIRECTORY_PATH,
  DIRECTORY_TAG,
  LIFETIME_SECONDS,
  signAgentRequest,
  type AgentSignature,
} from './profile.js';
import type { AgentSigningKeyRecord } from './records.js';
import { agentSigningRepo } from './repo.js';
import type { SignHttpInput } from './schemas.js';

/**
 * Agents' signed HTTP requests (docs/signed-requests.md): svc signs an agent's outbound request
 * with that agent's own Ed25519 key, under the Web Bot Auth profile (profile.ts), and publishes
 * every signing agent's keys at its directory.
 *
 * Rules:
 * - A stopped agent (a hold, "stop every agent", removed) is refused 403 agent_stopped, as its
 *   model calls are; nothing is signed.
 * - An agent may have a request signed only when a rule of its mandate names the URL's host in
 *   `domains` (by name, as `*.` and a parent domain, or `["*"]`), whatever the rule's action
 *   types; otherwise 403 signing_not_allowed, signal domain_not_allowed.
 * - Every attempt is a ledger record in the same write as what it changes: `signature.issued`
 *   (the key id, covered components, created and expires) or `signature.refused` (why). The URL is
 *   recorded as origin and path: a query may carry what the ledger must not keep.
 * - An agent's key is made at its first signature and replaced when it is 30 days old; the
 *   retired key stays in the directory 7 days (a site that cached the directory still verifies),
 *   then leaves the store.
 * - The directory lists the keys of every agent that may sign (not stopped), current and within
 *   grace, as a JWKS of its media type, its answer signed by each key it lists
 *   (`tag="http-message-signatures-directory"`, `@authority;req`).
 */

export const ROTATE_AFTER_MS = 30 * 86_400_000;
export const RETIRED_GRACE_MS = 7 * 86_400_000;

/** The directory's answer: its body and the signature headers over it. */
export interface SignedDirectory {
  body: { keys: DirectoryJwk[] };
  mediaType: string;
  signatureInput: string;
  signature: string;
}

/**
 * Signed agent requests. Reads agents' standing, their mandates and the `agentSigningKeys` table;
 * writes that table (repo.ts) and the ledger, in one write per attempt.
 */
export interface AgentSigning {
  /**
   * Signs the request an agent will send: the three header values, or 403 agent_stopped /
   * signing_not_allowed. Records the attempt either way; may make or rotate the agent's key.
   */
  sign(who: { workspaceId: string; agentId: string }, input: SignHttpInput): Promise<AgentSignature>;
  /** The directory as served to a request for `url` (its authority is what the answer's signatures cover). Reads only. */
  directory(request: { url: string; headers: Record<string, string> }): Promise<SignedDirectory>;
  /** The public keys the directory lists, by kid: what a verifier looks `keyid` up in. Reads only. */
  directoryKeys(): Promise<Map<string, KeyObject>>;
  /** The directory's URL, as `Signature-Agent` names it. */
  directoryUrl(): string;
}

export interface AgentSigningDeps {
  store: Store;
  clock: Clock;
  masterKey: Buffer;
  ledger: Ledger;
  mandates: Pick<Mandates, 'get'>;
  /** The deployment's public address (settings.baseUrl, or as bound). */
  baseUrl: () => string;
}

type Outcome = { kind: 'signed'; key: AgentSigningKeyRecord } | { kind: 'refused'; error: AppError };

const liveAt = (nowMs: number) => (r: AgentSigningKeyRecord) =>
  r.retiredAt === null || Date.parse(r.retiredAt) + RETIRED_GRACE_MS > nowMs;

export function createAgentSigning(deps: AgentSigningDeps): AgentSigning {
  const { store, clock, masterKey, ledger, mandates } = deps;
  const repo = agentSigningRepo(store);
  const directoryUrl = () => `${deps.baseUrl()}${DIRECTORY_PATH}`;
  const unsealed = new Map<string, KeyObject>();
  const privateOf = (r: AgentSigningKeyRecord) => {
    let k = unsealed.get(r.kid);
    if (!k) {
      k = unsealAgentKey(r, masterKey);
      unsealed.set(r.kid, k);
    }
    return k;
  };

  /** The agent's current key, made or replaced by age; retired keys past grace removed. Only inside a write. */
  const currentKeyInWrite = async (wid: string, aid: string, nowMs: number): Promise<AgentSigningKeyRecord> => {
    const keys = await repo.keysOf(wid, aid);
    for (const r of keys) if (!liveAt(nowMs)(r)) await repo.remove(r);
    const current = keys.find((r) => r.retiredAt === null);
    if (current && Date.parse(current.createdAt) + ROTATE_AFTER_MS > nowMs) return current;
    if (current) await repo.put({ ...current, retiredAt: isoAt(nowMs) });
    const fresh = await generateAgentKey(masterKey, { workspaceId: wid, agentId: aid }, nowMs);
    await repo.put(fresh);
    return fresh;
  };

  /** Why this agent may not have this request signed, or null. Reads only. */
  const refusal = async (wid: string, aid: string, host: string): Promise<AppError | null> => {
    const standing = await readStanding(store, wid, aid);
    if (standing.stopped)
      return new AppError('agent_stopped', {
        message: `Agent ${aid} is stopped (${standing.reason}); nothing was signed.`,
        details: { hold: standing.hold, stopped: standing.stoppedBy, agentId: aid },
      });
    const { rules } = await mandates.get(wid, aid);
    if (rules.some((r) => r.domains !== undefined && nameMatches(r.domains, host))) return null;
    return new AppError('signing_not_allowed', {
      message:
        rules.length === 0
          ? 'This agent has no mandate: no request is signed until one names the domain.'
          : `No rule of this agent's mandate names the domain ${host}; nothing was signed.`,
      details: { signal: 'domain_not_allowed', domain: host },
    });
  };

  return {
    directoryUrl,

    async sign(who, input) {
      const { workspaceId: wid, agentId: aid } = who;
      const url = new URL(input.url);
      const host = url.hostname.toLowerCase();
      const headers = Object.entries(input.headers).map(([n, v]): [string, string] => [n.toLowerCase(), v.trim()]);
      const nowMs = clock.now();
      const created = Math.floor(nowMs / 1000);
      const covered = ['@method', '@target-uri', '@authority', 'signature-agent', ...headers.map(([n]) => n)];
      const recorded = { method: input.method, url: `${url.origin}${url.pathname}`, domain: host, covered };
      const outcome = await store.write(async (): Promise<Outcome> => {
        const refused = await refusal(wid, aid, host);
        if (refused) {
          await ledger.record({
            workspaceId: wid,
            actor: `agent:${aid}`,
            kind: 'signature.refused',
            subject: aid,
            data: { ...recorded, error: refused.type, reason: refused.message },
          });
          return { kind: 'refused', error: refused };
        }
        const key = await currentKeyInWrite(wid, aid, nowMs);
        await ledger.record({
          workspaceId: wid,
          actor: `agent:${aid}`,
          kind: 'signature.issued',
          subject: aid,
          data: { ...recorded, kid: key.kid, created, expires: created + LIFETIME_SECONDS },
        });
        return { kind: 'signed', key };
      });
      if (outcome.kind === 'refused') throw outcome.error;
      return signAgentRequest(
        { method: input.method, url, headers },
        { kid: outcome.key.kid, privateKey: privateOf(outcome.key) },
        directoryUrl(),
        created,
      );
    },

    async directoryKeys() {
      const listed = await listedKeys(clock.now());
      return new Map(listed.map((r) => [r.kid, createPublicKey({ key: { ...directoryJwk(r) }, format: 'jwk' })]));
    },

    async directory(request) {
      const nowMs = clock.now();
      const listed = await listedKeys(nowMs);
      const created = Math.floor(nowMs / 1000);
      const headers = await signResponse(
        { status: 200, headers: { 'content-type': DIRECTORY_MEDIA_TYPE } },
        { method: 'GET', url: request.url, headers: request.headers },
        listed.map((r, i) => ({
          label: `binding${i}`,
          params: { created, expires: created + LIFETIME_SECONDS, keyid: r.kid, tag: DIRECTORY_TAG },
          privateKey: privateOf(r),
        })),
        ['@authority;req'],
      );
      return {
        body: { keys: listed.map(directoryJwk) },
        mediaType: DIRECTORY_MEDIA_TYPE,
        signatureInput: headers.signatureInput,
        signature: headers.signature,
      };
    },
  };

  /** The keys the directory lists at a time: of agents not stopped, current or within grace, oldest first. */
  async function listedKeys(nowMs: number): Promise<AgentSigningKeyRecord[]> {
    const all = (await repo.all()).filter(liveAt(nowMs));
    const agents = new Map(all.map((r) => [`${r.workspaceId}/${r.agentId}`, r]));
    const running = new Set<string>();
    await Promise.all(
      [...agents].map(async ([id, r]) => {
        if (!(await readStanding(store, r.workspaceId, r.agentId)).stopped) running.add(id);
      }),
    );
    return all
      .filter((r) => running.has(`${r.workspaceId}/${r.agentId}`))
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.kid.localeCompare(b.kid));
  }
}
