import test from 'ava';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, normalize, relative } from 'node:path';
import { ROOT } from '../helpers/process.js';

/**
 * STYLE.md rule 1, enforced: frameworks stay at the edges. Only http.ts files, src/http/ and the
 * server's assembly (src/server.ts) import hapi; only commands/ and src/cli/ import oclif; only
 * src/store/ imports lmdb or the PostgreSQL driver (pg); only src/settings/ reads process.env;
 * services (service.ts) import none of them. STYLE.md rule 7: only a domain's repo.ts (and
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
    `these files use \`.tables\` outside a repo (STYLE.md rule 7): move each read and write into the domain's repo.ts:\n  ${offenders.join('\n  ')}`,
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

test('every file sits in one layer and imports nothing from a layer above its own', async (t) => {
  const files = [...(await sources('src')), ...(await sources('commands'))];
  const unplaced = files.filter((f) => layerOf(f) === -1);
  t.deepEqual(unplaced, [], 'a new top-level file or folder needs a place in LAYERS');
  const upward: string[] = [];
  for (const file of files) {
    const own = layerOf(file);
    for (const spec of importsOf(await readFile(join(ROOT, file), 'utf8'))) {
      if (!spec.startsWith('.')) continue;
      const target = normalize(join(dirname(file), spec)).replace(/\.js$/, '.ts');
      const theirs = layerOf(target);
      if (theirs > own) upward.push(`${file} (${LAYERS[own]!.name}) imports ${target} (${LAYERS[theirs]!.name})`);
    }
  }
  t.deepEqual(upward, []);
});

test('the layers tell the kinds of file apart', (t) => {
  // The check above passes vacuously if the layers cannot tell files apart: pin a few.
  t.true(layerOf('src/http/auth/session.ts') < layerOf('src/people/service.ts'));
  t.true(layerOf('src/people/service.ts') < layerOf('src/people/http.ts'));
  t.true(layerOf('src/integrations/github/verifier.ts') < layerOf('src/integrations/github/http.ts'));
  t.true(layerOf('src/people/http.ts') < layerOf('src/app.ts'));
  t.true(layerOf('src/app.ts') < layerOf('src/server.ts'));
  t.true(layerOf('src/lib/seal.ts') < layerOf('src/store/index.ts'));
});
