/**
 * Standard padded base64 (RFC 4648 section 4): a length that is a multiple of four, the 64
 * characters, and one or two `=` only at the end. Checked in one pass over a single character
 * class: the usual pattern, four characters a group repeated, keeps one backtrack entry a group and
 * overflowed V8's regular-expression stack on a text of a few megabytes (a RangeError, not a "no").
 */
export function isPaddedBase64(text: string): boolean {
  if (text.length % 4 !== 0) return false;
  const end = text.endsWith('==') ? text.length - 2 : text.endsWith('=') ? text.length - 1 : text.length;
  return BASE64_CHARS.test(text.slice(0, end));
}

const BASE64_CHARS = /^[A-Za-z0-9+/]*$/;
