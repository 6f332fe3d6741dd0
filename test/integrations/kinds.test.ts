import test from 'ava';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GENERATED_KINDS, GIVEN_KINDS, INTEGRATION_KINDS } from '../../src/integrations/kinds.js';
import { SETTINGS } from '../../src/integrations/http.js';
import { documentSchema } from '../../src/setup/document.js';
import { ROOT } from '../helpers/process.js';

/**
 * The integration kinds are listed once (src/integrations/kinds.ts); what derives from that list
 * is held here: the docs' table of kinds (docs/integrations.md), each route body schema, and the
 * workspace file's `integrations` section (`svc apply`, `svc export`).
 */

/** The rows of the docs' table of kinds: each row's kind and its "secret" cell. */
async function documentedKinds(): Promise<Array<{ kind: string; secret: string }>> {
  const text = await readFile(join(ROOT, 'docs', 'integrations.md'), 'utf8');
  const lines = text.split('\n');
  const head = lines.findIndex((l) => /^\|\s*kind\s*\|\s*settings body\s*\|\s*secret\s*\|/.test(l));
  if (head === -1) return [];
  const rows: Array<{ kind: string; secret: string }> = [];
  for (const line of lines.slice(head + 2)) {
    if (!line.startsWith('|')) break;
    const cells = line.split(/(?<!\\)\|/).map((c) => c.trim());
    rows.push({ kind: /^`([^`]+)`/.exec(cells[1] ?? '')?.[1] ?? '', secret: cells[3] ?? '' });
  }
  return rows;
}

test('the docs list every integration kind once, and no other', async (t) => {
  const rows = await documentedKinds();
  t.deepEqual(
    rows.map((r) => r.kind).sort(),
    [...INTEGRATION_KINDS].sort(),
    'docs/integrations.md: one row per kind of src/integrations/kinds.ts',
  );
});

test("the docs say which kinds' secrets svc makes and which are the provider's", async (t) => {
  const secretOf = new Map((await documentedKinds()).map((r) => [r.kind, r.secret]));
  for (const kind of GENERATED_KINDS) t.regex(secretOf.get(kind) ?? '', /^generated/, kind);
  for (const kind of GIVEN_KINDS) t.regex(secretOf.get(kind) ?? '', /^the provider's/, kind);
  const others = INTEGRATION_KINDS.filter((k) => !(GENERATED_KINDS as readonly string[]).includes(k));
  for (const kind of others.filter((k) => !(GIVEN_KINDS as readonly string[]).includes(k)))
    t.notRegex(secretOf.get(kind) ?? '', /^generated|^the provider's/, kind);
});

test('every kind has its settings body and its section in the workspace file, and nothing else does', (t) => {
  t.deepEqual(Object.keys(SETTINGS).sort(), [...INTEGRATION_KINDS].sort());
  const described = documentSchema.describe() as { keys: { integrations: { keys: Record<string, unknown> } } };
  t.deepEqual(Object.keys(described.keys.integrations.keys).sort(), [...INTEGRATION_KINDS].sort());
  const { error } = documentSchema.validate({ version: 1, integrations: { fax: {} } });
  t.truthy(error, 'a kind not in the list is refused in the file');
});
