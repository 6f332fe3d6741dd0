import test from 'ava';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { ROOT } from '../helpers/process.js';

/**
 * STYLE.md rule 1, enforced: frameworks stay at the edges. Only http.ts files, src/http/ and the
 * server's assembly (src/server.ts) import hapi; only commands/ and src/cli/ import oclif; only
 * src/store/ imports lmdb; only src/settings/ reads process.env; services (service.ts) import none
 * of them.
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

test('commands hold no business logic: none reaches into the store tables directly', async (t) => {
  const offenders: string[] = [];
  for (const file of await sources('commands')) {
    if (/\.tables\./.test(await readFile(join(ROOT, file), 'utf8'))) offenders.push(file);
  }
  t.deepEqual(offenders, []);
});
