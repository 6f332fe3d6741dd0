import { AppError } from '../errors/app-error.js';
import type { Ledger } from '../ledger/service.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import { GENERATED_KINDS, GIVEN_KINDS, type IntegrationKind } from './kinds.js';
import type { IntegrationRecord } from './records.js';
import type { IntegrationsRepo } from './repo.js';
import { isLive, ROTATION_OVERLAP_MS, sealSecret, sealSetting } from './secrets.js';
import type { Store } from '../store/index.js';

/**
 * Setting an integration kind up, or changing it (registry.ts lists the rules), as an ordered list
 * of named steps inside one store write: the merged settings, the new secret if any, the secrets
 * kept (and the overlap of the ones retiring), the sealed settings, then the record and its
 * ledger record.
 */

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

export interface ConfigureDeps {
  store: Store;
  clock: Clock;
  ids: IdSource;
  masterKey: Buffer;
  ledger: Ledger;
  repo: IntegrationsRepo;
  /** The secrets that verify now (the current one first). */
  secretsFor(wid: string, kind: IntegrationKind): Promise<string[]>;
}

const GENERATED: ReadonlySet<IntegrationKind> = new Set(GENERATED_KINDS);
const GIVEN: ReadonlySet<IntegrationKind> = new Set(GIVEN_KINDS);
/** The plain settings a kind's secret settings are bound to. */
const BOUND_TO: Partial<Record<IntegrationKind, readonly string[]>> = { github: ['apiUrl'] };

/** The kind's plain settings after this change: the identity provider's body is whole (its keys are one or the other); others merge. */
function mergedConfig(kind: IntegrationKind, input: ConfigureInput, existing: IntegrationRecord | undefined) {
  return kind === 'ssf' && input.config
    ? { ...input.config }
    : { ...(existing?.config ?? {}), ...(input.config ?? {}) };
}

/** The secret this change brings in (generated, or the provider's new one), or undefined; refuses what cannot be done. */
async function freshSecret(
  deps: ConfigureDeps,
  wid: string,
  kind: IntegrationKind,
  input: ConfigureInput,
  existing: IntegrationRecord | undefined,
  generated: string | undefined,
): Promise<string | undefined> {
  if (GENERATED.has(kind)) {
    const settingsOnly = input.config !== undefined || input.configSecrets !== undefined;
    if (existing && !input.rotate && !input.revokePrevious && !settingsOnly) {
      throw new AppError('invalid_request', {
        message: `The ${kind} integration is set up; its secret was shown once.`,
        fix: 'Send { "rotate": true } to make a new secret (the old one keeps working for 24 hours).',
      });
    }
    return !existing || input.rotate ? generated : undefined;
  }
  if (!GIVEN.has(kind)) return undefined;
  if (!input.signingSecret && !existing) {
    throw new AppError('invalid_request', {
      message: `The ${kind} integration needs the provider's signingSecret.`,
      fix: `Send { "signingSecret": "…" } as ${kind} shows it.`,
    });
  }
  const current = existing ? (await deps.secretsFor(wid, kind))[0] : undefined;
  return input.signingSecret && input.signingSecret !== current ? input.signingSecret : undefined;
}

/** The stored secrets after this change: the fresh one first, the live others retiring after the overlap (or at once with `revokePrevious`). */
function nextSecrets(
  deps: ConfigureDeps,
  wid: string,
  kind: IntegrationKind,
  input: ConfigureInput,
  existing: IntegrationRecord | undefined,
  fresh: string | undefined,
  now: number,
) {
  const retiresAt =
    existing && fresh !== undefined && existing.secrets.length > 0 ? isoAt(now + ROTATION_OVERLAP_MS) : null;
  const kept = (existing?.secrets ?? [])
    .filter((s) => isLive(s, now))
    .map((s) => (fresh !== undefined ? { ...s, retiresAt: s.retiresAt ?? retiresAt } : s));
  const all =
    fresh !== undefined
      ? [{ sealed: sealSecret(deps.masterKey, wid, kind, fresh), createdAt: isoAt(now), retiresAt: null }, ...kept]
      : kept;
  const secrets = input.revokePrevious ? all.filter((s) => s.retiresAt === null) : all;
  return { secrets, retiresAt, revoked: all.length - secrets.length };
}

/**
 * The sealed settings after this change. A secret setting is bound to where it is sent: moving
 * that address drops it (github's token must never follow an apiUrl someone else chose), unless a
 * new one comes with it.
 */
function nextSealedConfig(
  masterKey: Buffer,
  wid: string,
  kind: IntegrationKind,
  input: ConfigureInput,
  existing: IntegrationRecord | undefined,
): Record<string, string> {
  const moved = (BOUND_TO[kind] ?? []).some(
    (name) => input.config?.[name] !== undefined && input.config[name] !== existing?.config?.[name],
  );
  const sealedConfig = moved ? {} : { ...(existing?.sealedConfig ?? {}) };
  for (const [name, value] of Object.entries(input.configSecrets ?? {})) {
    if (value === null) delete sealedConfig[name];
    else sealedConfig[name] = sealSetting(masterKey, wid, kind, name, value);
  }
  return sealedConfig;
}

/** Sets a kind up or changes it, in one write with its ledger record (never the secret). */
export async function configureIntegration(
  deps: ConfigureDeps,
  wid: string,
  kind: IntegrationKind,
  input: ConfigureInput,
  actor: string,
): Promise<ConfigureResult> {
  const { store, clock, ids, masterKey, ledger, repo } = deps;
  const generated = GENERATED.has(kind) ? ids.secret('whs') : undefined;
  const now = clock.now();
  return store.write(async () => {
    const existing = await repo.integration(wid, kind);
    const config = mergedConfig(kind, input, existing);
    const fresh = await freshSecret(deps, wid, kind, input, existing, generated);
    const { secrets, retiresAt, revoked } = nextSecrets(deps, wid, kind, input, existing, fresh, now);
    const sealedConfig = nextSealedConfig(masterKey, wid, kind, input, existing);
    await repo.putIntegration({
      kind,
      workspaceId: wid,
      secrets,
      config,
      ...(Object.keys(sealedConfig).length > 0 ? { sealedConfig } : {}),
      updatedAt: isoAt(now),
      updatedBy: actor,
    });
    await ledger.record({
      workspaceId: wid,
      actor,
      kind: existing ? (fresh !== undefined ? 'integration.rotated' : 'integration.updated') : 'integration.configured',
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
}
