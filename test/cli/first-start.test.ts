import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server } from 'node:net';
import { join, resolve } from 'node:path';
import test from 'ava';
import { call, csrf, signIn, type Json } from '../helpers/http.js';
import { signInUrl } from '../../src/cli/serve-text.js';
import {
  BIN,
  ROOT,
  cleanEnv,
  removeDir,
  startServer,
  stopAndClean,
  svc,
  tempDir,
  type RunningServer,
} from '../helpers/process.js';

/**
 * Issue 18, item 1: a first start cannot lock anyone out. The port is bound before the first
 * workspace and its owner exist, so a start that cannot listen leaves nothing whose one-time
 * password nobody saw; and `svc owner reset-password --local` recovers an owner's access.
 */

const servers: RunningServer[] = [];
const dirs: string[] = [];
test.after.always(async () => {
  for (const s of servers) await stopAndClean(s);
  for (const d of dirs) await removeDir(d);
});

async function holdPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { port: (server.address() as { port: number }).port, server };
}

test('a first start on a busy port exits 3 (port_in_use) and creates no owner; the next start prints the password', async (t) => {
  const base = await tempDir();
  dirs.push(base);
  const dataDir = join(base, 'data');
  const held = await holdPort();
  try {
    const busy = await svc([
      'serve',
      '--data-dir',
      dataDir,
      '--host',
      '127.0.0.1',
      '--port',
      String(held.port),
      '--json',
    ]);
    t.is(busy.code, 3, busy.stderr);
    const doc = JSON.parse(busy.stdout) as Json;
    t.is(doc.error.type, 'port_in_use');
    t.regex(doc.error.message, new RegExp(`127\\.0\\.0\\.1:${held.port}`));
    t.regex(doc.error.fix, /--port/);
    t.regex(doc.error.fix, /SVC_PORT/);
    t.is(doc.error.exitCode, 3);

    const human = await svc(['serve', '--data-dir', dataDir, '--host', '127.0.0.1', '--port', String(held.port)]);
    t.is(human.code, 3);
    t.regex(human.stderr, /port is in use/);
    t.regex(human.stderr, /--port/);
    t.notRegex(human.stderr, /EADDRINUSE|errno|syscall/, 'no raw errno object');
  } finally {
    held.server.close();
  }

  const server = await startServer({ dataDir });
  servers.push(server);
  t.truthy(server.boot.owner, 'the start that could listen created the owner and printed the password');
  const res = await call(server.url, 'POST', '/api/session', {
    headers: csrf,
    json: { email: server.boot.owner!.email, password: server.boot.owner!.password },
  });
  t.is(res.status, 200, res.text);
  t.true(res.body.user.mustChangePassword);
});

test('svc owner reset-password --local: a new one-time password, the old one and every session ended, a ledger record', async (t) => {
  const server = await startServer();
  servers.push(server);
  const owner = server.boot.owner!;
  const oldCookie = await signIn(server.url, owner.email, owner.password);
  t.is((await call(server.url, 'GET', '/api/me', { headers: { cookie: oldCookie } })).status, 200);

  const reset = await svc([
    'owner',
    'reset-password',
    '--email',
    owner.email,
    '--local',
    '--data-dir',
    server.dataDir,
    '--json',
  ]);
  t.is(reset.code, 0, reset.stderr);
  const done = JSON.parse(reset.stdout) as Json;
  t.is(done.email, owner.email);
  t.is(done.sessionsEnded, 1);
  t.deepEqual(done.workspaces, [server.boot.workspaceId]);
  t.regex(done.password, /^[A-Za-z0-9_-]{24}$/);
  t.not(done.password, owner.password);

  // The running server sees it at once: the session is gone, the old password refused.
  t.is((await call(server.url, 'GET', '/api/me', { headers: { cookie: oldCookie } })).status, 401);
  const old = await call(server.url, 'POST', '/api/session', {
    headers: csrf,
    json: { email: owner.email, password: owner.password },
  });
  t.is(old.status, 401);
  // The new one signs in, and must be replaced before anything else.
  const cookie = await signIn(server.url, owner.email, done.password);
  const me = await call(server.url, 'GET', '/api/me', { headers: { cookie } });
  t.true(me.body.user.mustChangePassword);
  const changed = await call(server.url, 'PUT', '/api/me/password', {
    headers: { ...csrf, cookie },
    json: { currentPassword: done.password, newPassword: 'a password of my own choosing' },
  });
  t.is(changed.status, 200, changed.text);
  const fresh = await signIn(server.url, owner.email, 'a password of my own choosing');
  const ledger = await call(server.url, 'GET', `/api/w/${server.boot.workspaceId}/ledger`, {
    headers: { cookie: fresh },
  });
  t.is(ledger.status, 200, ledger.text);
  const records = ledger.body.data as Json[];
  const record = records.find((r: Json) => r.kind === 'member.password_reset');
  t.truthy(record, JSON.stringify(records.map((r: Json) => r.kind)));
  t.is(record.actor, 'system');
  t.is(record.subject, done.userId);
  t.is(record.data.sessionsEnded, 1);
  t.false(JSON.stringify(record).includes(done.password), 'the password is not in the ledger');

  // Without --local it is a usage error; an unknown email is refused without changing anything.
  const remote = await svc(['owner', 'reset-password', '--email', owner.email, '--json']);
  t.is(remote.code, 2);
  t.is((JSON.parse(remote.stdout) as Json).error.type, 'usage');
  const unknown = await svc([
    'owner',
    'reset-password',
    '--email',
    'nobody@example.com',
    '--local',
    '--data-dir',
    server.dataDir,
    '--json',
  ]);
  t.is(unknown.code, 1);
  t.is((JSON.parse(unknown.stdout) as Json).error.type, 'not_found');
});

test('the first start prints the whole sign-in URL of the bound port, the password, and the npx svc command that prints a new one', async (t) => {
  const base = await tempDir();
  dirs.push(base);
  const dataDir = join(base, 'data');
  // As an operator runs it, without --json: the banner on stdout, the log on stderr.
  const proc = spawn(process.execPath, [BIN, 'serve', '--data-dir', dataDir, '--host', '127.0.0.1', '--port', '0'], {
    cwd: ROOT,
    env: cleanEnv({ SVC_LOG_LEVEL: 'info' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const exited = once(proc, 'exit');
  const banner = new Promise<void>((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`no banner within 60 s:\n${stdout}\n${stderr}`)), 60_000);
    const check = () => {
      if (/prints a new one\./.test(stdout) && /"listening"/.test(stderr)) {
        clearTimeout(timer);
        done();
      }
    };
    proc.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      check();
    });
    proc.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      check();
    });
    void exited.then(() => fail(new Error(`svc serve exited:\n${stderr}`)));
  });
  try {
    await banner;
    const listening = stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Json)
      .find((l) => l.msg === 'listening')!;
    const bound = String(listening.address);
    t.regex(bound, /^http:\/\/127\.0\.0\.1:\d+$/);
    t.not(new URL(bound).port, '0');

    // The whole URL: scheme, host, the port actually bound, the sign-in path; it opens the sign-in page.
    const url = /Sign in at (\S+) and choose your own/.exec(stdout)?.[1];
    t.is(url, `${bound}/login`, stdout);
    const page = await fetch(url!);
    t.is(page.status, 200);
    t.regex(await page.text(), /<form id="signin"/);

    // The printed password signs in there.
    const password = /One-time password: (\S+)/.exec(stdout)![1]!;
    const signIn = await call(new URL(url!).origin, 'POST', '/api/session', {
      headers: csrf,
      json: { email: 'admin@localhost', password },
    });
    t.is(signIn.status, 200, signIn.text);

    // The command for a lost password, as a checkout runs it (npx), naming this data dir.
    const command = /Lost it\? `([^`]+)` prints a new one\./.exec(stdout)?.[1];
    t.is(command, `npx svc owner reset-password --email admin@localhost --local --data-dir ${resolve(dataDir)}`);
    // It works as printed (what follows `npx svc` is svc's arguments; npx runs this checkout's bin/run.js).
    const words = command!.split(' ');
    t.deepEqual(words.slice(0, 2), ['npx', 'svc']);
    const reset = await svc([...words.slice(2), '--json']);
    t.is(reset.code, 0, reset.stderr);
    const fresh = (JSON.parse(reset.stdout) as Json).password as string;
    const again = await call(new URL(url!).origin, 'POST', '/api/session', {
      headers: csrf,
      json: { email: 'admin@localhost', password: fresh },
    });
    t.is(again.status, 200, again.text);
  } finally {
    proc.kill('SIGTERM');
    await exited;
  }
});

test('the sign-in URL of a server bound to every interface names this machine', (t) => {
  t.is(signInUrl('http://0.0.0.0:8080'), 'http://127.0.0.1:8080/login');
  t.is(signInUrl('http://[::]:9090'), 'http://[::1]:9090/login');
  t.is(signInUrl('http://127.0.0.1:41234'), 'http://127.0.0.1:41234/login');
  t.is(signInUrl('https://svc.example'), 'https://svc.example/login');
});
