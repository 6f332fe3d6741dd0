import type { Ledger } from '../ledger/service.js';
import type { Clock } from '../lib/clock.js';
import { GenerationCache } from '../lib/generation-cache.js';
import type { IdSource } from '../lib/ids.js';
import type { Store } from '../store/index.js';
import { configureIntegration, type ConfigureInput, type ConfigureResult } from './configure.js';
import type { IntegrationKind } from './kinds.js';
import type { IntegrationRecord } from './records.js';
import { integrationsRepo } from './repo.js';
import { isLive, unsealSecret, unsealSetting } from './secrets.js';

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
export { ROTATION_OVERLAP_MS } from './secrets.js';
export { INTEGRATION_KINDS } from './kinds.js';
export type { ConfigureInput, ConfigureResult } from './configure.js';

/** How many workspace and kind pairs one process keeps opened (least recently used go first). */
const OPENED_CACHED = 10_000;

/** A record with the signing secrets that were live when it was opened, unsealed. */
interface Opened {
  record: IntegrationRecord;
  secrets: ReadonlyArray<{ secret: string; retiresAtMs: number | null }>;
}

/** A kind as the settings page shows it: never a secret, only secrets' dates and secret settings' names. */
export interface IntegrationView {
  kind: IntegrationKind;
  updatedAt: string;
  config: Record<string, unknown>;
  sealedSettings: string[];
  secrets: Array<{ createdAt: string; retiresAt: string | null }>;
}

/**
 * Each workspace's integration settings and secrets (the rules above). Reads and writes the
 * `integrations` table (and its generation counter) and the inbound refusal counts; configuring
 * writes a ledger record in the same write.
 */
export interface IntegrationRegistry {
  /** The secrets a delivery of the kind may be signed with: the current one and, during a rotation, the one before. */
  secretsFor(wid: string, kind: IntegrationKind): Promise<string[]>;
  /** The kind's non-secret settings, or undefined when it is not set up. */
  configOf<C extends Record<string, unknown> = Record<string, unknown>>(
    wid: string,
    kind: IntegrationKind,
  ): Promise<C | undefined>;
  /** Every workspace that has set a kind up (for routes whose address names no workspace). */
  workspacesWith(kind: IntegrationKind): Promise<string[]>;
  /** Sets a kind up, rotates or revokes its secrets, or changes its settings (configure.ts), recorded in the ledger. */
  configure(wid: string, kind: IntegrationKind, input: ConfigureInput, actor: string): Promise<ConfigureResult>;
  /** One secret setting of a kind (github's `token`), unsealed; undefined when not set. */
  configSecret(wid: string, kind: IntegrationKind, name: string): Promise<string | undefined>;
  /** Whether a secret setting is set (without unsealing it). */
  hasConfigSecret(wid: string, kind: IntegrationKind, name: string): Promise<boolean>;
  /** Inbound requests of a kind refused for a workspace, counted by every instance (http/inbound.ts). */
  refusals(wid: string, kind: IntegrationKind): Promise<number>;
  /** Counts one refused inbound request of a kind for a workspace: its own write (or the caller's). */
  countRefusal(wid: string, kind: IntegrationKind): Promise<void>;
  /** Every kind the workspace has set up, as its settings page shows it. */
  view(wid: string): Promise<IntegrationView[]>;
}

export interface IntegrationRegistryDeps {
  store: Store;
  clock: Clock;
  ids: IdSource;
  masterKey: Buffer;
  ledger: Ledger;
}

export function createIntegrationRegistry(deps: IntegrationRegistryDeps): IntegrationRegistry {
  const { store, clock, masterKey } = deps;
  const repo = integrationsRepo(store);

  // [wid, kind] -> the record and its live secrets unsealed, under one `integrations` generation (rules above).
  const opened = new GenerationCache<string, Opened>(OPENED_CACHED);
  const openRecord = (record: IntegrationRecord): Opened => {
    const now = clock.now();
    const secrets = record.secrets
      .filter((s) => isLive(s, now))
      .map((s) => ({
        secret: unsealSecret(masterKey, record.workspaceId, record.kind, s.sealed),
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

  const secretsFor = async (wid: string, kind: IntegrationKind): Promise<string[]> => {
    const found = await open(wid, kind);
    if (!found) return [];
    const now = clock.now();
    return found.secrets.filter((s) => s.retiresAtMs === null || s.retiresAtMs > now).map((s) => s.secret);
  };

  return {
    secretsFor,

    async configOf<C extends Record<string, unknown> = Record<string, unknown>>(
      wid: string,
      kind: IntegrationKind,
    ): Promise<C | undefined> {
      return (await open(wid, kind))?.record.config as C | undefined;
    },

    async workspacesWith(kind) {
      return (await repo.allIntegrations()).filter(([, value]) => value.kind === kind).map(([wid]) => wid);
    },

    configure: (wid, kind, input, actor) =>
      configureIntegration({ ...deps, repo, secretsFor }, wid, kind, input, actor),

    async configSecret(wid, kind, name) {
      const sealed = (await repo.integration(wid, kind))?.sealedConfig?.[name];
      return sealed === undefined ? undefined : unsealSetting(masterKey, wid, kind, name, sealed);
    },

    async hasConfigSecret(wid, kind, name) {
      return (await repo.integration(wid, kind))?.sealedConfig?.[name] !== undefined;
    },

    refusals: (wid, kind) => repo.refusals(wid, kind),

    countRefusal: (wid, kind) => store.write(() => repo.addRefusal(wid, kind)),

    async view(wid) {
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
