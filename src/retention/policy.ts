import { AP2_USAGE } from '../mandates/usage.js';
import { BUTTON_GRACE_MS } from '../chat/service.js';
import { DRILL_COOLDOWN_MS } from '../drills/service.js';
import { sweepJob, type SweepJob } from './sweeper.js';

/**
 * What the store keeps, and for how long: every table with a window is one job of the sweeper
 * (docs/operations.md, Retention, has the same table, for operators). Two kinds:
 * - Windows: a record that only means something for a while (an idempotency key, a code, a
 *   used identifier, a session) is swept once that while is over, plus a margin where a late
 *   use must still get the answer it would have got (WINDOW_MARGIN_MS; a spent code, a chat
 *   button). Until it is swept, every reader already treats a record past its window as absent.
 * - Retention: operational records (gateway call records and tasks, webhook delivery logs,
 *   answers kept for inbound events' redeliveries) are kept `retentionDays` after they were
 *   made, then swept. A pending webhook delivery is never swept.
 * Never swept: the ledger, its checkpoints and signing keys; actions, approvals, charges,
 * mandates and everything people configure; the records a receipt's replay check reads.
 */

const DAY_MS = 86_400_000;
/** Past a window's end: room for clocks that differ between instances, and for a retry in flight. */
export const WINDOW_MARGIN_MS = 5 * 60_000;
/**
 * A spent or expired authorization code is kept a day past its expiry, so that a replay in that
 * time still ends the connection it made (RFC 6749 4.1.2) rather than being merely unknown.
 */
export const SPENT_CODE_KEPT_MS = DAY_MS;
/** Period usage is kept past the longest period a mandate rule counts over (a month). */
export const PERIOD_USAGE_KEPT_MS = 62 * DAY_MS;

const past = (iso: string | null | undefined, margin: number, now: number): boolean =>
  typeof iso === 'string' && Date.parse(iso) + margin <= now;

export function retentionJobs(options: { retentionDays: number }): SweepJob[] {
  const retention = options.retentionDays * DAY_MS;
  return [
    // Windows.
    sweepJob({ table: 'idempotency', expired: (e, now) => past(e.value.expiresAt, WINDOW_MARGIN_MS, now) }),
    sweepJob({ table: 'oauthCodes', expired: (e, now) => past(e.value.expiresAt, SPENT_CODE_KEPT_MS, now) }),
    // Access tokens after their hour, refresh tokens (used or not) after their 30 days.
    sweepJob({ table: 'oauthTokens', expired: (e, now) => past(e.value.expiresAt, WINDOW_MARGIN_MS, now) }),
    sweepJob({ table: 'oauthConsentsUsed', expired: (e, now) => past(e.value, WINDOW_MARGIN_MS, now) }),
    // svc login: device codes a day past their expiry (a late poll is still told it was spent or
    // expired), their user codes once they expire, a person's tokens once they expire.
    sweepJob({ table: 'deviceCodes', expired: (e, now) => past(e.value.expiresAt, SPENT_CODE_KEPT_MS, now) }),
    sweepJob({ table: 'deviceUserCodes', expired: (e, now) => past(e.value.expiresAt, WINDOW_MARGIN_MS, now) }),
    sweepJob({ table: 'personTokens', expired: (e, now) => past(e.value.expiresAt, WINDOW_MARGIN_MS, now) }),
    // Upstream OAuth connections started and never finished (their callback refuses them once expired).
    sweepJob({ table: 'mcpOAuthPending', expired: (e, now) => past(e.value.expiresAt, WINDOW_MARGIN_MS, now) }),
    sweepJob({ table: 'hookOnce', expired: (e, now) => e.value + WINDOW_MARGIN_MS <= now }),
    sweepJob({ table: 'ap2Nonces', expired: (e, now) => e.value + WINDOW_MARGIN_MS <= now }),
    sweepJob({ table: 'chatButtons', expired: (e, now) => past(e.value.expiresAt, BUTTON_GRACE_MS, now) }),
    sweepJob({
      table: 'sessions',
      expired: (e, now) => past(e.value.expiresAt, 0, now),
      alongside: (e, remove) => remove('sessionsByUser', [e.value.userId, e.key[0]!]),
    }),
    sweepJob({ table: 'drills', expired: (e, now) => past(e.value, DRILL_COOLDOWN_MS, now) }),
    sweepJob({
      table: 'periodUsage',
      // An imported AP2 credential's budget and use counts last its whole life: never swept.
      expired: (e, now) =>
        !String(e.key[2]).startsWith(AP2_USAGE) && past(`${String(e.key[4])}T00:00:00.000Z`, PERIOD_USAGE_KEPT_MS, now),
    }),
    // Retention.
    sweepJob({ table: 'calls', expired: (e, now) => past(e.value.at, retention, now) }),
    sweepJob({ table: 'tasks', expired: (e, now) => past(e.value, retention, now) }),
    sweepJob({
      table: 'deliveries',
      expired: (e, now) => e.value.status !== 'pending' && past(e.value.createdAt, retention, now),
    }),
    sweepJob({ table: 'hookEvents', expired: (e, now) => past(e.value.at, retention, now) }),
  ];
}
