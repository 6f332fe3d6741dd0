import { formatMoney, moneyOrNull } from '../lib/money.js';
import type { ReceiptVerdict } from '../receipts/verdict.js';
import type { VerifyReason } from '../receipts/verify.js';

/** The human form of a receipt's verdict (`svc receipt verify`): validity, the reason, what it says. */
const EXPLAIN: Record<VerifyReason, string> = {
  malformed: 'this is not a well-formed receipt (a compact signed token with the receipt claims)',
  bad_signature:
    "the signature does not match: the receipt was altered, or not signed by the key it names with its algorithm (EdDSA for svc's receipts, ES256 for AP2 and ACP)",
  unknown_key:
    'the key set holds no receipt key with the id the receipt names (wrong deployment, or an out-of-date key set)',
  expired: 'the receipt was genuine, and its expiry time has passed',
  revoked: 'the receipt was signed by a key that has since been revoked',
};

const SHAPES: Record<string, string> = {
  svc: "svc's receipt (EdDSA)",
  'ap2.payment_receipt': 'AP2 Payment Receipt (ES256, AP2 v0.2)',
  'acp.allowance': 'ACP allowance (ES256, ACP 2026-04-17)',
};

export function describeVerdict(verdict: ReceiptVerdict): string[] {
  const lines: string[] = [];
  const shape = verdict.shape && verdict.shape !== 'svc' ? ` (${SHAPES[verdict.shape] ?? verdict.shape})` : '';
  if (verdict.valid) {
    lines.push(`VALID receipt${shape}${verdict.kid ? `, signed by key ${verdict.kid}` : ''}`);
  } else {
    const reason = verdict.reason ?? 'unknown';
    lines.push(`INVALID receipt${shape}: ${reason}`);
    const why = EXPLAIN[reason as VerifyReason];
    if (why) lines.push(`  ${why}`);
    if (verdict.problem) lines.push(`  ${verdict.problem}`);
    if (verdict.kid) lines.push(`  key named: ${verdict.kid}`);
  }
  if (verdict.replayed)
    lines.push('  already checked online before: this is a repeat presentation of the same receipt');
  for (const [label, value] of claimRows(verdict.claims)) lines.push(`  ${label.padEnd(21)} ${value}`);
  return lines;
}

/** What a valid receipt says, by its shape. */
function claimRows(c: ReceiptVerdict['claims']): Array<[string, string]> {
  if (!c) return [];
  if ('allowance' in c) {
    const a = c.allowance;
    return [
      ['agent', c.sub],
      ['action', c.jti],
      ['at most', money(a.max_amount, a.currency.toUpperCase())],
      ['checkout session', a.checkout_session_id],
      ['merchant id', a.merchant_id],
      ['allowance expires', a.expires_at],
      ['issued', `${isoSeconds(c.iat)} by ${c.iss}`],
    ];
  }
  if ('status' in c) {
    const p = c.payment;
    return [
      ['status', c.status === 'Success' ? 'Success (allowed)' : `Error (rejected: ${c.error ?? ''})`],
      ...(c.status === 'Error' ? ([['why', c.error_description ?? '']] as Array<[string, string]>) : []),
      ['agent', c.sub],
      ['payment id', c.payment_id],
      ['amount', money(p.payment_amount.amount, p.payment_amount.currency)],
      ['payee', p.payee.id],
      ['reference', c.reference],
      ['issued', `${isoSeconds(c.iat)} by ${c.iss}`],
      ['expires', isoSeconds(c.exp)],
    ];
  }
  return [
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
