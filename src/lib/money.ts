/**
 * Money as people read it. Machine fields carry whole minor units (`amount: 2000` with
 * `currency: "EUR"` is EUR 20.00); every text a person reads shows the currency's own units, in
 * one style: the code, a space, the amount with English grouping and exactly the currency's
 * decimals ("EUR 20.00", "JPY 2,000", "KWD 2.000").
 * Rules:
 * - A currency's number of decimals is ISO 4217's minor unit (CURRENCY_EXPONENTS lists every code
 *   whose minor unit is not 2), not the runtime's locale data: ICU shows some currencies with
 *   fewer decimals than ISO 4217 (HUF, COP, IDR, PKR with none, IQD with none instead of three),
 *   which would read minor units 100 or 1,000 times too large. A well-formed code ISO 4217 does
 *   not list has 2, as ECMA-402 says. A code ISO 4217 gives no minor unit (gold, special drawing
 *   rights, the testing code) counts whole units.
 * - The amount is formatted from its exact decimal digits (never a division in floating point),
 *   so an amount beyond Number's safe range, given as a bigint, is shown digit for digit.
 * - Whatever cannot be read as money (a code that is not three capital letters, an amount that is
 *   not a whole number, as a receipt from elsewhere may carry) is shown as given, marked as minor
 *   units, rather than guessed at.
 */
export const CURRENCY_EXPONENTS: Readonly<Record<string, number>> = {
  // No decimals.
  BIF: 0,
  CLP: 0,
  DJF: 0,
  GNF: 0,
  ISK: 0,
  JPY: 0,
  KMF: 0,
  KRW: 0,
  PYG: 0,
  RWF: 0,
  UGX: 0,
  UYI: 0,
  VND: 0,
  VUV: 0,
  XAF: 0,
  XOF: 0,
  XPF: 0,
  // Three decimals.
  BHD: 3,
  IQD: 3,
  JOD: 3,
  KWD: 3,
  LYD: 3,
  OMR: 3,
  TND: 3,
  // Four decimals.
  CLF: 4,
  UYW: 4,
  // No minor unit in ISO 4217: the amount is in whole units.
  XAG: 0,
  XAU: 0,
  XBA: 0,
  XBB: 0,
  XBC: 0,
  XBD: 0,
  XDR: 0,
  XPD: 0,
  XPT: 0,
  XSU: 0,
  XTS: 0,
  XUA: 0,
  XXX: 0,
};

const WELL_FORMED = /^[A-Z]{3}$/;

/** The number of decimals of a well-formed currency code (ISO 4217's minor unit; 2 for a code it does not list). */
export function currencyExponent(currency: string): number {
  return Object.hasOwn(CURRENCY_EXPONENTS, currency) ? CURRENCY_EXPONENTS[currency]! : 2;
}

/** Whole units in `digits` as an exact decimal string: (-)1234, 2 -> "(-)12.34". */
function decimalText(units: bigint, digits: number): string {
  const sign = units < 0n ? '-' : '';
  const text = (units < 0n ? -units : units).toString().padStart(digits + 1, '0');
  return digits === 0 ? `${sign}${text}` : `${sign}${text.slice(0, -digits)}.${text.slice(-digits)}`;
}

const formats = new Map<string, Intl.NumberFormat>();
function formatOf(currency: string, minDigits: number, maxDigits: number): Intl.NumberFormat {
  const key = `${currency}/${minDigits}/${maxDigits}`;
  let format = formats.get(key);
  if (!format) {
    format = new Intl.NumberFormat('en', {
      style: 'currency',
      currency,
      currencyDisplay: 'code',
      minimumFractionDigits: minDigits,
      maximumFractionDigits: maxDigits,
    });
    formats.set(key, format);
  }
  return format;
}

/** Intl places a no-break space after the code; texts here use a plain one (logs, JSON, terminals). */
function shown(format: Intl.NumberFormat, decimal: string): string {
  // Intl formats a decimal string exactly (ES2023's Intl.NumberFormat v3), whatever its size.
  return format.format(decimal as unknown as number).replace(/\u00a0/g, ' ');
}

function wholeUnits(amount: number | bigint): bigint | null {
  if (typeof amount === 'bigint') return amount;
  return Number.isSafeInteger(amount) ? BigInt(amount) : null;
}

/** As formatMoney, or null when the amount or the code cannot be read as money (see the rules above). */
export function moneyOrNull(minor: number | bigint, currency: string): string | null {
  const units = wholeUnits(minor);
  if (units === null || !WELL_FORMED.test(currency)) return null;
  const digits = currencyExponent(currency);
  return shown(formatOf(currency, digits, digits), decimalText(units, digits));
}

/** Minor units as people read them: formatMoney(2000, 'EUR') is "EUR 20.00", (2000, 'JPY') "JPY 2,000", (2000, 'KWD') "KWD 2.000". */
export function formatMoney(minor: number | bigint, currency: string): string {
  return moneyOrNull(minor, currency) ?? `${String(minor)} ${currency} (minor units)`;
}

/**
 * The model gateway's micro-dollars (millionths of a US dollar) as people read them: cents always,
 * and the smaller digits only when there are any: 5_000_000 is "USD 5.00", 300 "USD 0.0003".
 */
export function formatMicroDollars(micros: number | bigint): string {
  const units = wholeUnits(micros);
  if (units === null) return `${String(micros)} micro-dollars`;
  return shown(formatOf('USD', 2, 6), decimalText(units, 6));
}
