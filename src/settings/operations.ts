import { createHash } from 'node:crypto';
import { bool, group, int, list, object, oneOf, string } from './define.js';

/**
 * Work the server does in the background, and what it tells of itself: outbound webhooks, the
 * ledger's checkpoints, retention, logs, metrics and traces.
 */

export const webhooks = group({
  allowPrivateTargets: bool({
    default: false,
    env: 'SVC_WEBHOOKS_ALLOW_PRIVATE_TARGETS',
    doc: 'outbound webhooks may go to loopback and private addresses (link-local never)',
  }),
  timeoutMs: int({
    min: 100,
    max: 60000,
    default: 10000,
    env: 'SVC_WEBHOOKS_TIMEOUT_MS',
    doc: 'a delivery that has not answered by then failed',
  }),
  backoffBaseMs: int({
    min: 10,
    default: 30000,
    env: 'SVC_WEBHOOKS_BACKOFF_BASE_MS',
    doc: "the first retry's wait; it doubles each time (±20% jitter), up to `backoffMaxMs`",
  }),
  backoffMaxMs: int({
    min: 10,
    default: 6 * 3_600_000,
    env: 'SVC_WEBHOOKS_BACKOFF_MAX_MS',
    doc: 'the longest wait between two tries',
  }),
  giveUpAfterMs: int({
    min: 10,
    default: 26 * 3_600_000,
    env: 'SVC_WEBHOOKS_GIVE_UP_AFTER_MS',
    doc: 'a delivery still failing this long after its event is given up, and its endpoint disabled',
  }),
  dispatchIntervalMs: int({
    min: 10,
    max: 60000,
    default: 1000,
    env: 'SVC_WEBHOOKS_DISPATCH_INTERVAL_MS',
    doc: 'how often the outbox is read for deliveries due',
  }),
});

export const ledger = group({
  checkpointIntervalMs: int({
    min: 100,
    max: 60000,
    default: 1000,
    env: 'SVC_LEDGER_CHECKPOINT_INTERVAL_MS',
    doc: 'the approvals due expire and the ledger integrator runs at least this often (the shorter of this and `ledger.integrateEveryMs`)',
  }),
  integrateEveryMs: int({
    min: 10,
    max: 60000,
    default: 1000,
    env: 'SVC_LEDGER_INTEGRATE_EVERY_MS',
    doc: "the integrator (the process holding the ledger lease) gives waiting ledger records their index and signs a checkpoint this often while records wait; a record's index and inclusion proof come at most this long after its decision, plus the lease's expiry (three times this, at least 2 s) when the integrator dies ([the ledger](gate.md#ledger))",
  }),
  public: bool({
    default: false,
    env: 'SVC_LEDGER_PUBLIC',
    doc: "anyone may read each workspace ledger's checkpoint, tiles and entry bundles under `/v1/ledger/{workspaceId}/` ([outside verification](gate.md#outside-verification)); otherwise a token or session with evidence:read",
  }),
  witnesses: list(
    object({
      url: string({
        required: true,
        joi: (s) => s.uri({ scheme: ['http', 'https'] }).max(2000),
        doc: "the witness's submission prefix: svc posts to `<url>/add-checkpoint`",
      }),
      publicKey: string({
        required: true,
        joi: (s) =>
          s
            .custom((value: string) => {
              if (!isCosignerKey(value)) throw new Error('not a cosigner key');
              return value;
            })
            .messages({
              'any.custom':
                '{{#label}} must be a witness cosignature key <name>+<key id>+<base64 of 0x04 and the Ed25519 key>, its key id matching',
            }),
        doc: "the witness's cosignature verifier key (`<name>+<key id>+<base64 key>`, C2SP tlog-cosignature Ed25519)",
      }),
    }),
    {
      default: [],
      max: 32,
      // One witness per name: its cosignatures are stored and counted by it.
      joi: (s) =>
        s.unique((a: { publicKey: string }, b: { publicKey: string }) => nameOf(a.publicKey) === nameOf(b.publicKey)),
      doc: 'witnesses svc sends each new signed checkpoint to, with its consistency proof (C2SP tlog-witness `add-checkpoint`), and whose cosignatures it stores and serves with the checkpoint ([witnesses](gate.md#witnesses))',
    },
  ),
});

const nameOf = (key: string) => key.slice(0, key.indexOf('+'));

/**
 * A C2SP tlog-cosignature Ed25519 verifier key: `<name>+<8 hex key id>+<base64(0x04 || key)>`,
 * its key id the first 4 bytes of SHA-256(name || 0x0A || 0x04 || key).
 */
function isCosignerKey(text: string): boolean {
  const m = /^([^\s+\p{Cc}]+)\+([0-9a-f]{8})\+([A-Za-z0-9+/]{44})$/iu.exec(text);
  if (!m) return false;
  const raw = Buffer.from(m[3]!, 'base64');
  if (raw.length !== 33 || raw[0] !== 0x04 || raw.toString('base64') !== m[3]) return false;
  const id = createHash('sha256')
    .update(Buffer.concat([Buffer.from(`${m[1]}\n`, 'utf8'), raw]))
    .digest()
    .subarray(0, 4);
  return id.toString('hex') === m[2]!.toLowerCase();
}

export const retention = group({
  days: int({
    min: 7,
    max: 36500,
    default: 90,
    env: 'SVC_RETENTION_DAYS',
    doc: 'operational records (gateway call records and tasks, webhook delivery logs, answers kept for inbound events) are swept this many days after they were made; at least 7 (providers retry for days); the ledger is never swept ([the store](operations.md#the-store))',
  }),
  sweepIntervalMs: int({
    min: 1000,
    max: 86_400_000,
    default: 300_000,
    env: 'SVC_RETENTION_SWEEP_INTERVAL_MS',
    doc: 'how often the background sweeper runs over every table with a window or a retention',
  }),
  sweepBatch: int({
    min: 1,
    max: 10_000,
    default: 500,
    doc: 'entries the sweeper reads per page and removes per write (a write never holds the lock long)',
  }),
  sweepMaxPerRun: int({
    min: 1,
    max: 10_000_000,
    default: 100_000,
    doc: 'entries of one table the sweeper reads in one run; a larger table is walked over several runs',
  }),
});

export const log = group({
  level: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
    default: 'info',
    env: 'SVC_LOG_LEVEL',
    doc: 'pino level; logs go to stderr',
  }),
  format: oneOf(['auto', 'json', 'pretty'], {
    default: 'auto',
    env: 'SVC_LOG_FORMAT',
    doc: '`auto`: readable lines (`2026-11-24 05:12:09.120 INFO: listening {"address":…}`) when `svc serve` runs on a terminal, JSON lines with ISO 8601 UTC times (`"time":"2026-11-24T05:12:09.120Z"`) everywhere else (a pipe, a file, systemd, Docker); `json` or `pretty` force one',
  }),
});

/** GET /metrics and OpenTelemetry traces (observability/): both off unless configured. */
export const observability = group({
  metricsToken: string({
    min: 16,
    max: 256,
    joi: (s) =>
      s
        .pattern(/^[\x21-\x7e]+$/)
        .messages({ 'string.pattern.base': '{{#label}} must be printable ASCII without spaces' }),
    nullable: true,
    default: null,
    env: 'SVC_METRICS_TOKEN',
    doc: 'the bearer token GET /metrics requires (16 to 256 printable characters); unset (and no `metricsPort`), the route does not exist',
  }),
  metricsPort: int({
    min: 0,
    max: 65535,
    nullable: true,
    default: null,
    env: 'SVC_METRICS_PORT',
    flag: '--metrics-port',
    doc: 'GET /metrics without a token on a separate listener bound to 127.0.0.1 at this port',
  }),
  otlpEndpoint: string({
    joi: (s) => s.uri({ scheme: ['http', 'https'] }),
    nullable: true,
    default: null,
    env: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    doc: 'OTLP/HTTP base address: traces are sent to `<it>/v1/traces`; unset (and no `otlpTracesEndpoint`), no trace is kept or sent',
  }),
  otlpTracesEndpoint: string({
    joi: (s) => s.uri({ scheme: ['http', 'https'] }),
    nullable: true,
    default: null,
    env: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    doc: 'OTLP/HTTP traces address used as it is (over `otlpEndpoint`)',
  }),
  serviceName: string({
    min: 1,
    max: 128,
    default: 'svc',
    env: 'OTEL_SERVICE_NAME',
    doc: '`service.name` of the traces',
  }),
});
