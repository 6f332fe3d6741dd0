import test from 'ava';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, normalize, relative } from 'node:path';
import { ROOT } from '../helpers/process.js';

/**
 * The layer rules, enforced: frameworks stay at the edges. Only http.ts files, src/http/ and the
 * server's assembly (src/server.ts) import hapi; only commands/ and src/cli/ import oclif; only
 * src/store/ imports lmdb or the PostgreSQL driver (pg); only src/settings/ reads process.env;
 * services (service.ts) import none of them. And only a domain's repo.ts (and
 * src/store/ itself) touches the store's tables.
 */
async function sources(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(join(ROOT, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await sources(path)));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

const importsOf = (text: string) => [...text.matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)].map((m) => m[1]!);

const rules: Array<{ name: string; matches: (spec: string) => boolean; allowed: (file: string) => boolean }> = [
  {
    name: '@hapi',
    matches: (s) => s.startsWith('@hapi/'),
    allowed: (f) => f.startsWith('src/http/') || f.endsWith('/http.ts') || f === 'src/server.ts',
  },
  {
    name: '@oclif',
    matches: (s) => s.startsWith('@oclif/'),
    allowed: (f) => f.startsWith('commands/') || f.startsWith('src/cli/'),
  },
  { name: 'lmdb', matches: (s) => s === 'lmdb' || s.startsWith('lmdb/'), allowed: (f) => f.startsWith('src/store/') },
  {
    // The PostgreSQL driver and its companions (pg-pool, pg-cursor, pg-copy-streams, …).
    name: 'pg',
    matches: (s) => s === 'pg' || s.startsWith('pg/') || s.startsWith('pg-'),
    allowed: (f) => f.startsWith('src/store/'),
  },
];

test('frameworks are imported only at the edges', async (t) => {
  const files = [...(await sources('src')), ...(await sources('commands'))];
  t.true(files.length > 20, 'the scan found the sources');
  const offenders: string[] = [];
  for (const file of files) {
    const rel = relative(ROOT, join(ROOT, file));
    for (const spec of importsOf(await readFile(join(ROOT, file), 'utf8'))) {
      for (const rule of rules) if (rule.matches(spec) && !rule.allowed(rel)) offenders.push(`${rel} imports ${spec}`);
    }
  }
  t.deepEqual(offenders, []);
});

test('only src/settings reads process.env', async (t) => {
  const offenders: string[] = [];
  for (const file of [...(await sources('src')), ...(await sources('commands'))]) {
    if (file.startsWith('src/settings/')) continue;
    if (/process\.env\b/.test(await readFile(join(ROOT, file), 'utf8'))) offenders.push(file);
  }
  t.deepEqual(offenders, []);
});

test('service modules import no framework', async (t) => {
  const offenders: string[] = [];
  for (const file of (await sources('src')).filter((f) => f.endsWith('/service.ts'))) {
    for (const spec of importsOf(await readFile(join(ROOT, file), 'utf8'))) {
      if (rules.some((r) => r.matches(spec))) offenders.push(`${file} imports ${spec}`);
    }
  }
  t.deepEqual(offenders, []);
});

test('the import rules know both store drivers', (t) => {
  // The scan above passes vacuously for a driver no rule matches: pin both, and a look-alike.
  const matched = (spec: string) => rules.filter((r) => r.matches(spec)).map((r) => r.name);
  t.deepEqual(matched('lmdb'), ['lmdb']);
  t.deepEqual(matched('pg'), ['pg']);
  t.deepEqual(matched('pg-cursor'), ['pg']);
  t.deepEqual(matched('pgpass'), []);
});

/** The text of a source file without its comments (block comments, and lines that are a // comment). */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
const TABLES = /\.tables\b/;
/** Where src/ may touch the store's tables: a domain's repo.ts, and the store itself. */
const mayTouchTables = (file: string) => file.startsWith('src/store/') || file.endsWith('/repo.ts');

test('only repo.ts files (and src/store/) touch the store tables', async (t) => {
  const files = await sources('src');
  const repos = files.filter((f) => f.endsWith('/repo.ts'));
  t.true(repos.length > 0, 'the scan found the repos');
  t.true(
    TABLES.test(code(await readFile(join(ROOT, 'src/agents/repo.ts'), 'utf8'))),
    'the check sees a repo use .tables',
  );
  const offenders: string[] = [];
  for (const file of files) {
    if (mayTouchTables(file)) continue;
    if (TABLES.test(code(await readFile(join(ROOT, file), 'utf8')))) offenders.push(file);
  }
  t.deepEqual(
    offenders,
    [],
    `these files use \`.tables\` outside a repo: move each read and write into the domain's repo.ts:\n  ${offenders.join('\n  ')}`,
  );
});

test('the tables rule tells code from comments and repos from the rest', (t) => {
  t.true(TABLES.test(code('const a = await store.tables.agents.get(k);')));
  t.true(TABLES.test(code('const t = store.tables;')));
  t.false(TABLES.test(code('// store.tables is the write transaction here\n/** or store.tables */ const x = 1;')));
  t.true(mayTouchTables('src/agents/repo.ts'));
  t.true(mayTouchTables('src/store/open.ts'));
  t.false(mayTouchTables('src/agents/service.ts'));
  t.false(mayTouchTables('src/gate/repository.ts'));
});

test('commands hold no business logic: none reaches into the store tables directly', async (t) => {
  const offenders: string[] = [];
  for (const file of await sources('commands')) {
    if (TABLES.test(code(await readFile(join(ROOT, file), 'utf8')))) offenders.push(file);
  }
  t.deepEqual(offenders, []);
});

/**
 * The layers of the code, lowest first. A file may import files of its own layer and of the
 * layers below it, never of one above: the shared HTTP pieces know no domain (what they need of
 * one, they declare and are given), no domain service imports a route plugin, and only the
 * composition root, the server's assembly and the CLI see everything. Within a layer the order
 * is free (a domain may use another domain's service; one route plugin may use another's
 * schemas).
 */
/** Written by the build (scripts/generate-cli.mjs): the lazy index oclif runs commands from, and the classes. */
const COMMAND_INDEXES = ['src/cli/generated/commands.ts', 'src/cli/generated/command-classes.ts'];
const LAYERS: ReadonlyArray<{ name: string; holds: (file: string) => boolean }> = [
  { name: 'lib', holds: (f) => f.startsWith('src/lib/') },
  { name: 'errors', holds: (f) => f.startsWith('src/errors/') },
  { name: 'settings', holds: (f) => f.startsWith('src/settings/') },
  { name: 'store', holds: (f) => f.startsWith('src/store/') },
  { name: 'http (shared)', holds: (f) => f.startsWith('src/http/') },
  { name: 'domains', holds: (f) => isDomainFile(f) && !f.endsWith('/http.ts') },
  { name: "route plugins (a domain's http.ts)", holds: (f) => isDomainFile(f) && f.endsWith('/http.ts') },
  { name: 'composition root', holds: (f) => f === 'src/app.ts' },
  { name: 'server assembly', holds: (f) => f === 'src/server.ts' },
  { name: 'cli', holds: (f) => f.startsWith('src/cli/') && !COMMAND_INDEXES.includes(f) },
  { name: 'commands', holds: (f) => f.startsWith('commands/') },
  { name: 'command index', holds: (f) => COMMAND_INDEXES.includes(f) },
];
const BELOW_DOMAINS = ['lib', 'errors', 'settings', 'store', 'http', 'cli'];
function isDomainFile(f: string): boolean {
  const m = /^src\/([^/]+)\//.exec(f);
  return m !== null && !BELOW_DOMAINS.includes(m[1]!);
}
function layerOf(file: string): number {
  return LAYERS.findIndex((l) => l.holds(file));
}

/**
 * The one exception to the layers, narrow on purpose: the store's table registry (tables.ts)
 * names the type of each table's values, and those shapes belong to the domains that write them,
 * in their records.ts. So tables.ts may `import type` from a `src/<domain>/records.ts`: erased at
 * compile time, it makes the store depend on no domain code at run time, provided the records.ts
 * files hold types only (checked below). Any other upward import, or a value import, stays an error.
 */
const REGISTRY = 'src/store/tables.ts';
const RECORDS = /^src\/[^/]+\/records\.ts$/;
/** A domain's lists of kinds (`as const`), which its records.ts may derive types from. */
const KINDS = /^src\/[^/]+\/kinds\.ts$/;
function allowedUpward(file: string, target: string, typeOnly: boolean): boolean {
  return file === REGISTRY && RECORDS.test(target) && typeOnly;
}

/** The relative specifiers a file imports or re-exports, each with whether its statement is `import type` / `export type`. */
function relativeImportsOf(text: string): Array<{ spec: string; typeOnly: boolean }> {
  const out: Array<{ spec: string; typeOnly: boolean }> = [];
  for (const m of code(text).matchAll(/^(import|export)\b([^;]*?)(?:from\s*)?['"](\.[^'"]+)['"]/gm)) {
    out.push({ spec: m[3]!, typeOnly: /^\s+type\s*[{*]/.test(m[2]!) });
  }
  for (const m of text.matchAll(/import\s*\(\s*['"](\.[^'"]+)['"]/g)) out.push({ spec: m[1]!, typeOnly: false });
  return out;
}

test('every file sits in one layer and imports nothing from a layer above its own', async (t) => {
  const files = [...(await sources('src')), ...(await sources('commands'))];
  const unplaced = files.filter((f) => layerOf(f) === -1);
  t.deepEqual(unplaced, [], 'a new top-level file or folder needs a place in LAYERS');
  const upward: string[] = [];
  let excepted = 0;
  for (const file of files) {
    const own = layerOf(file);
    const text = await readFile(join(ROOT, file), 'utf8');
    const typeOnly = new Map<string, boolean>();
    for (const { spec, typeOnly: only } of relativeImportsOf(text))
      typeOnly.set(spec, (typeOnly.get(spec) ?? true) && only);
    for (const spec of importsOf(text)) {
      if (!spec.startsWith('.')) continue;
      const target = normalize(join(dirname(file), spec)).replace(/\.js$/, '.ts');
      const theirs = layerOf(target);
      if (theirs <= own) continue;
      if (allowedUpward(file, target, typeOnly.get(spec) ?? false)) excepted++;
      else upward.push(`${file} (${LAYERS[own]!.name}) imports ${target} (${LAYERS[theirs]!.name})`);
    }
  }
  t.deepEqual(upward, []);
  t.true(excepted > 0, 'the check sees the registry import the record types');
});

test('the registry imports record types only, and records.ts files hold types only', async (t) => {
  const records = (await sources('src')).filter((f) => RECORDS.test(f));
  t.true(records.length > 10, 'the scan found the records.ts files');
  const offenders: string[] = [];
  // tables.ts: every import of a records.ts is an `import type`.
  for (const { spec, typeOnly } of relativeImportsOf(await readFile(join(ROOT, REGISTRY), 'utf8'))) {
    const target = normalize(join(dirname(REGISTRY), spec)).replace(/\.js$/, '.ts');
    if (RECORDS.test(target) && !typeOnly) offenders.push(`${REGISTRY} imports ${target} without \`import type\``);
  }
  for (const file of records) {
    const text = await readFile(join(ROOT, file), 'utf8');
    offenders.push(...runtimeIn(text).map((line) => `${file}: ${line}`));
    // A records.ts imports types only, and only from another records.ts, a domain's kinds.ts,
    // src/lib/ or src/settings/ (the settings' declared shapes, such as RateLimits, stand on a
    // floor below the store).
    for (const { spec, typeOnly } of relativeImportsOf(text)) {
      const target = normalize(join(dirname(file), spec)).replace(/\.js$/, '.ts');
      if (
        !typeOnly ||
        !(
          RECORDS.test(target) ||
          KINDS.test(target) ||
          target.startsWith('src/lib/') ||
          target.startsWith('src/settings/')
        )
      )
        offenders.push(`${file} imports ${spec}`);
    }
    for (const spec of importsOf(text)) if (!spec.startsWith('.')) offenders.push(`${file} imports ${spec}`);
  }
  // A kinds.ts (a domain's list of kinds, `as const`, that its record types derive from) imports nothing.
  for (const file of (await sources('src')).filter((f) => KINDS.test(f))) {
    for (const spec of importsOf(await readFile(join(ROOT, file), 'utf8'))) offenders.push(`${file} imports ${spec}`);
  }
  t.deepEqual(offenders, [], 'records.ts files are types only: the store imports them (the layers exception above)');
});

/**
 * The top-level lines of a file that may be runtime code: a records.ts holds `export interface`,
 * `export type` and `import type`/`export type` statements only (their bodies are indented, or
 * close at the margin). Anything else at the margin (function, class, const, let, var, enum, a
 * value import or export) is flagged.
 */
function runtimeIn(text: string): string[] {
  const typeLine = /^(?:export\s+)?(?:interface|type)\b|^import\s+type\b|^export\s+type\b|^[})\]|&]/;
  return code(text)
    .split('\n')
    .filter((line) => line.trim() !== '' && !/^\s/.test(line) && !typeLine.test(line));
}

test('the layers tell the kinds of file apart', (t) => {
  // The check above passes vacuously if the layers cannot tell files apart: pin a few.
  t.true(layerOf('src/http/auth/session.ts') < layerOf('src/people/service.ts'));
  t.true(layerOf('src/people/service.ts') < layerOf('src/people/http.ts'));
  t.true(layerOf('src/integrations/github/verifier.ts') < layerOf('src/integrations/github/http.ts'));
  t.true(layerOf('src/people/http.ts') < layerOf('src/app.ts'));
  t.true(layerOf('src/app.ts') < layerOf('src/server.ts'));
  t.true(layerOf('src/lib/seal.ts') < layerOf('src/store/index.ts'));
  // The registry's exception is that narrow: tables.ts, a records.ts, `import type`.
  t.true(allowedUpward('src/store/tables.ts', 'src/agents/records.ts', true));
  t.false(allowedUpward('src/store/tables.ts', 'src/agents/records.ts', false));
  t.false(allowedUpward('src/store/tables.ts', 'src/agents/service.ts', true));
  t.false(allowedUpward('src/store/open.ts', 'src/agents/records.ts', true));
  t.false(allowedUpward('src/store/tables.ts', 'src/gateway/limits/records.ts', true));
  t.deepEqual(relativeImportsOf("import type { A } from './a.js';\nimport { b, type B } from './b.js';"), [
    { spec: './a.js', typeOnly: true },
    { spec: './b.js', typeOnly: false },
  ]);
});

test('the records check tells types from runtime code', (t) => {
  t.deepEqual(
    runtimeIn(
      "import type { A } from './a.js';\n/** doc\n * const x */\nexport interface R {\n  a: A;\n}\nexport type K = 'a'\n  | 'b';\nexport type { A };\n",
    ),
    [],
  );
  for (const line of [
    'export const X = 1;',
    'const x = 1;',
    'let y = 2;',
    'var z = 3;',
    'export function f() {}',
    'export class C {}',
    'export enum E { A }',
    "import { a } from './a.js';",
    "export { a } from './a.js';",
    'export default {};',
  ]) {
    t.deepEqual(runtimeIn(`${line}\n`), [line], line);
  }
});
