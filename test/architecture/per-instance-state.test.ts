import test from 'ava';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import ts from 'typescript';
import { sources } from '../helpers/imports.js';
import { ROOT } from '../helpers/process.js';

/**
 * What one process keeps that another process or instance does not see. Every Map, Set, WeakMap,
 * WeakSet or GenerationCache of src/ that lives longer than a call (made at a module's top level,
 * in a class field, or in the body of a service's factory: `createX`, `openX`, `registerX`,
 * `memoryX`, `startX`) is found here by reading the source, and must be in STATE below with what
 * it is:
 * - `per-instance`: state of this process that gives no limit and no decision another process
 *   would decide otherwise (a cache of what the store or an outside party holds, work in flight,
 *   connections, sessions, breakers, counts written behind within milliseconds); each such file is
 *   named in docs/operations.md's "What stays per instance", which the README points to;
 * - `constant`: built once from the settings or the code, or a pure function's memo; no request
 *   changes what it answers;
 * - `request`: keyed by one request's, socket's or write's own object, gone with it;
 * - `store`: the store's own machinery in this process;
 * - `tests`: never the server's (an in-memory stand-in for a shared mechanism).
 * A new one not listed fails the test: a rate limit or a decision must not be kept in a process
 * (store/counters.ts holds the rate limits' windows for every process). Constants named in
 * capitals (`const RETRYABLE = new Set([...])`) are taken as constants when the file never
 * changes them.
 */

type Kind = 'per-instance' | 'constant' | 'request' | 'store' | 'tests';

const STATE: Record<string, Kind> = {
  'src/agent-signing/service.ts unsealed': 'per-instance',
  'src/gateway/breaker.ts state': 'per-instance',
  'src/gateway/cache.ts pending': 'per-instance',
  'src/gateway/calls.ts newTasks': 'per-instance',
  'src/gateway/calls.ts counts': 'per-instance',
  'src/gateway/calls.ts countsWriting': 'per-instance',
  'src/gateway/deployments.ts catalogue': 'constant',
  'src/gateway/deployments.ts current': 'per-instance',
  'src/gateway/deployments.ts coolUntil': 'per-instance',
  'src/gateway/drops.ts byWorkspace': 'per-instance',
  'src/gateway/limits.ts byScope': 'constant',
  'src/gateway/limits.ts pending': 'per-instance',
  'src/gateway/limits.ts writing': 'per-instance',
  'src/gateway/limits.ts versions': 'per-instance',
  'src/gateway/service.ts providers': 'constant',
  'src/gateway/service.ts upstreams': 'per-instance',
  'src/gateway/service.ts profiles': 'constant',
  'src/gateway/service.ts catalogue': 'constant',
  'src/gateway/steps/plan.ts allowances': 'request',
  'src/gateway/steps/prices.ts counting': 'request',
  'src/gateway/steps/prices.ts counted': 'request',
  'src/gateway/tokens.ts pending': 'per-instance',
  'src/gateway/vendors/bedrock-sign.ts signers': 'constant',
  'src/http/body-limits.ts lingering': 'request',
  'src/http/rate-limit.ts counts': 'per-instance',
  'src/http/system.ts rechecking': 'store',
  'src/store/pg-tx.ts seen': 'request',
  'src/store/pg-tx.ts base': 'request',
  'src/store/pg-tx.ts pending': 'request',
  'src/store/pg-tx.ts covered': 'request',
  'src/integrations/github/callbacks.ts inFlight': 'per-instance',
  'src/integrations/registry.ts opened': 'per-instance',
  'src/integrations/ssf/keys.ts cache': 'per-instance',
  'src/integrations/ssf/keys.ts lastFetch': 'per-instance',
  'src/integrations/ssf/keys.ts inFlight': 'per-instance',
  'src/keys/service.ts resolved': 'per-instance',
  'src/ledger/tiles.ts cache': 'per-instance',
  'src/ledger/witness.ts states': 'per-instance',
  'src/lib/generation-cache.ts entries': 'per-instance',
  'src/lib/money.ts formats': 'constant',
  'src/mcp/listings.ts listings': 'per-instance',
  'src/mcp/listings.ts relisting': 'per-instance',
  'src/mcp/local-servers.ts resolved': 'per-instance',
  'src/mcp/local-servers.ts running': 'per-instance',
  'src/mcp/local-servers.ts crashes': 'per-instance',
  'src/mcp/modern.ts watches': 'per-instance',
  'src/mcp/pins.ts hashed': 'constant',
  'src/mcp/reuse.ts entries': 'per-instance',
  'src/mcp/reuse.ts idle': 'per-instance',
  'src/mcp/sessions.ts sessions': 'per-instance',
  'src/mcp/upstream-auth/tokens.ts refreshing': 'per-instance',
  'src/mcp/upstream-sessions.ts open': 'per-instance',
  'src/mcp/upstream-sessions.ts live': 'per-instance',
  'src/oauth/client-metadata.ts cache': 'per-instance',
  'src/oauth/client-metadata.ts inFlight': 'per-instance',
  'src/receipts/verify.ts imported': 'constant',
  'src/retention/sweeper.ts cursors': 'per-instance',
  'src/signing/service.ts unsealed': 'per-instance',
  'src/signing/service.ts sets': 'per-instance',
  'src/store/counters.ts windows': 'tests',
  'src/store/kv-lmdb.ts pending': 'store',
  'src/store/kv-lmdb.ts faultWaiters': 'store',
  'src/store/kv-lmdb.ts lockFiles': 'store',
  'src/webhooks/dispatch.ts inFlight': 'per-instance',
  'src/webhooks/service.ts targets': 'constant',
};

const COLLECTIONS = new Set(['Map', 'WeakMap', 'Set', 'WeakSet', 'GenerationCache']);
const FACTORY = /^(create|open|register|memory|start)[A-Z]/;

interface Found {
  id: string;
  name: string;
  file: string;
  text: string;
}

/** The name a `new X(...)` is bound to: a variable, a class field, an object's property, an assignment's target. */
function boundName(node: ts.Node): string {
  for (let p: ts.Node | undefined = node.parent; p && !ts.isSourceFile(p); p = p.parent) {
    if (ts.isVariableDeclaration(p) || ts.isPropertyDeclaration(p) || ts.isPropertyAssignment(p))
      return p.name.getText();
    if (ts.isBinaryExpression(p) && p.operatorToken.kind === ts.SyntaxKind.EqualsToken) return p.left.getText();
    if (ts.isFunctionLike(p)) break;
  }
  return '?';
}

/** The name of a top-level function: declared, or a const bound to an arrow or function expression. */
function functionName(node: ts.Node): string {
  if (ts.isFunctionDeclaration(node)) return node.name?.text ?? '';
  if (ts.isVariableDeclaration(node.parent) || ts.isPropertyAssignment(node.parent)) return node.parent.name.getText();
  return '';
}

/** The collections of a file that live longer than a call (see above). */
export function longLived(file: string, text: string): Found[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const out: Found[] = [];
  const visit = (node: ts.Node, depth: number, inFactory: boolean, inClassField: boolean) => {
    if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && COLLECTIONS.has(node.expression.text)) {
      if (depth === 0 || inClassField || (depth === 1 && inFactory)) {
        const name = boundName(node);
        out.push({ id: `${file} ${name}`, name, file, text });
      }
    }
    let d = depth;
    let factory = inFactory;
    let field = inClassField;
    if (ts.isFunctionLike(node)) {
      d += 1;
      factory = d === 1 && FACTORY.test(functionName(node));
      field = false;
    }
    if (ts.isPropertyDeclaration(node) && depth === 0) field = true;
    ts.forEachChild(node, (child) => visit(child, d, factory, field));
  };
  visit(source, 0, false, false);
  return out;
}

/** A constant by its name (capitals) that its file never adds to, sets, deletes from or clears. */
function unchangedConstant(f: Found): boolean {
  if (!/^[A-Z][A-Z0-9_]*$/.test(f.name)) return false;
  return !new RegExp(`\\b${f.name}\\.(add|set|delete|clear)\\(`).test(f.text);
}

async function scan(): Promise<Found[]> {
  const out: Found[] = [];
  for (const file of await sources('src')) {
    if (file.includes('/generated/') || file.startsWith('src/console/browser/')) continue;
    out.push(...longLived(file, await readFile(join(ROOT, file), 'utf8')));
  }
  return out;
}

/** The text of a markdown section, from its heading to the next heading of the same or a higher level. */
function section(markdown: string, heading: string): string {
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => l.replace(/^#+\s*/, '') === heading && /^#+\s/.test(l));
  if (start < 0) return '';
  const level = /^#+/.exec(lines[start]!)![0].length;
  const end = lines.findIndex((l, i) => i > start && /^#+\s/.test(l) && /^#+/.exec(l)![0].length <= level);
  return lines.slice(start, end < 0 ? undefined : end).join('\n');
}

test('the reader finds what lives longer than a call, not what a call makes', (t) => {
  const text = [
    'const cache = new Map<string, number>();',
    'const RETRY = new Set([1, 2]);',
    'export function createThing() {',
    '  const windows = new Map();',
    '  const step = () => { const local = new Map(); return local; };',
    '  return { profiles: new Map() };',
    '}',
    'function helper() { const groups = new Map(); return groups; }',
    'class Holder { private readonly entries = new Map(); }',
  ].join('\n');
  t.deepEqual(
    longLived('src/x.ts', text).map((f) => f.name),
    ['cache', 'RETRY', 'windows', 'profiles', 'entries'],
  );
});

test('every collection that outlives a call is listed with what it is; none gives a limit or a decision', async (t) => {
  const found = await scan();
  const unlisted = found.filter((f) => STATE[f.id] === undefined && !unchangedConstant(f)).map((f) => f.id);
  t.deepEqual(
    unlisted,
    [],
    'list each in STATE (and docs/operations.md for per-instance state), or move it to the store',
  );
  const ids = new Set(found.map((f) => f.id));
  t.deepEqual(
    Object.keys(STATE).filter((id) => !ids.has(id)),
    [],
    'listed but no longer in the source: remove from STATE',
  );
  t.log(
    `${found.length} long-lived collections, ${Object.values(STATE).filter((k) => k === 'per-instance').length} per instance`,
  );
});

test('docs/operations.md\'s "What stays per instance" names every file of per-instance state, and the README points to it', async (t) => {
  const ops = section(await readFile(join(ROOT, 'docs/operations.md'), 'utf8'), 'What stays per instance');
  t.not(ops, '', 'docs/operations.md has a "What stays per instance" section');
  const files = [
    ...new Set(
      Object.entries(STATE)
        .filter(([, kind]) => kind === 'per-instance')
        .map(([id]) => id.split(' ')[0]!),
    ),
  ];
  t.deepEqual(
    files.filter((file) => !ops.includes(`\`${file}\``)),
    [],
  );
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  t.true(readme.includes('docs/operations.md#what-stays-per-instance'), 'the README links the list');
});
