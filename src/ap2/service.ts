import { AppError } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import type { Ledger } from '../ledger/service.js';
import type { AgentActor } from '../agents/index.js';
import type { Mandates } from '../mandates/service.js';
import type { MandateRule } from '../mandates/records.js';
import type { Store } from '../store/index.js';
import { ruleOf } from './constraints.js';
import { audienceOf } from './audience.js';
import type { Ap2Input, Presented } from './presentation.js';

// The credential code (jose, @sd-jwt) is loaded on first use: a command that only opens the store
// (svc init, the --local commands) builds this service without loading it.
const credentialCode = () => import('./credential.js');
const presentationCode = () => import('./presentation.js');
import type { Ap2MandateRecord, PublicJwk, TrustedIssuer } from './records.js';
import { ap2Repo } from './repo.js';
export { audienceOf } from './audience.js';
export type { Ap2Input, Presented } from './presentation.js';

/**
 * What the gate asks of AP2 when an agent presents a closed mandate (./presentation.ts has the
 * checks). `verify` reads only and runs before the decision's write; the two others run inside it.
 */
export interface Ap2Presentations {
  /** Verifies a presented chain against the request; throws 400/422 naming what is wrong. Reads only. */
  verify(
    c: { workspaceId: string; agentId: string },
    input: { ap2: Ap2Input; payment?: { amount: number; currency: string; merchant?: string } },
    nowMs: number,
  ): Promise<Presented>;
  /** 409 key_binding_replayed for a used nonce, 409 presentation_refused when the mandate is not presentable. Only inside store.write(). */
  admitInWrite(c: { workspaceId: string; agentId: string }, p: Presented, nowMs: number): Promise<void>;
  /** Keeps the nonce and notes the presentation on the mandate. Only inside store.write(). */
  presentedInWrite(
    c: { workspaceId: string; agentId: string },
    p: Presented,
    actionId: string,
    at: string,
  ): Promise<void>;
}

export interface Ap2SettingsView {
  issuers: TrustedIssuer[];
  /** The `aud` agents' key-binding JWTs must carry for this workspace. */
  audience: string;
  updatedAt: string | null;
  updatedBy: string | null;
}

export interface HolderKeyView {
  agentId: string;
  jwk: PublicJwk | null;
  thumbprint: string | null;
  registeredAt: string | null;
}

export type Ap2MandateView = Omit<Ap2MandateRecord, 'workspaceId'> & { object: 'ap2_mandate' };

/**
 * AP2 in (docs/ap2.md): a workspace's trusted issuers, its agents' holder keys, open Payment
 * Mandates imported as mandate rules, and the presentation of closed mandates at authorize.
 * Writes `ap2Settings`, `ap2HolderKeys`, `ap2Mandates`, `ap2Nonces` (repo.ts); writes the agent's
 * mandate through the mandates' `putIn`, in the same write; records `ap2.settings.updated`,
 * `ap2.holder_key.registered` and `ap2.mandate.imported` in the ledger.
 */
export interface Ap2 extends Ap2Presentations {
  settings(wid: string): Promise<Ap2SettingsView>;
  /** Replaces the trusted issuers, in its own write; records `ap2.settings.updated`. */
  setSettings(wid: string, input: { issuers: TrustedIssuer[] }, who: AgentActor): Promise<Ap2SettingsView>;
  holderKey(wid: string, aid: string): Promise<HolderKeyView>;
  /** Registers (or replaces) the agent's public holder key; records `ap2.holder_key.registered`. */
  setHolderKey(wid: string, aid: string, jwk: PublicJwk, who: AgentActor): Promise<HolderKeyView>;
  /**
   * Verifies an open Payment Mandate (issuer, ES256, disclosures, times, vct, `cnf` = the agent's
   * holder key) and adds its rule to the agent's mandate, in one write with its record and
   * `ap2.mandate.imported`. 400/422 naming what is wrong; 409 holder_key_required.
   */
  importMandate(wid: string, aid: string, credential: string, who: AgentActor): Promise<Ap2MandateView>;
  /** The agent's imported mandates. Reads only. */
  mandates(wid: string, aid: string): Promise<Ap2MandateView[]>;
}

export interface Ap2Deps {
  store: Store;
  clock: Clock;
  ids: IdSource;
  ledger: Ledger;
  mandates: Mandates;
}

const viewOf = ({ workspaceId: _w, ...m }: Ap2MandateRecord): Ap2MandateView => ({ object: 'ap2_mandate', ...m });

export function createAp2(deps: Ap2Deps): Ap2 {
  const { store, clock, ids, ledger } = deps;
  const repo = ap2Repo(store);

  return {
    verify: async (c, input, nowMs) => (await presentationCode()).verifyPresentation(repo, c, input, nowMs),
    admitInWrite: async (c, p, nowMs) => (await presentationCode()).admitInWrite(repo, c, p, nowMs),
    presentedInWrite: async (c, p, actionId, at) =>
      (await presentationCode()).presentedInWrite(repo, c, p, actionId, at),

    async settings(wid) {
      const s = await repo.settings(wid);
      return {
        issuers: s?.issuers ?? [],
        audience: audienceOf(wid),
        updatedAt: s?.updatedAt ?? null,
        updatedBy: s?.updatedBy ?? null,
      };
    },

    async setSettings(wid, input, who) {
      const record = { workspaceId: wid, issuers: input.issuers, updatedAt: isoAt(clock.now()), updatedBy: who.actor };
      await store.write(async () => {
        await repo.putSettings(record);
        await ledger.record({
          workspaceId: wid,
          actor: who.actor,
          kind: 'ap2.settings.updated',
          subject: wid,
          data: {
            issuers: input.issuers.map((i) => ({
              name: i.name,
              iss: i.iss ?? null,
              keys: i.jwks?.keys.length ?? 0,
              roots: i.x5cRoots?.length ?? 0,
            })),
          },
        });
      });
      return {
        issuers: record.issuers,
        audience: audienceOf(wid),
        updatedAt: record.updatedAt,
        updatedBy: record.updatedBy,
      };
    },

    async holderKey(wid, aid) {
      const k = await repo.holderKey(wid, aid);
      return {
        agentId: aid,
        jwk: k?.jwk ?? null,
        thumbprint: k?.thumbprint ?? null,
        registeredAt: k?.registeredAt ?? null,
      };
    },

    async setHolderKey(wid, aid, jwk, who) {
      const { calculateJwkThumbprint } = await import('jose');
      const thumbprint = await calculateJwkThumbprint(jwk as unknown as Record<string, string>, 'sha256');
      const record = {
        workspaceId: wid,
        agentId: aid,
        jwk,
        thumbprint,
        registeredAt: isoAt(clock.now()),
        registeredBy: who.actor,
      };
      await store.write(async () => {
        await repo.putHolderKey(record);
        await ledger.record({
          workspaceId: wid,
          actor: who.actor,
          kind: 'ap2.holder_key.registered',
          subject: aid,
          data: { thumbprint, jwk },
        });
      });
      return { agentId: aid, jwk, thumbprint, registeredAt: record.registeredAt };
    },

    async importMandate(wid, aid, credential, who) {
      const now = clock.now();
      const F = 'credential';
      const {
        checkDisclosures,
        checkTimes,
        claimsOf,
        cnfThumbprint,
        contentOf,
        invalid,
        OPEN_PAYMENT_VCT,
        readToken,
        sha256,
        splitChain,
        verifyIssuer,
      } = await credentialCode();
      const [text] = splitChain(credential, F, 1) as [string];
      const token = await readToken(text, F);
      const holder = await repo.holderKey(wid, aid);
      if (!holder) throw new AppError('holder_key_required');
      const issuer = await verifyIssuer(token, (await repo.settings(wid))?.issuers ?? [], now, F);
      checkDisclosures(token, F);
      checkTimes(token.payload, now, F);
      const content = contentOf(await claimsOf(token), OPEN_PAYMENT_VCT, F);
      checkTimes(content, now, F);
      if ((await cnfThumbprint(content, F)) !== holder.thumbprint)
        throw invalid(`${F}.cnf`, `${F}: it is bound (cnf) to another key than the agent's registered holder key`);
      const credentialHash = sha256(token.jwt);
      const exp = [token.payload.exp, content.exp].filter((e): e is number => typeof e === 'number');
      const expiresAt = exp.length > 0 ? isoAt(Math.min(...exp) * 1000) : null;
      const id = ids.id('ap2');
      const issuerName = typeof token.payload.iss === 'string' ? token.payload.iss : issuer.name;
      const rule = ruleOf(content, {
        kind: 'ap2',
        mandateId: id,
        credentialHash,
        issuer: issuerName,
        ...(expiresAt ? { expiresAt } : {}),
      });
      return store.write(async () => {
        const existing = (await repo.mandates(wid, aid)).find((m) => m.credentialHash === credentialHash);
        if (existing) throw invalid(F, `${F}: this credential was imported already, as ${existing.id}`);
        const current = (await deps.mandates.get(wid, aid)).rules;
        const saved = await deps.mandates.putIn(wid, aid, { rules: [...current, rule], confirmBroaden: true }, who);
        const record: Ap2MandateRecord = {
          id,
          workspaceId: wid,
          agentId: aid,
          credentialHash,
          issuer: issuerName,
          vct: OPEN_PAYMENT_VCT,
          expiresAt,
          constraints: Array.isArray(content.constraints)
            ? (content.constraints as Array<Record<string, unknown>>)
            : [],
          ruleIds: saved.rules.filter((r: MandateRule) => r.source?.mandateId === id).map((r) => r.id),
          recurring: rule.recurrence !== undefined,
          importedAt: isoAt(now),
          importedBy: who.actor,
          lastPresentation: null,
        };
        await repo.putMandate(record);
        await ledger.record({
          workspaceId: wid,
          actor: who.actor,
          kind: 'ap2.mandate.imported',
          subject: aid,
          data: {
            mandateId: id,
            credentialHash,
            issuer: issuerName,
            vct: record.vct,
            expiresAt,
            ruleIds: record.ruleIds,
            constraints: record.constraints,
          },
        });
        return viewOf(record);
      });
    },

    async mandates(wid, aid) {
      return (await repo.mandates(wid, aid)).map(viewOf);
    },
  };
}
