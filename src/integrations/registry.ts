import { AppError } from '../errors/app-error.js';
import type { Ledger } from '../ledger/service.js';
import { isoAt, type Clock } from '../lib/clock.js';
import { GenerationCache } from '../lib/generation-cache.js';
import type { IdSource } from '../lib/ids.js';
import { sealText, unsealText } from '../lib/seal.js';
import type { Store } from '../store/index.js';
import type { IntegrationKind, IntegrationRecord } from './records.js';
import { integrationsRepo } from './repo.js';

/**
 * Integration settings per workspace (docs/integrations.md), one record per kind.
 * Rules:
 * - `issuer`, `github` and `chat-relay` get a secret we generate (`whs_…`), answered once. Setting
 *   one up again needs `{ "rotate": true }`: a new secret is answered, and the old one keeps
 *   verifying for ROTATION_OVERLAP_MS, then stops.
 * - `stripe` and `slack` take the provider's `signingSecret` in the body. Sending a different one
 *   later is that provider's rotation: the old one keeps verifying for the same overlap. The
 *   secret is never answered back.
 * - `ssf` takes `{ issuer, jwksUri | jwks, audience }`: it verifies with public keys, no secret.
 * - `{ "revokePrevious": true }` (alone, or with a rotation) ends every secret but the current one
 *   at once: for a secret that leaked, the 24 hours of overlap are not wanted.
 * - A kind's secret settings (`configSecrets`: github's API `token`) are sealed too, bound to the
 *   workspace, kind and setting; they are never answered, shown or recorded (only their names).
 * - Every secret is sealed with the master key, bound to its workspace and kind; other settings
 *   of a kind (`config`) are plain. Configuring is recorded in the ledger (never the secret).
 * - Opened settings are cached in memory (docs/operations.md): per workspace and kind, the record and
 *   its live signing secrets unsealed, valid for one value of the `integrations` generation, which
 *   every write of an integration record bumps in its own transaction (repo.ts `putIntegration`),
 *   whichever process or instance makes it. Each use reads that counter first (one store read), so
 *   a rotation or `revokePrevious` is seen by the very next delivery; a secret's overlap is checked
 *   against the clock at each use. Inside a write nothing is cached or taken from the cache.
 */
export const ROTATION_OVERLAP_MS = 24 * 3_600_000;
export const INTEGRATION_KINDS = ['issuer', 'stripe', 'github', 'slack', 'chat-relay', 'ssf'] as const;
const GENERATED: ReadonlySet<IntegrationKind> = new Set(['issuer', 'github', 'chat-relay']);
const GIVEN: ReadonlySet<IntegrationKind> = new Set(['stripe', 'slack']);
const SEAL_PURPOSE = 'integration-secret';
/** The plain settings a kind's secret settings are bound to. */
const BOUND_TO: Partial<Record<IntegrationKind, readonly string[]>> = { github: ['apiUrl'] };
/** How many workspace and kind pairs one process keeps opened (least recently used go first). */
const OPENED_CACHED = 10_000;

/** A record with the signing secrets that were live when it was opened, unsealed. */
interface Opened {
  record: IntegrationRecord;
  secrets: ReadonlyArray<{ secret: string; retiresAtMs: number | null }>;
}

export interface ConfigureInput {
  rotate?: boolean;
  /** Ends every secret but the current one now (a leaked old secret need not live its 24 hours). */
  revokePrevious?: boolean;
  signingSecret?: string;
  /** The kind's other settings (validated by its route schema). */
  config?: Record<string, unknown>;
  /** The kind's secret settings (github's `token`): sealed, never answered; null removes one. */
  configSecrets?: Record<string, string | null>;
}

export interface ConfigureResult {
  kind: IntegrationKind;
  /** Only for the generated kinds, shown this once. */
  secret?: string;
  previousRetiresAt: string | null;
  config: Record<string, unknown>;
}

export function createIntegrationRegistry(deps: {
  store: Store;
  clock: Clock;
  ids: IdSource;
  masterKey: Buffer;
  ledger: Ledger;
}) {
  const { store, clock, ids, masterKey, ledger } = deps;
  const repo = integrationsRepo(store);
  const bound = (wid: string, kind: string) => `${wid}/${kind}`;
  const live = (s: IntegrationRecord['secrets'][number], now: number) =>
    s.retiresAt === null || Date.parse(s.retiresAt) > now;

  // [wid, kind] -> the record and its live secrets unsealed, under one `integrations` generation (rules above).
  const opened = new GenerationCache<string, Opened>(OPENED_CACHED);
  const openRecord = (record: IntegrationRecord): Opened => {
    const now = clock.now();
    const secrets = record.secrets
      .filter((s) => live(s, now))
      .map((s) => ({
        secret: unsealText(masterKey, SEAL_PURPOSE, bound(record.workspaceId, record.kind), s.sealed),
        retiresAtMs: s.retiresAt === null ? null : Date.parse(s.retiresAt),
      }));
    // Shared by every delivery until the next write: frozen, so none can alter it.
    if (record.config) Object.freeze(record.config);
    return Object.freeze({ record: Object.freeze(record), secrets: Object.freeze(secrets) });
  };
  /** The kind's record, opened: from the cache when the counter says it is current. */
  const open = async (wid: string, kind: IntegrationKind): Promise<Opened | undefined> => {
    if (store.inWrite()) {
      const record = await repo.integration(wid, kind);
      return record && openRecord(record);
    }
    // The counter before the record: a write landing after this read leaves the entry tagged with
    // the older generation, so the next use refills it.
    const generation = await repo.generation();
    const key = JSON.stringify([wid, kind]);
    const hit = opened.get(generation, key);
    if (hit) return hit;
    const record = await repo.integration(wid, kind);
    if (!record) return undefined;
    const fresh = openRecord(record);
    opened.set(generation, key, fresh);
    return fresh;
  };

  /** The secrets a delivery may be signed with: the current one and, during a rotation, the one before. */
  const secretsFor = async (wid: string, kind: IntegrationKind): Promise<string[]> => {
    const found = await open(wid, kind);
    if (!found) return [];
    const now = clock.now();
    return found.secrets.filter((s) => s.retiresAtMs === null || s.retiresAtMs > now).map((s) => s.secret);
  };

  return {
    secretsFor,

    /** The kind's non-secret settings, or undefined when it is not set up. */
    async configOf<C extends Record<string, unknown> = Record<string, unknown>>(
      wid: string,
      kind: IntegrationKind,
    ): Promise<C | undefined> {
      return (await open(wid, kind))?.record.config as C | undefined;
    },

    /** Every workspace that has set a kind up (for routes whose address names no workspace). */
    async workspacesWith(kind: IntegrationKind): Promise<string[]> {
      return (await repo.allIntegrations()).filter(([, value]) => value.kind === kind).map(([wid]) => wid);
    },

    async configure(
      wid: string,
      kind: IntegrationKind,
      input: ConfigureInput,
      actor: string,
    ): Promise<ConfigureResult> {
      const generated = GENERATED.has(kind) ? ids.secret('whs') : undefined;
      const now = clock.now();
      return store.write(async () => {
        const existing = await repo.integration(wid, kind);
        // The identity provider's body is whole (its keys are one or the other); other kinds' settings merge.
        const config =
          kind === 'ssf' && input.config
            ? { ...input.config }
            : { ...(existing?.config ?? {}), ...(input.config ?? {}) };
        let fresh: string | undefined;
        if (GENERATED.has(kind)) {
          if (
            existing &&
            !input.rotate &&
            !input.revokePrevious &&
            input.config === undefined &&
            input.configSecrets === undefined
          ) {
            throw new AppError('invalid_request', {
              message: `The ${kind} integration is set up; its secret was shown once.`,
              fix: 'Send { "rotate": true } to make a new secret (the old one keeps working for 24 hours).',
            });
          }
          if (!existing || input.rotate) fresh = generated;
        } else if (GIVEN.has(kind)) {
          if (!input.signingSecret && !existing) {
            throw new AppError('invalid_request', {
              message: `The ${kind} integration needs the provider's signingSecret.`,
              fix: `Send { "signingSecret": "…" } as ${kind} shows it.`,
            });
          }
          const current = existing ? (await secretsFor(wid, kind))[0] : undefined;
          if (input.signingSecret && input.signingSecret !== current) fresh = input.signingSecret;
        }
        const retiresAt =
          existing && fresh !== undefined && existing.secrets.length > 0 ? isoAt(now + ROTATION_OVERLAP_MS) : null;
        const kept = (existing?.secrets ?? [])
          .filter((s) => live(s, now))
          .map((s) => (fresh !== undefined ? { ...s, retiresAt: s.retiresAt ?? retiresAt } : s));
        const all =
          fresh !== undefined
            ? [
                {
                  sealed: sealText(masterKey, SEAL_PURPOSE, bound(wid, kind), fresh),
                  createdAt: isoAt(now),
                  retiresAt: null,
                },
                ...kept,
              ]
            : kept;
        const secrets = input.revokePrevious ? all.filter((s) => s.retiresAt === null) : all;
        const revoked = all.length - secrets.length;
        // A secret setting is bound to where it is sent: moving that address drops it (github's
        // token must never follow an apiUrl someone else chose), unless a new one comes with it.
        const moved = (BOUND_TO[kind] ?? []).some(
          (name) => input.config?.[name] !== undefined && input.config[name] !== existing?.config?.[name],
        );
        const sealedConfig = moved ? {} : { ...(existing?.sealedConfig ?? {}) };
        for (const [name, value] of Object.entries(input.configSecrets ?? {})) {
          if (value === null) delete sealedConfig[name];
          else sealedConfig[name] = sealText(masterKey, SEAL_PURPOSE, `${bound(wid, kind)}/config/${name}`, value);
        }
        const record: IntegrationRecord = {
          kind,
          workspaceId: wid,
          secrets,
          config,
          ...(Object.keys(sealedConfig).length > 0 ? { sealedConfig } : {}),
          updatedAt: isoAt(now),
          updatedBy: actor,
        };
        await repo.putIntegration(record);
        await ledger.record({
          workspaceId: wid,
          actor,
          kind: existing
            ? fresh !== undefined
              ? 'integration.rotated'
              : 'integration.updated'
            : 'integration.configured',
          subject: kind,
          data: {
            previousRetiresAt: retiresAt,
            previousRevoked: revoked,
            settings: Object.keys(config).sort(),
            sealedSettings: Object.keys(sealedConfig).sort(),
          },
        });
        return {
          kind,
          ...(GENERATED.has(kind) && fresh !== undefined ? { secret: fresh } : {}),
          previousRetiresAt: retiresAt,
          config,
        };
      });
    },

    /** One secret setting of a kind (github's `token`), unsealed; undefined when not set. */
    async configSecret(wid: string, kind: IntegrationKind, name: string): Promise<string | undefined> {
      const sealed = (await repo.integration(wid, kind))?.sealedConfig?.[name];
      return sealed === undefined
        ? undefined
        : unsealText(masterKey, SEAL_PURPOSE, `${bound(wid, kind)}/config/${name}`, sealed);
    },

    /** Whether a secret setting is set (without unsealing it). */
    async hasConfigSecret(wid: string, kind: IntegrationKind, name: string): Promise<boolean> {
      return (await repo.integration(wid, kind))?.sealedConfig?.[name] !== undefined;
    },

    /** Inbound requests of a kind refused for a workspace, counted by every instance (http/inbound.ts). */
    refusals(wid: string, kind: IntegrationKind): Promise<number> {
      return repo.refusals(wid, kind);
    },

    /** Counts one refused inbound request of a kind for a workspace: its own write (or the caller's). */
    countRefusal(wid: string, kind: IntegrationKind): Promise<void> {
      return store.write(() => repo.addRefusal(wid, kind));
    },

    async view(wid: string) {
      return (await repo.integrations(wid)).map((r) => ({
        kind: r.kind,
        updatedAt: r.updatedAt,
        config: r.config ?? {},
        // Names only: a secret setting is never shown.
        sealedSettings: Object.keys(r.sealedConfig ?? {}).sort(),
        secrets: r.secrets.map((s) => ({ createdAt: s.createdAt, retiresAt: s.retiresAt })),
      }));
    },
  };
}

export type IntegrationRegistry = ReturnType<typeof createIntegrationRegistry>;
