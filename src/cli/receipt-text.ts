import { formatMoney, moneyOrNull } from '../lib/money.js';
import type { ReceiptVerdict } from '../receipts/verdict.js';
import type { VerifyReason } from '../receipts/verify.js';

/** The human form of a receipt's verdict (`svc receipt verify`): validity, the reason, what it says. */
const EXPLAIN: Record<VerifyReason, string> = {
  malformed: 'this is not a well-formed receipt (a compact signed token with the receipt claims)',
  bad_signature: 'the signature does not match: the receipt was altered, or not signed with EdDSA by the key it names',
  unknown_key:
    'the key set holds no receipt key with the id the receipt names (wrong deployment, or an out-of-date key set)',
  expired: 'the receipt was genuine, and its expiry time has passed',
  revoked: 'the receipt was signed by a key that has since been revoked',
};

export function describeVerdict(verdict: ReceiptVerdict): string[] {
  const lines: string[] = [];
  if (verdict.valid) {
    lines.push(`VALID receipt${verdict.kid ? `, signed by key ${verdict.kid}` : ''}`);
  } else {
    const reason = verdict.reason ?? 'unknown';
    lines.push(`INVALID receipt: ${reason}`);
    const why = EXPLAIN[reason as VerifyReason];
    if (why) lines.push(`  ${why}`);
    if (verdict.kid) lines.push(`  key named: ${verdict.kid}`);
  }
  if (verdict.replayed)
    lines.push('  already checked online before: this is a repeat presentation of the same receipt');
  const c = verdict.claims;
  if (c) {
    const rows: Array<[string, string]> = [
      ['agent', c.sub],
      ['action', c.act],
      ['type', c.typ],
      ['amount', money(c.amt, c.cur)],
      ['merchant', c.mer],
      ['approved by a person', c.hum ? 'yes' : 'no'],
      ['issued', `${isoSeconds(c.iat)} by ${c.iss}`],
      ['expires', isoSeconds(c.exp)],
      ['receipt id', c.jti],
    ];
    for (const [label, value] of rows) lines.push(`  ${label.padEnd(21)} ${value}`);
  }
  return lines;
}

/** 1250 EUR -> "EUR 12.50 (1250 minor units)": as people read it, then the signed figure. */
function money(amount: number, currency: string): string {
  const shown = moneyOrNull(amount, currency);
  return shown === null ? formatMoney(amount, currency) : `${shown} (${amount} minor units)`;
}

function isoSeconds(seconds: number): string {
  const date = new Date(seconds * 1000);
  return Number.isNaN(date.getTime()) ? String(seconds) : date.toISOString().replace('.000Z', 'Z');
}
