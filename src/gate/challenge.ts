import { createHash } from 'node:crypto';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { PaymentRequiredV2Schema } from '@x402/core/schemas';
import { invalidField } from '../errors/app-error.js';
import { currencyExponent } from '../lib/money.js';

/**
 * A 402 payment challenge read as a payment the gate can decide (docs/payment-challenges.md): an
 * x402 v2 `PAYMENT-REQUIRED` header value, or an MPP `WWW-Authenticate: Payment` header value,
 * each exactly as the agent received it.
 * Rules:
 * - x402: the value is base64 of a JSON PaymentRequired with `x402Version: 2` (decoded and
 *   validated by `@x402/core`'s own decoder and schema); each of its `accepts` is an option.
 *   The merchant is the host of `resource.url`.
 * - MPP: the value holds one or more challenges (RFC 9110 auth-params); each `Payment` challenge
 *   with `intent="charge"` is an option, its `request` the base64url JSON of the charge (`amount`
 *   in base units, `currency`, `recipient`). `id`, `realm`, `method` and `request` are required;
 *   the merchant is `realm`. A challenge past its `expires` is refused.
 * - An option's asset is a token or a currency: a token named in `assetCurrencies` (by its symbol,
 *   or by the contract address of a well-known deployment of USDC or EURC) is worth one unit of
 *   its currency per 10^6 base units, converted to that currency's minor units exactly (an amount
 *   that does not convert exactly is refused); an MPP `currency` of three letters that names no
 *   token is that ISO 4217 currency, its base units its minor units.
 * - The first option that converts is the payment decided; the answer names its payee, asset and
 *   network, and the agent pays that option or none. No option that converts: 400, naming why.
 * - The challenge's hash is SHA-256 over the value's exact bytes (UTF-8), base64url.
 * Every refusal is 400 invalid_request naming the field `challenge.value` and what is wrong.
 */

/** What svc read from a challenge and decides. */
export interface ParsedChallenge {
  scheme: 'x402' | 'mpp';
  /** base64url SHA-256 of the value as received. */
  hash: string;
  /** Who is paid, as the challenge names them (a wallet address, an account). */
  payee: string;
  /** The token or currency as the challenge names it (a contract address, `usdc`, `usd`). */
  asset: string;
  /** The token's symbol (`USDC`), or the ISO 4217 code of a fiat currency. */
  assetSymbol: string;
  /** x402: the CAIP-2 network; MPP: the payment method. */
  network: string;
  /** The amount as the challenge states it, in the asset's base units. */
  assetAmount: string;
  /** What the gate decides: minor units of `currency`, and the merchant's domain. */
  payment: { amount: number; currency: string; merchant: string };
}

export type ChallengeScheme = ParsedChallenge['scheme'];

/** Base units per whole token of the stablecoins svc reads (USDC and EURC have 6 decimals). */
const TOKEN_DECIMALS = 6;

/**
 * Circle's own deployments of USDC and EURC, by network and address (lower case for EVM):
 * an x402 `asset` or an MPP `currency` is a contract address, and svc knows the token by it.
 */
const KNOWN_TOKENS: Readonly<Record<string, string>> = {
  'eip155:1/0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48': 'USDC',
  'eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913': 'USDC',
  'eip155:84532/0x036cbd53842c5426634e7929541ec2318f3dcf7e': 'USDC',
  'eip155:11155111/0x1c7d4b196cb0c7b01d743fbc6116a902379c7238': 'USDC',
  'eip155:137/0x3c499c542cef5e3811e1192ce70d8cc03d5c3359': 'USDC',
  'eip155:42161/0xaf88d065e77c8cc2239327c5edb3a432268e5831': 'USDC',
  'eip155:10/0x0b2c639c533813f4aa9d7837caf62653d097ff85': 'USDC',
  'eip155:43114/0xb97ef9ef8734c71904d8002f8b6bc66dd9c48a6e': 'USDC',
  'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp/EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v': 'USDC',
  'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1/4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU': 'USDC',
  'eip155:1/0x1abaea1f7c830bd89acc67ec4af516284b1bc33c': 'EURC',
  'eip155:8453/0x60a3e35cc302bfa44cb288bc5a4f316fdb1adb42': 'EURC',
  'eip155:43114/0xc891eb4cbdeff6e073e859e987815ed1505c2acd': 'EURC',
  'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp/HzwqbKZw8HxMN6bF2yFZNrht3c2iXXzpKcFu7uBEDKtr': 'EURC',
};

const HOSTNAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;
const DIGITS = /^[0-9]{1,78}$/;

function refused(message: string): Error {
  return invalidField('challenge.value', message);
}

export function challengeHash(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('base64url');
}

/** The symbol of a token by its name or known address, when `assetCurrencies` maps it. */
function tokenSymbol(asset: string, network: string | null, assetCurrencies: Readonly<Record<string, string>>) {
  const upper = asset.toUpperCase();
  if (Object.hasOwn(assetCurrencies, upper)) return upper;
  const evm = asset.startsWith('0x') ? asset.toLowerCase() : asset;
  const known = network
    ? KNOWN_TOKENS[`${network}/${evm}`]
    : Object.entries(KNOWN_TOKENS).find(([k]) => k.endsWith(`/${evm}`))?.[1];
  return known !== undefined && Object.hasOwn(assetCurrencies, known) ? known : undefined;
}

/**
 * `amount` base units of a token with TOKEN_DECIMALS decimals, in minor units of `currency`;
 * a string saying why not when it does not convert exactly or is out of range.
 */
export function tokenToMinor(amount: string, currency: string): number | string {
  if (!DIGITS.test(amount)) return `the amount "${amount.slice(0, 40)}" is not a whole number of base units`;
  const exponent = currencyExponent(currency);
  const base = BigInt(amount);
  let minor: bigint;
  if (exponent <= TOKEN_DECIMALS) {
    const per = 10n ** BigInt(TOKEN_DECIMALS - exponent);
    if (base % per !== 0n)
      return `the amount ${amount} (${TOKEN_DECIMALS} decimals) is not a whole number of ${currency} minor units`;
    minor = base / per;
  } else {
    minor = base * 10n ** BigInt(exponent - TOKEN_DECIMALS);
  }
  if (minor <= 0n) return 'the amount must be above zero';
  if (minor > BigInt(Number.MAX_SAFE_INTEGER)) return 'the amount is too large';
  return Number(minor);
}

/** One option of a challenge, before it is converted. */
interface Option {
  payee: string;
  asset: string;
  network: string;
  amount: string;
  /** The network the asset's address is looked up on (x402), or any (MPP). */
  tokenNetwork: string | null;
  /** Whether a three-letter asset that names no token is an ISO 4217 currency (MPP's fiat). */
  fiat: boolean;
}

/** The first option that converts, or a refusal naming why each did not. */
function decided(
  options: Option[],
  merchant: string,
  assetCurrencies: Readonly<Record<string, string>>,
): Omit<ParsedChallenge, 'scheme' | 'hash'> {
  const why: string[] = [];
  for (const o of options) {
    const symbol = tokenSymbol(o.asset, o.tokenNetwork, assetCurrencies);
    let currency: string;
    let minor: number | string;
    if (symbol !== undefined) {
      currency = assetCurrencies[symbol]!;
      minor = tokenToMinor(o.amount, currency);
    } else if (o.fiat && /^[A-Za-z]{3}$/.test(o.asset)) {
      currency = o.asset.toUpperCase();
      minor = !DIGITS.test(o.amount)
        ? `the amount "${o.amount.slice(0, 40)}" is not a whole number of base units`
        : BigInt(o.amount) <= 0n
          ? 'the amount must be above zero'
          : BigInt(o.amount) > BigInt(Number.MAX_SAFE_INTEGER)
            ? 'the amount is too large'
            : Number(o.amount);
    } else {
      why.push(
        `asset ${o.asset.slice(0, 80)} on ${o.network.slice(0, 80)} is not one svc knows (gate.assetCurrencies)`,
      );
      continue;
    }
    if (typeof minor === 'string') {
      why.push(minor);
      continue;
    }
    return {
      payee: o.payee,
      asset: o.asset,
      assetSymbol: symbol ?? currency,
      network: o.network,
      assetAmount: o.amount,
      payment: { amount: minor, currency, merchant },
    };
  }
  throw refused(`No payment option of the challenge can be decided: ${why.join('; ')}.`);
}

function merchantOf(host: string, fallback: string | undefined, from: string): string {
  const h = host.toLowerCase();
  if (HOSTNAME.test(h)) return h;
  if (fallback !== undefined) return fallback;
  throw refused(
    `The challenge's ${from} "${host.slice(0, 80)}" is not a domain name; name the merchant in target.domain.`,
  );
}

/** An x402 v2 PAYMENT-REQUIRED value. */
function parseX402(value: string, fallbackMerchant: string | undefined) {
  let decoded: unknown;
  try {
    decoded = decodePaymentRequiredHeader(value.trim());
  } catch {
    throw refused('The x402 challenge is not base64 of a JSON PaymentRequired.');
  }
  const parsed = PaymentRequiredV2Schema.safeParse(decoded);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw refused(
      `The x402 challenge is not a version 2 PaymentRequired: ${issue.path.join('.') || 'the value'}: ${issue.message}.`,
    );
  }
  let host: string;
  try {
    host = new URL(parsed.data.resource.url).hostname;
  } catch {
    host = parsed.data.resource.url;
  }
  const merchant = merchantOf(host, fallbackMerchant, 'resource.url');
  const options: Option[] = parsed.data.accepts.map((a) => ({
    payee: a.payTo,
    asset: a.asset,
    network: a.network,
    amount: a.amount,
    tokenNetwork: a.network,
    fiat: false,
  }));
  return { merchant, options };
}

/** RFC 9110 challenges: `Scheme token68 | auth-param, ...`, possibly several in one value. */
export function parseAuthChallenges(value: string): Array<{ scheme: string; params: Record<string, string> }> {
  const out: Array<{ scheme: string; params: Record<string, string> }> = [];
  const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+/;
  let i = 0;
  const ws = () => {
    while (i < value.length && (value[i] === ' ' || value[i] === '\t')) i++;
  };
  const fail = (what: string): never => {
    throw refused(`The MPP challenge is malformed at character ${i + 1}: ${what}.`);
  };
  while (i < value.length) {
    ws();
    if (value[i] === ',') {
      i++;
      continue;
    }
    if (i >= value.length) break;
    const scheme = TOKEN.exec(value.slice(i))?.[0];
    if (!scheme) fail('expected an authentication scheme');
    i += scheme!.length;
    const params: Record<string, string> = Object.create(null) as Record<string, string>;
    out.push({ scheme: scheme!, params });
    ws();
    // auth-params until the next scheme (a token not followed by `=`).
    for (;;) {
      ws();
      const name = TOKEN.exec(value.slice(i))?.[0];
      if (!name) break;
      const after = value.slice(i + name.length).match(/^[ \t]*=/);
      if (!after) break; // the next challenge's scheme
      i += name.length + after[0].length;
      ws();
      let v: string;
      if (value[i] === '"') {
        i++;
        v = '';
        while (i < value.length && value[i] !== '"') {
          if (value[i] === '\\') i++;
          if (i >= value.length) break;
          v += value[i];
          i++;
        }
        if (value[i] !== '"') fail('an unterminated quoted string');
        i++;
      } else {
        v = TOKEN.exec(value.slice(i))?.[0] ?? fail(`no value for ${name}`);
        i += v.length;
      }
      const key = name.toLowerCase();
      if (Object.hasOwn(params, key)) fail(`parameter ${key} given twice`);
      params[key] = v;
      ws();
      if (value[i] === ',') i++;
      else if (i < value.length) fail('expected a comma');
    }
  }
  return out;
}

/** An MPP WWW-Authenticate value: its Payment challenges of intent charge. */
function parseMpp(value: string, fallbackMerchant: string | undefined, nowMs: number) {
  const payments = parseAuthChallenges(value).filter((c) => c.scheme.toLowerCase() === 'payment');
  if (payments.length === 0) throw refused('The MPP challenge holds no Payment challenge.');
  const charges = payments.filter((c) => c.params.intent === 'charge');
  if (charges.length === 0)
    throw refused(`The MPP challenge's intent is "${payments[0]!.params.intent ?? ''}"; svc decides charge only.`);
  let merchant: string | undefined;
  const options: Option[] = charges.map((c) => {
    for (const p of ['id', 'realm', 'method', 'request'])
      if (!c.params[p]) throw refused(`The MPP challenge has no ${p}.`);
    if (c.params.expires !== undefined) {
      const at = Date.parse(c.params.expires);
      if (Number.isNaN(at)) throw refused(`The MPP challenge's expires "${c.params.expires}" is not a date-time.`);
      if (at <= nowMs) throw refused(`The MPP challenge expired at ${c.params.expires}.`);
    }
    if (!/^[A-Za-z0-9_-]+$/.test(c.params.request!))
      throw refused('The MPP challenge\'s request is not base64url (without "=").');
    let request: unknown;
    try {
      request = JSON.parse(Buffer.from(c.params.request!, 'base64url').toString('utf8'));
    } catch {
      throw refused("The MPP challenge's request is not base64url of JSON.");
    }
    const r = request as Record<string, unknown> | null;
    if (typeof r !== 'object' || r === null || Array.isArray(r))
      throw refused("The MPP challenge's request is not a JSON object.");
    for (const f of ['amount', 'currency'])
      if (typeof r[f] !== 'string' || r[f] === '') throw refused(`The MPP challenge's request has no ${f} string.`);
    if (r.recipient !== undefined && typeof r.recipient !== 'string')
      throw refused("The MPP challenge's request.recipient is not a string.");
    merchant ??= merchantOf(c.params.realm!, fallbackMerchant, 'realm');
    return {
      payee: (r.recipient as string | undefined) ?? c.params.realm!,
      asset: r.currency as string,
      network: c.params.method!,
      amount: r.amount as string,
      tokenNetwork: null,
      fiat: true,
    };
  });
  return { merchant: merchant!, options };
}

/**
 * The payment a challenge asks for, as the gate decides it (the rules above). `fallbackMerchant`:
 * the request's `target.domain`, used only when the challenge names no domain.
 */
export function parseChallenge(
  challenge: { scheme: ChallengeScheme; value: string },
  assetCurrencies: Readonly<Record<string, string>>,
  nowMs: number,
  fallbackMerchant?: string,
): ParsedChallenge {
  const { scheme, value } = challenge;
  const { merchant, options } =
    scheme === 'x402' ? parseX402(value, fallbackMerchant) : parseMpp(value, fallbackMerchant, nowMs);
  return { scheme, hash: challengeHash(value), ...decided(options, merchant, assetCurrencies) };
}
