import test from 'ava';
import fc from 'fast-check';
import { AppError } from '../../src/errors/app-error.js';
import { readConstraints, ruleOf } from '../../src/ap2/constraints.js';
import {
  checkDisclosures,
  checkTimes,
  claimsOf,
  readToken,
  splitChain,
  verifyIssuer,
} from '../../src/ap2/credential.js';
import type { TrustedIssuer } from '../../src/ap2/records.js';
import { issueOpen, newKeys, publicOnly, type KeyPair } from './issuer.js';

/**
 * Property tests over the AP2 parsers (docs/ap2.md#what-svc-verifies): whatever text or JSON
 * arrives, a parser answers or refuses with svc's own 400/422 error naming a field, never another
 * error; a credential changed in any one character never verifies with other content than it was
 * issued with; constraints map onto rules as the table says.
 */

const SOURCE = {
  kind: 'ap2' as const,
  mandateId: `ap2_${'a'.repeat(22)}`,
  credentialHash: 'h'.repeat(43),
  issuer: 'x',
};

/** Runs `f`; passes when it returns, or throws an AppError of status 400 or 422 naming a field. */
async function refusesCleanly(f: () => unknown): Promise<boolean> {
  try {
    await f();
    return true;
  } catch (e) {
    if (!(e instanceof AppError)) throw e;
    if (e.status !== 400 && e.status !== 422) throw new Error(`status ${e.status}: ${e.message}`, { cause: e });
    if (!e.details.errors?.[0]?.field) throw new Error(`no field named: ${e.message}`, { cause: e });
    return true;
  }
}

const tokenText = fc
  .array(fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~'.split('')), {
    maxLength: 300,
  })
  .map((cs) => cs.join(''));

let issuer: KeyPair;
let holder: KeyPair;
let issuers: TrustedIssuer[];
let credential: string;
const NOW = Date.parse('2026-06-01T12:00:00Z');

test.before(async () => {
  issuer = await newKeys();
  holder = await newKeys();
  issuers = [{ name: 'wallet', jwks: { keys: [publicOnly(issuer.publicKey, 'k1') as never] } }];
  credential = await issueOpen(
    { jwk: issuer.privateKey, header: { kid: 'k1' } },
    {
      constraints: [
        { type: 'payment.amount_range', currency: 'EUR', max: 5000 },
        {
          type: 'payment.allowed_payees',
          allowed: [{ name: 'Acme', website: 'https://acme.example' }],
        },
      ],
      cnf: holder.publicKey,
      iatSeconds: NOW / 1000 - 60,
      expSeconds: NOW / 1000 + 3600,
      payeesAt: 1,
    },
  );
});

/** The whole import-side reading of a credential, as the service runs it. */
async function verifyAll(text: string): Promise<Record<string, unknown>> {
  const [one] = splitChain(text, 'credential', 1) as [string];
  const token = await readToken(one, 'credential');
  await verifyIssuer(token, issuers, NOW, 'credential');
  checkDisclosures(token, 'credential');
  checkTimes(token.payload, NOW, 'credential');
  return claimsOf(token);
}

test('the chain and token readers answer or refuse any text with a 400/422 naming the field', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(tokenText, fc.string({ maxLength: 200 })),
      fc.constantFrom(1 as const, 2 as const),
      async (text, count) =>
        refusesCleanly(async () => {
          for (const token of splitChain(text, 'ap2.mandate', count)) {
            const read = await readToken(token, 'ap2.mandate');
            checkDisclosures(read, 'ap2.mandate');
            await verifyIssuer(read, issuers, NOW, 'ap2.mandate');
          }
        }),
    ),
    { numRuns: 300 },
  );
  t.pass();
});

test('a credential changed in one character never verifies with other claims than issued', async (t) => {
  const original = JSON.stringify(await verifyAll(credential));
  await fc.assert(
    fc.asyncProperty(
      fc.nat({ max: credential.length - 1 }),
      fc.constantFrom(...'AbZ09-_.~x'.split('')),
      async (at, c) => {
        const changed = credential.slice(0, at) + c + credential.slice(at + 1);
        if (changed === credential) return true;
        try {
          const claims = await verifyAll(changed);
          return JSON.stringify(claims) === original;
        } catch (e) {
          return e instanceof AppError && (e.status === 400 || e.status === 422);
        }
      },
    ),
    { numRuns: 300 },
  );
  t.pass();
});

test('constraints of any JSON shape map to rules or are refused as unresolved, naming the constraint', (t) => {
  fc.assert(
    fc.property(fc.jsonValue(), (constraints) => {
      try {
        readConstraints({ constraints }, 'constraints');
        return true;
      } catch (e) {
        return (
          e instanceof AppError &&
          e.type === 'unresolved_constraint' &&
          /^constraints/.test(e.details.errors![0]!.field!)
        );
      }
    }),
    { numRuns: 500 },
  );
  t.pass();
});

test('an amount range and budget become exactly the rule limits they name', (t) => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 1e12 }),
      fc.integer({ min: 0, max: 1e12 }),
      fc.integer({ min: 1, max: 1e12 }),
      fc.constantFrom('USD', 'EUR', 'JPY'),
      (max, min, budget, currency) => {
        const rule = ruleOf(
          {
            constraints: [
              { type: 'payment.amount_range', currency, max, min },
              { type: 'payment.budget', currency, max: budget },
            ],
          },
          SOURCE,
        );
        return (
          rule.maxAmount === max &&
          rule.minAmount === (min > 0 ? min : undefined) &&
          rule.budget?.amount === budget &&
          rule.currencies?.[0] === currency &&
          rule.merchants?.[0] === '*'
        );
      },
    ),
  );
  t.pass();
});
