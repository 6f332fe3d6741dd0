import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { errorsDocsPage } from '../../src/errors/docs-page.js';
import { initArgs, removeDir, svc, tempDir } from '../helpers/process.js';

/**
 * Every failure under --json is one `{error: {type, message, fix, exitCode}}` document on stdout,
 * a mistyped command included, with a fix that says what to do; and every type `svc` prints has
 * its section on the errors page (/docs/errors), where an error's `docs` link leads.
 */

let base = '';
let dataDir = '';
test.before(async () => {
  base = await tempDir();
  dataDir = join(base, 'data');
  const res = await svc(initArgs(dataDir), { timeoutMs: 120_000 });
  if (res.code !== 0) throw new Error(`init failed: ${res.stderr}`);
  await writeFile(join(base, 'not-a-key-set.json'), '{"nope":1}');
});
test.after.always(async () => removeDir(base));

const cases: Array<{ args: () => string[]; env?: Record<string, string>; type: string; exit: number }> = [
  { args: () => ['ledgr', 'verify', '--json'], type: 'usage', exit: 2 },
  { args: () => ['zzzz', '--json'], type: 'usage', exit: 2 },
  { args: () => ['keys', 'list', '--no-such-flag', '--json'], type: 'usage', exit: 2 },
  { args: () => ['stop-all', 'on', '--local', '--data-dir', dataDir, '--json'], type: 'reason_required', exit: 2 },
  {
    args: () => ['stop-all', 'on', '--reason', ' ', '--local', '--data-dir', dataDir, '--json'],
    type: 'reason_required',
    exit: 2,
  },
  {
    args: () => [
      'tokens',
      'create',
      '--local',
      '--data-dir',
      dataDir,
      '--name',
      'ci',
      '--scope',
      'agents:read',
      '--expires-in-days',
      '0',
      '--json',
    ],
    type: 'invalid_request',
    exit: 2,
  },
  {
    args: () => ['agents', 'list', '--local', '--data-dir', dataDir, '--json'],
    env: { SVC_LOG_LEVEL: 'loud' },
    type: 'invalid_configuration',
    exit: 2,
  },
  {
    args: () => ['receipt', 'verify', 'a.b.c', '--jwks', join(base, 'not-a-key-set.json'), '--json'],
    type: 'invalid_jwks',
    exit: 2,
  },
];

test('every --json failure prints the error document with a fix, and its type is on the errors page', async (t) => {
  const page = errorsDocsPage();
  for (const c of cases) {
    const args = c.args();
    const res = await svc(args, { env: c.env ?? {}, timeoutMs: 60_000 });
    const label = args.join(' ');
    t.is(res.code, c.exit, `${label}: ${res.stderr}`);
    t.not(res.stdout.trim(), '', `${label}: something on stdout`);
    const { error } = JSON.parse(res.stdout) as { error: Record<string, unknown> };
    t.is(error.type, c.type, label);
    t.is(error.exitCode, c.exit, label);
    t.true(typeof error.message === 'string' && error.message.length > 0, label);
    t.true(typeof error.fix === 'string' && error.fix.length > 0, `${label}: a fix`);
    t.true(page.includes(`id="${c.type}"`), `${c.type} on /docs/errors`);
  }
});

test('a mistyped command under --json names the nearest command in its message and fix', async (t) => {
  const res = await svc(['ledgr', 'verify', '--json']);
  const { error } = JSON.parse(res.stdout) as { error: { message: string; fix: string } };
  t.regex(error.message, /"ledgr verify" is not a command\. Did you mean "ledger verify"\?/);
  t.regex(error.fix, /svc ledger verify/);
  t.is(res.stderr, '');
});

test('a file that cannot be read is named with the reason in words, never a raw errno', async (t) => {
  const missing = join(base, 'missing.json');
  for (const { args, type } of [
    { args: ['receipt', 'verify', 'a.b.c', '--jwks', missing], type: 'invalid_jwks' },
    { args: ['ledger', 'verify', '--bundle', missing], type: 'invalid_request' },
    { args: ['serve', '--config', missing, '--data-dir', dataDir], type: 'invalid_configuration' },
  ]) {
    const res = await svc([...args, '--json'], { timeoutMs: 60_000 });
    t.is(res.code, 2, `${args.join(' ')}: ${res.stderr}`);
    const { error } = JSON.parse(res.stdout) as { error: { type: string; message: string; fix: string } };
    t.is(error.type, type);
    t.true(error.message.includes(`${missing}: there is no such file`), error.message);
    t.notRegex(error.message, /ENOENT|errno/);
    t.true(error.fix.length > 0);
  }
});
