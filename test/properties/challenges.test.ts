import test from 'ava';
import fc from 'fast-check';
import { encodePaymentRequiredHeader } from '@x402/core/http';
import { AppError } from '../../src/errors/app-error.js';
import { parseAuthChallenges, parseChallenge, tokenToMinor } from '../../src/gate/challenge.js';

/**
 * The 402 challenge readers (src/gate/challenge.ts) under any input: whatever the value, the
 * answer is a payment or a 400 invalid_request naming `challenge.value`, never another error (a
 * 500); a challenge made by x402's own encoder is read back exactly; a token amount converts to
 * minor units exactly or not at all; auth-params with any quoted text are read back as written.
 */
const CURRENCIES = { USDC: 'USD', EURC: 'EUR' };
const USDC_BASE = '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913';
const NOW = Date.parse('2026-11-29T12:00:00Z');

function readsOrRefuses(scheme: 'x402' | 'mpp', value: string): boolean {
  try {
    const read = parseChallenge({ scheme, value }, CURRENCIES, NOW);
    return Number.isSafeInteger(read.payment.amount) && read.payment.amount > 0;
  } catch (err) {
    if (!(err instanceof AppError) || err.type !== 'invalid_request') throw err;
    return true;
  }
}

const printable = fc.string({
  unit: fc.constantFrom(...' !"#$%&\'()*+,-./0123456789:;<=>?@AZaz[\\]^_`{|}~='.split('')),
});

test('any value, either scheme: a payment or invalid_request, never another error', (t) => {
  fc.assert(
    fc.property(fc.constantFrom('x402' as const, 'mpp' as const), fc.oneof(fc.string(), printable), readsOrRefuses),
    { numRuns: 1000 },
  );
  fc.assert(
    fc.property(fc.jsonValue(), (json) => readsOrRefuses('x402', Buffer.from(JSON.stringify(json)).toString('base64'))),
    { numRuns: 500 },
  );
  fc.assert(
    fc.property(fc.jsonValue(), fc.string(), (json, id) =>
      readsOrRefuses(
        'mpp',
        `Payment id="${id.replace(/["\\]/g, '')}", realm="a.example", method="m", intent="charge", request="${Buffer.from(JSON.stringify(json)).toString('base64url')}"`,
      ),
    ),
    { numRuns: 500 },
  );
  t.pass();
});

test("a challenge x402's own encoder made is read back: payee, amount in cents, merchant", (t) => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 1_000_000_000 }),
      fc.stringMatching(/^0x[0-9a-f]{40}$/),
      fc.domain(),
      (cents, payTo, host) => {
        const value = encodePaymentRequiredHeader({
          x402Version: 2,
          resource: { url: `https://${host}/paid` },
          accepts: [
            {
              scheme: 'exact',
              network: 'eip155:8453',
              amount: String(BigInt(cents) * 10_000n),
              asset: USDC_BASE,
              payTo,
              maxTimeoutSeconds: 30,
              extra: {},
            },
          ],
        });
        const read = parseChallenge({ scheme: 'x402', value }, CURRENCIES, NOW);
        return (
          read.payment.amount === cents &&
          read.payment.currency === 'USD' &&
          read.payment.merchant === host.toLowerCase() &&
          read.payee === payTo
        );
      },
    ),
    { numRuns: 300 },
  );
  t.pass();
});

test('a token amount converts exactly to minor units, or is refused', (t) => {
  fc.assert(
    fc.property(
      fc.bigInt({ min: 0n, max: 10n ** 30n }),
      fc.constantFrom('USD', 'EUR', 'JPY', 'KWD', 'CLF'),
      (base, cur) => {
        const out = tokenToMinor(base.toString(), cur);
        if (typeof out === 'string') return true;
        const exp = { USD: 2, EUR: 2, JPY: 0, KWD: 3, CLF: 4 }[cur]!;
        // Exact: converting back gives the base units again.
        return BigInt(out) * 10n ** BigInt(6 - exp) === base && out > 0;
      },
    ),
    { numRuns: 1000 },
  );
  t.pass();
});

test('auth-params with any quoted text are read back as written', (t) => {
  const token = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/);
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.tuple(token, fc.string()), { selector: ([k]) => k, minLength: 1, maxLength: 6 }),
      (params) => {
        const ascii = params.map(([k, v]) => [k, v.replace(/[^\x20-\x7e]/g, '')] as const);
        const header = `Payment ${ascii.map(([k, v]) => `${k}="${v.replace(/(["\\])/g, '\\$1')}"`).join(', ')}`;
        const [c] = parseAuthChallenges(header);
        return c!.scheme === 'Payment' && ascii.every(([k, v]) => c!.params[k] === v);
      },
    ),
    { numRuns: 500 },
  );
  t.pass();
});
