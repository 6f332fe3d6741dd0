import { readFile } from 'node:fs/promises';
import { text } from 'node:stream/consumers';
import { Args, Flags } from '@oclif/core';
import { request } from 'undici';
import { CliFailure, EXIT, SvcCommand, urlFlag } from '../../src/cli/base-command.js';
import { callServer } from '../../src/cli/http-client.js';
import { systemClock } from '../../src/lib/clock.js';
import type { ReceiptClaims } from '../../src/receipts/crypto.js';
import { verifyReceipt, type VerifyKeys, type VerifyReason } from '../../src/receipts/verify.js';

/**
 * `svc receipt verify`: offline against a key set (a file, or a URL fetched once), or online
 * with `POST /v1/verify`. Exit 0 valid, 1 invalid (the verdict is still printed: with --json it
 * is the one document on stdout), 2 usage (no receipt, unreadable or invalid key-set file),
 * 3 the key set's URL or the server cannot be reached or does not serve a key set.
 */

export interface ReceiptVerdict {
  valid: boolean;
  claims: ReceiptClaims | null;
  reason: VerifyReason | string | null;
  kid?: string;
  replayed?: boolean;
}

/** An invalid receipt: exit 1, and the verdict itself is what --json prints. */
class InvalidReceipt extends CliFailure {
  constructor(readonly verdict: ReceiptVerdict) {
    super(`the receipt is not valid: ${verdict.reason ?? 'unknown reason'}`, {
      exit: EXIT.false,
      type: 'invalid_receipt',
    });
    // The verdict is already on stdout; oclif need not repeat it on stderr.
    this.skipOclifErrorHandling = true;
  }
}

const MAX_JWKS_BYTES = 1024 * 1024;
const FETCH_FIX =
  "Check the address (--jwks, or --url for the server's /.well-known/jwks.json), or pass the key set as a file.";

const EXPLAIN: Record<VerifyReason, string> = {
  malformed: 'this is not a well-formed receipt (a compact signed token with the receipt claims)',
  bad_signature: 'the signature does not match: the receipt was altered, or not signed with EdDSA by the key it names',
  unknown_key:
    'the key set holds no receipt key with the id the receipt names (wrong deployment, or an out-of-date key set)',
  expired: 'the receipt was genuine, and its expiry time has passed',
  revoked: 'the receipt was signed by a key that has since been revoked',
};

export default class ReceiptVerify extends SvcCommand {
  static override summary = "Check a receipt's signature and show what it says.";
  static override description =
    "Offline by default, against a JSON Web Key Set: a file, or a URL fetched once (without --jwks, the server's /.well-known/jwks.json at --url). " +
    'With --online, asks the server (POST /v1/verify), which also says whether the receipt was checked online before. Exit 0 valid, 1 invalid, 2 usage, 3 unreachable.';
  static override examples = [
    '<%= config.bin %> receipt verify eyJhbGciOiJFZERTQSIs... --jwks ./jwks.json',
    'pbpaste | <%= config.bin %> receipt verify - --jwks https://svc.example.com/.well-known/jwks.json --json',
    'SVC_URL=https://svc.example.com <%= config.bin %> receipt verify "$RECEIPT" --online',
  ];
  static override args = {
    receipt: Args.string({
      description: 'the receipt (compact JWS), or - to read it from standard input',
      required: true,
    }),
  };
  static override flags = {
    jwks: Flags.string({
      description: 'key set to verify against: a JSON file, or an http(s) URL fetched once',
      exclusive: ['online'],
    }),
    online: Flags.boolean({ description: 'ask the server (POST /v1/verify) instead of verifying here' }),
    url: urlFlag,
  };

  async run(): Promise<ReceiptVerdict> {
    const { args, flags } = await this.parse(ReceiptVerify);
    const token = (args.receipt === '-' ? await text(process.stdin) : args.receipt).trim();
    if (token === '')
      this.fail(
        'no receipt given (standard input was empty)',
        EXIT.usage,
        'usage',
        'Pass the receipt as the argument, or pipe it in with -.',
      );

    let verdict: ReceiptVerdict;
    if (flags.online) {
      checkedUrl(flags.url);
      const answer = await callServer<ReceiptVerdict>(flags.url, 'POST', '/v1/verify', { body: { receipt: token } });
      verdict = {
        valid: answer.valid === true,
        claims: answer.claims ?? null,
        reason: answer.reason ?? null,
        ...(typeof answer.kid === 'string' ? { kid: answer.kid } : {}),
        replayed: answer.replayed === true,
      };
    } else {
      const jwks = await this.keySet(flags.jwks ?? defaultJwksUrl(flags.url));
      const result = await verifyReceipt(token, { jwks }, systemClock.now());
      verdict = {
        valid: result.valid,
        claims: result.claims,
        reason: result.reason,
        ...(result.kid === null ? {} : { kid: result.kid }),
      };
    }

    for (const line of describe(verdict)) this.log(line);
    if (!verdict.valid) throw new InvalidReceipt(verdict);
    return verdict;
  }

  protected override toErrorJson(err: unknown): unknown {
    return err instanceof InvalidReceipt ? err.verdict : super.toErrorJson(err);
  }

  /** The key set from a file (problems are usage errors) or a URL (problems mean unreachable). */
  private async keySet(source: string): Promise<VerifyKeys['jwks']> {
    const remote = /^https?:\/\//i.test(source);
    const where = remote ? source : `the file ${source}`;
    const raw = remote
      ? await fetchText(source)
      : await readFile(source, 'utf8').catch((err: NodeJS.ErrnoException) => {
          this.fail(
            `cannot read the key set file ${source}: ${err.code ?? err.message}`,
            EXIT.usage,
            'invalid_jwks',
            'Pass --jwks a JSON Web Key Set file, or its URL.',
          );
        });
    const failure = remote ? EXIT.unreachable : EXIT.usage;
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      this.fail(
        `${where} does not hold JSON`,
        failure,
        'invalid_jwks',
        'A key set is a JSON object { "keys": [...] }, as served at /.well-known/jwks.json.',
      );
    }
    if (typeof parsed !== 'object' || parsed === null || !Array.isArray((parsed as { keys?: unknown }).keys)) {
      this.fail(
        `${where} is not a JSON Web Key Set (no "keys" array)`,
        failure,
        'invalid_jwks',
        'A key set is a JSON object { "keys": [...] }, as served at /.well-known/jwks.json.',
      );
    }
    const jwks = parsed as VerifyKeys['jwks'];
    if (!jwks.keys.some((k) => (k as { use?: unknown })?.use === 'sig'))
      this.logToStderr(`warning: ${where} holds no receipt key (use "sig"); no receipt can verify against it.`);
    return jwks;
  }
}

function checkedUrl(base: string): URL {
  let url: URL | null = null;
  try {
    url = new URL(base);
  } catch {
    /* refused below */
  }
  if (!url || !['http:', 'https:'].includes(url.protocol)) {
    throw new CliFailure(`--url ${base} is not an http(s) URL`, {
      exit: EXIT.usage,
      type: 'usage',
      fix: 'Pass --url (or SVC_URL) as http(s)://host:port.',
    });
  }
  return url;
}

/** RFC 8615: well-known paths are at the root of the host, whatever path --url has. */
function defaultJwksUrl(base: string): string {
  return new URL('/.well-known/jwks.json', checkedUrl(base)).toString();
}

/** One GET with undici; anything short of a 200 with a body under 1 MB is "cannot get it there". */
async function fetchText(url: string): Promise<string> {
  const unreachable = (why: string) =>
    new CliFailure(`cannot get the key set from ${url}: ${why}`, {
      exit: EXIT.unreachable,
      type: 'unreachable',
      fix: FETCH_FIX,
    });
  let res;
  try {
    res = await request(url, {
      method: 'GET',
      headers: { accept: 'application/json' },
      headersTimeout: 10_000,
      bodyTimeout: 10_000,
    });
  } catch (err) {
    throw unreachable((err as Error).message ?? String(err));
  }
  if (res.statusCode !== 200) {
    await res.body.dump().catch(() => undefined);
    throw unreachable(`HTTP ${res.statusCode}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size > MAX_JWKS_BYTES) {
        res.body.destroy();
        throw unreachable('the answer is larger than 1 MB');
      }
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    throw err instanceof CliFailure ? err : unreachable((err as Error).message ?? String(err));
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The human form: validity, the reason, and what the receipt says. */
function describe(verdict: ReceiptVerdict): string[] {
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

/** 1250 EUR -> "12.50 EUR (1250 minor units)", with the currency's own number of decimals. */
function money(amount: number, currency: string): string {
  let digits = 2;
  try {
    digits = new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
  } catch {
    /* an unknown code: two decimals */
  }
  const minor = String(amount).padStart(digits + 1, '0');
  const major = digits === 0 ? minor : `${minor.slice(0, -digits)}.${minor.slice(-digits)}`;
  return `${major} ${currency} (${amount} minor units)`;
}

function isoSeconds(seconds: number): string {
  const date = new Date(seconds * 1000);
  return Number.isNaN(date.getTime()) ? String(seconds) : date.toISOString().replace('.000Z', 'Z');
}
