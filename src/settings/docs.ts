import type Joi from 'joi';
import { walk, type AnySetting } from './define.js';
import { declarations } from './schema.js';

/**
 * docs/configuration.md's table of settings, rendered from the declarations: one row for each
 * setting that has a `doc`, its default and its values read from the joi schema itself, so the
 * page cannot name a default or a range the code does not have. scripts/settings-docs.mjs writes it
 * into the page; test/settings/docs.test.ts fails when the page differs.
 */

/** The lines around the table in the page. */
export const TABLE_START = '<!-- settings table: rendered from src/settings by scripts/settings-docs.mjs -->';
export const TABLE_END = '<!-- end of the settings table -->';

/** One row of the table. */
export interface DocsRow {
  readonly setting: string;
  readonly environment: string;
  readonly default: string;
  readonly values: string;
  readonly meaning: string;
}

interface Described {
  type: string;
  flags?: { default?: unknown; presence?: string; only?: boolean };
  allow?: unknown[];
  rules?: Array<{ name: string; args?: Record<string, unknown> }>;
}

const code = (text: string) => `\`${text}\``;

/** A duration in milliseconds, as a person reads it (`21600000` is 6 h). */
function humanMs(ms: number): string | null {
  const units: Array<[number, string]> = [
    [3_600_000, 'h'],
    [60_000, 'min'],
    [1000, 's'],
  ];
  for (const [size, unit] of units) if (ms >= size && ms % size === 0) return `${ms / size} ${unit}`;
  return null;
}

function defaultOf(path: string, setting: AnySetting, described: Described): string {
  if (setting.meta.shown !== undefined) return setting.meta.shown;
  const value = described.flags?.default;
  if (described.flags?.presence === 'required') return 'required';
  if (value === undefined || value === null) return 'none';
  if (Array.isArray(value) && value.length === 0) return 'none';
  if (typeof value === 'number' && path.endsWith('Ms')) {
    const human = humanMs(value);
    return human === null || value < 1000 ? code(String(value)) : `${code(String(value))} (${human})`;
  }
  return code(typeof value === 'string' ? value : JSON.stringify(value));
}

function rangeOf(rules: Described['rules']): string | null {
  const limit = (name: string) => rules?.find((rule) => rule.name === name)?.args?.limit as number | undefined;
  const min = limit('min');
  const max = limit('max');
  if (min !== undefined && max !== undefined) return `${min} to ${max}`;
  if (min !== undefined) return `at least ${min}`;
  if (max !== undefined) return `at most ${max}`;
  return null;
}

function valuesOf(setting: AnySetting, described: Described): string {
  const rules = described.rules ?? [];
  const has = (name: string) => rules.some((rule) => rule.name === name);
  const allowsNull = described.allow?.includes(null) ?? false;
  const orNull = allowsNull ? ', or `null`' : '';
  const range = rangeOf(rules);
  switch (described.type) {
    case 'number':
      return `${has('integer') ? 'integer' : 'number'}${range === null ? '' : `, ${range}`}${orNull}`;
    case 'boolean':
      return '`true` or `false`';
    case 'string': {
      if (described.flags?.only) return (described.allow ?? []).map((v) => code(String(v))).join(', ');
      const kind = has('uri') ? 'URL (http or https)' : has('base64') ? 'base64url' : has('hostname') ? 'host' : 'text';
      const length = range === 'at least 1' ? 'not empty' : range === null ? null : `${range} characters`;
      return `${kind}${length === null ? '' : `, ${length}`}${orNull}`;
    }
    case 'array': {
      const item = setting.item?.schema.describe() as Described | undefined;
      const of = item?.type === 'object' ? 'objects' : item?.type === 'string' ? 'strings' : 'values';
      return `list of ${of}${range === null ? '' : ` (${range})`}${orNull}`;
    }
    case 'object':
      return `object${orNull}`;
    default:
      return described.flags?.presence === 'forbidden' ? 'read at start, never from a file' : described.type;
  }
}

function environmentOf(setting: AnySetting, described: Described): string {
  const { env, flag, reads } = setting.meta;
  if (reads !== undefined) return reads.map(code).join(', ');
  if (env === undefined) return flag === undefined ? '' : code(flag);
  const notes = [
    ...(flag === undefined ? [] : [code(flag)]),
    ...(setting.item !== undefined ? ['comma list'] : []),
    ...(described.type === 'boolean' ? ['`1` or `0`'] : []),
  ];
  return notes.length === 0 ? code(env) : `${code(env)} (${notes.join(', ')})`;
}

/** The table's rows, in declaration order. */
export function docsRows(): DocsRow[] {
  return walk(declarations).flatMap(({ path, setting }) => {
    if (setting.meta.doc === undefined) return [];
    const described = setting.schema.describe() as Described & Joi.Description;
    return [
      {
        setting: code(path),
        environment: environmentOf(setting, described),
        default: defaultOf(path, setting, described),
        values: valuesOf(setting, described),
        meaning: setting.meta.doc,
      },
    ];
  });
}

/** The table as Markdown, between its start and end lines. */
export function docsTable(): string {
  const cells = (row: DocsRow) => [row.setting, row.environment, row.default, row.values, row.meaning];
  const line = (values: string[]) => `| ${values.join(' | ')} |`.replace(/ {2,}\|/g, ' |');
  return [
    TABLE_START,
    '',
    line(['setting', 'environment', 'default', 'values', 'meaning']),
    line(['---', '---', '---', '---', '---']),
    ...docsRows().map((row) => line(cells(row))),
    '',
    TABLE_END,
  ].join('\n');
}

/** The page with its table replaced by the rendered one; null when the page has no table lines. */
export function withTable(page: string): string | null {
  const start = page.indexOf(TABLE_START);
  const end = page.indexOf(TABLE_END);
  if (start < 0 || end < start) return null;
  return page.slice(0, start) + docsTable() + page.slice(end + TABLE_END.length);
}

/** Settings that a person could set and no row explains: no doc on them or on an object above them. */
export function undocumented(): string[] {
  const visits = walk(declarations);
  const documented = visits.filter(({ setting }) => setting.meta.doc !== undefined).map(({ path }) => path);
  const covered = (path: string) => documented.some((p) => path === p || path.startsWith(`${p}.`));
  return visits
    .filter(({ path, setting, inItem }) => !inItem && setting.fields === undefined && !covered(path))
    .map(({ path }) => path);
}
