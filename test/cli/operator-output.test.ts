import { spawn } from 'node:child_process';
import { join } from 'node:path';
import test from 'ava';
import { entryOf } from '../../src/errors/catalogue.js';
import { BIN, cleanEnv, removeDir, ROOT, startServer, svc, tempDir } from '../helpers/process.js';

/**
 * Issue 18, items 5 and 9: the exit codes are listed in `svc --help` (and each operator error in
 * the catalogue names its exit status); `svc serve` on a terminal prints readable lines, and
 * JSON lines with ISO 8601 times everywhere else.
 */

const dirs: string[] = [];
test.after.always(async () => {
  for (const d of dirs) await removeDir(d);
});

test('svc --help lists the exit codes 0 to 4', async (t) => {
  const res = await svc(['--help'], { timeoutMs: 120_000 });
  t.is(res.code, 0, res.stderr);
  t.regex(res.stdout, /EXIT CODES/);
  for (const [code, words] of [
    ['0', /success/],
    ['1', /ran and failed/],
    ['2', /usage or configuration/],
    ['3', /open the store.*master key|master key.*port/s],
    ['4', /refused without running/],
  ] as const) {
    t.regex(res.stdout, new RegExp(`^\\s+${code}\\s+`, 'm'), code);
    t.regex(res.stdout, words, code);
  }
});

test('the operator errors carry exit 3 and a fix in the catalogue', (t) => {
  for (const type of [
    'store_not_found',
    'store_damaged',
    'master_key_missing',
    'master_key_mismatch',
    'port_in_use',
    'address_unavailable',
    'permission_denied',
    'not_a_directory',
    'disk_full',
  ] as const) {
    t.is(entryOf(type).exit, 3, type);
    t.true(entryOf(type).fix.length > 20, type);
  }
  t.regex(entryOf('port_in_use').fix, /--port/);
  t.regex(entryOf('port_in_use').fix, /SVC_PORT/);
  t.regex(entryOf('store_damaged').message, /^store file damaged: restore from backup/);
});

test('svc serve not on a terminal logs JSON lines with ISO 8601 UTC times', async (t) => {
  const server = await startServer();
  dirs.push(server.dataDir);
  await server.stop();
  const lines = server
    .stderr()
    .split('\n')
    .filter((l) => l.trim().length > 0);
  const listening = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'listening');
  t.truthy(listening, server.stderr());
  t.regex(String(listening!.time), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  t.is(listening!.address, server.url);
});

test('svc serve on a terminal prints readable lines, not JSON', async (t) => {
  const base = await tempDir();
  dirs.push(base);
  const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;
  const command = [process.execPath, BIN, 'serve', '--data-dir', join(base, 'data'), '--port', '0']
    .map(quote)
    .join(' ');
  const env = cleanEnv({ TERM: 'xterm', SVC_LOG_LEVEL: 'info' });
  delete env.CI;
  // util-linux `script` runs it on a pseudo-terminal, as a person at a terminal would.
  const child = spawn('script', ['-qec', command, '/dev/null'], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  const seen = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 120_000);
    child.stdout.on('data', (d: Buffer) => {
      output += d.toString();
      if (/listening/.test(output) && /http:\/\/127\.0\.0\.1:\d+/.test(output)) {
        clearTimeout(timer);
        resolve(true);
      }
    });
    child.on('close', () => resolve(false));
  });
  child.kill('SIGTERM');
  t.true(seen, output);
  // Without colours' escape codes, the line reads: [2026-11-24 05:12:44.171] INFO: listening {"address":"http://…"}
  // eslint-disable-next-line no-control-regex -- ANSI colour codes of the terminal output
  const plain = output.replace(/\u001b\[[0-9;]*m/g, '');
  t.regex(
    plain,
    /^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}\] INFO: listening \{"address":"http:\/\/127\.0\.0\.1:\d+"\}/m,
  );
  t.notRegex(plain, /"level":30/, 'no JSON lines on a terminal');
  t.regex(plain, /One-time password: \S{24}/);
});
