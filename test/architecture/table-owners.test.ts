import test from 'ava';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tableSpec } from '../../src/store/tables.js';
import { sources } from '../helpers/imports.js';
import { ROOT } from '../helpers/process.js';

/**
 * One owner per table: every table of the store is written (put, remove) from one domain folder
 * of src/ only. What a domain does to another's records goes through a declared in-write
 * contract the owner gives (approvals' `openInWrite`, the gate's PendingActions, agents'
 * `setHoldsInWrite`, the principal-ended hooks, ledger subscribers), never through a write of its
 * own to that table. The store itself (src/store/: migrations, backends) is not a domain.
 */

const TABLES = new Set(Object.keys(tableSpec));

/** The text without comments. */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');

/** The tables a file writes: `t.<table>.put(`, `tx.<table>.remove(`, `tables.<table>.put(`. */
function tablesWritten(text: string): string[] {
  const out = new Set<string>();
  for (const m of code(text).matchAll(/\b(?:t|tx|tables)\.(\w+)\.(?:put|remove)\(/g))
    if (TABLES.has(m[1]!)) out.add(m[1]!);
  return [...out];
}

/** Each table, with the domain folders that write it and their files. */
async function writers(): Promise<Map<string, Map<string, string[]>>> {
  const found = new Map<string, Map<string, string[]>>();
  for (const file of await sources('src')) {
    const folder = file.split('/')[1]!;
    if (folder === 'store' || folder.endsWith('.ts') || file.includes('/generated/')) continue;
    for (const table of tablesWritten(await readFile(join(ROOT, file), 'utf8'))) {
      if (!found.has(table)) found.set(table, new Map());
      const folders = found.get(table)!;
      folders.set(folder, [...(folders.get(folder) ?? []), file]);
    }
  }
  return found;
}

test('the reader finds the writes of a table, not its reads nor a service of the same name', (t) => {
  const text = [
    'await t.agents.put([a.workspaceId, a.id], a);',
    'await tx.pendingApprovals.remove(key);',
    'await t.approvals.get([wid, id]);',
    'await agents.remove(wid, aid, who);',
    '// await t.actions.put(key, action);',
  ].join('\n');
  t.deepEqual(tablesWritten(text).sort(), ['agents', 'pendingApprovals']);
});

test('every table is written from one domain folder only', async (t) => {
  const found = await writers();
  t.true(found.get('agents')?.has('agents'), 'the scan finds the agents repo writing agents');
  const shared = [...found]
    .filter(([, folders]) => folders.size > 1)
    .map(([table, folders]) => `${table}: ${[...folders.values()].flat().join(', ')}`);
  t.log(`${found.size} tables written, ${shared.length} by more than one domain`);
  t.deepEqual(shared, []);
});

test('the decision tables have the owners the code declares', async (t) => {
  const found = await writers();
  const owners = (table: string) => [...(found.get(table)?.values() ?? [])].flat();
  t.deepEqual(owners('agents'), ['src/agents/repo.ts']);
  t.deepEqual(owners('actions'), ['src/gate/repo.ts']);
  t.deepEqual(owners('approvals'), ['src/approvals/repo.ts']);
  t.deepEqual(owners('pendingApprovals'), ['src/approvals/repo.ts']);
  t.deepEqual(owners('stopAll'), ['src/killswitch/repo.ts']);
});

test('only a repo.ts writes a table', async (t) => {
  const outside = [...(await writers()).values()]
    .flatMap((folders) => [...folders.values()].flat())
    .filter((file) => !file.endsWith('/repo.ts'));
  t.deepEqual([...new Set(outside)], []);
});
