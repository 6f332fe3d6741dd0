import Joi from 'joi';
import { billing, oauth, plan } from './accounts.js';
import { envVariables, group, int, number, oneOf, record, string, type EnvVariable, type ValueOf } from './define.js';
import { gateway } from './gateway.js';
import { mcp } from './mcp.js';
import { ledger, log, observability, retention, webhooks } from './operations.js';
import { limits, load, lockout, rateLimits, server, session } from './server.js';

/**
 * Every setting, declared once: its type, validation, default, environment variable and docs row
 * (define.ts). The groups are declared by subject (server.ts, operations.ts, accounts.ts, mcp.ts,
 * gateway.ts) and put together here, in the order of the docs table. Loaded once (load.ts),
 * validated, frozen and passed in; nothing else reads process.env. docs/configuration.md's table
 * is rendered from these declarations (docs.ts).
 */

export {
  AWS_ENV,
  MAX_CACHE_TTL_SECONDS,
  MAX_PER_MINUTE,
  PROVIDER_KINDS,
  rateLimitsSchema,
  type AwsCredentials,
  type ClassifierRule,
  type DataLossMode,
  type Enforcement,
  type GatewayDeployment,
  type GatewayModel,
  type GatewayProvider,
  type GatewaySettings,
  type PolicyProfile,
  type ProviderKind,
  type RateLimits,
  type ScopeLimits,
} from './gateway.js';
export type { LocalServerSettings } from './mcp.js';

/** The declarations, by key, in the order the docs list them. */
export const declarations = {
  env: oneOf(['development', 'production'], {
    default: 'development',
    env: 'NODE_ENV',
    doc: '`production`: `__Host-sid` cookie with `Secure`, https `baseUrl` required, generic 500 messages',
  }),
  dataDir: string({
    min: 1,
    default: './data',
    env: 'SVC_DATA_DIR',
    flag: '--data-dir',
    doc: 'where `svc.mdb` (the LMDB store) and `master.key` live',
  }),
  /**
   * The store (docs/operations.md#store-backends): null or 'lmdb:' is the LMDB file under dataDir;
   * postgres://… is PostgreSQL.
   */
  storeUrl: string({
    joi: (s) =>
      s
        .trim()
        .pattern(/^(lmdb:|postgres(ql)?:\/\/.+)$/i, 'lmdb: or postgres://user:password@host:port/database')
        // Never echoes the value: a store URL may hold a password.
        .messages({
          'string.pattern.name':
            '{{#label}} must be lmdb: or postgres://user:password@host:port/database (the value given is not shown: it may hold a password)',
        }),
    nullable: true,
    default: null,
    env: 'SVC_STORE_URL',
    flag: '--store',
    shown: 'none (LMDB)',
    doc: 'the store: `lmdb:` (the file under `dataDir`) or `postgres://user:password@host:port/database` (or `postgresql://`), for several instances on one database; see [Past one machine](operations.md#past-one-machine). Never echoed in errors or logs',
  }),
  baseUrl: string({
    joi: (s) => s.uri({ scheme: ['http', 'https'] }).pattern(/[^/]$/, 'no trailing slash'),
    nullable: true,
    default: null,
    env: 'SVC_BASE_URL',
    shown: 'the bound address (`http://host:port`)',
    doc: 'public address of this deployment, without a trailing slash: docs links, Origin checks, receipts',
  }),
  masterKey: string({
    joi: (s) => s.base64({ paddingRequired: false, urlSafe: true }),
    nullable: true,
    default: null,
    env: 'SVC_MASTER_KEY',
    shown: '`master.key` file, created 0600 with a new store',
    doc: 'base64url of 32 random bytes; seals secrets at rest. The store keeps a check value of it (never the key): another key is refused, exit 3',
  }),
  masterKeyFile: string({
    min: 1,
    nullable: true,
    default: null,
    env: 'SVC_MASTER_KEY_FILE',
    doc: "a file holding the master key (a mounted secret, or a backup's `master.key`); read, never written. Not together with `SVC_MASTER_KEY`",
  }),
  server,
  limits,
  load,
  rateLimits,
  lockout,
  receipts: group({
    ttlDays: int({
      min: 1,
      max: 3650,
      default: 90,
      env: 'SVC_RECEIPT_TTL_DAYS',
      doc: "a receipt's `exp` after its `iat`",
    }),
  }),
  approvals: group({
    ttlHours: number({
      min: 0.0001,
      max: 720,
      default: 24,
      env: 'SVC_APPROVAL_TTL_HOURS',
      doc: 'a waiting approval expires this long after the action asked (its action is then denied)',
    }),
  }),
  gate: group({
    assetCurrencies: record(
      Joi.string().pattern(/^[A-Z][A-Z0-9]{1,15}$/),
      string({ joi: (s) => s.pattern(/^[A-Z]{3}$/) }),
      {
        default: { USDC: 'USD', EURC: 'EUR' },
        doc: 'the currency a token of a 402 payment challenge counts in, by its symbol (6 decimals): [402 payment challenges](payment-challenges.md)',
        shown: '`{ USDC: "USD", EURC: "EUR" }`',
      },
    ),
  }),
  killSwitch: group({
    bulkFreezeCeiling: int({
      min: 1,
      default: 25,
      env: 'SVC_BULK_FREEZE_CEILING',
      doc: 'a token freezing more agents than this at once waits for a person (`202`)',
    }),
  }),
  webhooks,
  ledger,
  retention,
  mcp,
  oauth,
  plan,
  billing,
  session,
  log,
  observability,
  gateway,
};

export type Settings = { [K in keyof typeof declarations]: ValueOf<(typeof declarations)[K]> };

/** The one schema a configuration is validated with (unknown keys refused, every problem listed). */
export const settingsSchema = Joi.object<Settings>(
  Object.fromEntries(Object.entries(declarations).map(([key, setting]) => [key, setting.schema])),
).options({ abortEarly: false, convert: true });

/** Environment variables and the setting each one sets (flags win over these, these over files). */
export const environment: readonly EnvVariable[] = envVariables(declarations);
