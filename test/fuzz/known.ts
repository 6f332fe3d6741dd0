import type { Finding } from './campaign.js';

/**
 * Findings already known and being fixed on other branches: the campaign reports them as
 * "known" (printed, never silent) and does not fail on them. Each entry goes once its fix is
 * merged; a run whose known entry no longer matches anything says so, so that a stale entry is seen.
 */
export interface Known {
  id: string;
  /** What goes wrong, and where the fix is being made. */
  what: string;
  matches(finding: Finding): boolean;
}

const field = (finding: Finding, name: string): string[] => {
  const values: string[] = [];
  const query = finding.request.target.split('?')[1] ?? '';
  const bodyText = finding.request.body?.toString('utf8') ?? '';
  for (const text of [query, bodyText]) {
    try {
      values.push(...new URLSearchParams(text).getAll(name));
    } catch {
      /* not a form */
    }
  }
  try {
    const parsed: unknown = JSON.parse(bodyText);
    if (parsed && typeof parsed === 'object' && name in parsed)
      values.push(String((parsed as Record<string, unknown>)[name]));
  } catch {
    /* not JSON */
  }
  return values;
};

const malformedEscape = (target: string): boolean => {
  try {
    decodeURIComponent(target.split('?')[0]!);
    return false;
  } catch {
    return true;
  }
};

export const KNOWN: Known[] = [
  {
    id: 'oauth-long-client-id',
    what: 'a client_id of 4,093 characters or more at /oauth/token, /oauth/revoke or /oauth/authorize answers 500 (branch defects)',
    matches: (f) =>
      f.kind === 'server_error' &&
      /^\/oauth\/(token|revoke|authorize)\b/.test(f.request.target) &&
      field(f, 'client_id').some((v) => v.length >= 4_000),
  },
  {
    id: 'prototype-named-field',
    what:
      'a body whose field is named like an Object.prototype member ("constructor", "hasOwnProperty", "toString") answers 500 ' +
      'on the routes that map a failing field to an error type (budgets, POST /v1/admin/stop-all, POST /v1/admin/agents/{aid}/freeze): ' +
      "the field-to-type lookup reads Object's members (branch defects)",
    matches: (f) =>
      f.kind === 'server_error' &&
      /"(constructor|hasOwnProperty|toString|valueOf|isPrototypeOf|propertyIsEnumerable|toLocaleString|__defineGetter__|__lookupGetter__)"\s*:/.test(
        f.request.body?.toString('utf8') ?? '',
      ),
  },
  {
    id: 'malformed-escape-other-method',
    what: "a malformed percent-escape in the path with a method the route does not take answers hapi's own 500 (branch defects)",
    matches: (f) =>
      f.kind === 'server_error' && !f.route.methods.includes(f.request.method) && malformedEscape(f.request.target),
  },
  {
    id: 'gateway-tokenizer-stall',
    what:
      'a long prompt without spaces holds the event loop in the gateway tokenizer at POST /v1/messages/count_tokens ' +
      '(30,000 "a": 210 ms; 60,000 "é": 2.5 s; 50,000 emoji: past the 20 s answer timeout) (branch tok)',
    matches: (f) =>
      (f.kind === 'stall' || f.kind === 'no_answer') &&
      /^\/v1\/(chat\/completions|messages|responses|embeddings)\b/.test(f.request.target) &&
      /[^\s"]{5000}/.test(f.request.body?.toString('utf8') ?? ''),
  },
];
