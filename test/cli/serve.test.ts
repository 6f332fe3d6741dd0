import { spawn, type ChildProcess } from 'node:child_process';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import test from 'ava';
import { CURRENT_SCHEMA_VERSION } from '../../src/store/index.js';
import { call, csrf } from '../helpers/http.js';
import { BIN, ROOT, cleanEnv, removeDir, tempDir } from '../helpers/process.js';

/**
 * `svc serve` as an operator runs it (no --json): the one-time owner password on stdout, pino
 * JSON logs on stderr, readiness, and a graceful stop on SIGTERM that lets in-flight requests finish.
 */

interface LogLine {
  msg?: string;
  level?: number;
  address?: string;
  [k: string]: unknown;
}

interface Serve {
  proc: ChildProcess;
  url: string;
  stdout(): string;
  stderr(): string;
  logs(): LogLine[];
  /** Resolves with the first log line whose msg matches. */
  waitForLog(msg: string | RegExp): Promise<LogLine>;
  exited: Promise<number | null>;
}

function parseLogs(stderr: string): LogLine[] {
  const out: LogLine[] = [];
  for (const line of stderr.split('\n')) {
    if (!line.trim()) continue;
    try {
      out.push(JSON.parse(line) as LogLine);
    } catch {
      /* not a log line */
    }
  }
  return out;
}

/** Spawns `svc serve` without --json on port 0 and waits for the `listening` log line. */
async function spawnServe(dataDir: string): Promise<Serve> {
  const proc = spawn(process.execPath, [BIN, 'serve', '--data-dir', dataDir, '--host', '127.0.0.1', '--port', '0'], {
    cwd: ROOT,
    env: cleanEnv({ SVC_LOG_LEVEL: 'info' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const waiters: Array<{ match: string | RegExp; resolve(l: LogLine): void }> = [];
  const check = () => {
    const logs = parseLogs(stderr);
    for (const w of [...waiters]) {
      const hit = logs.find(
        (l) => typeof l.msg === 'string' && (typeof w.match === 'string' ? l.msg === w.match : w.match.test(l.msg)),
      );
      if (hit) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(hit);
      }
    }
  };
  proc.stdout!.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  proc.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
    check();
  });
  const exited = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
  const waitForLog = (match: string | RegExp) =>
    new Promise<LogLine>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no log line ${String(match)} within 30 s:\n${stderr}`)), 30_000);
      waiters.push({
        match,
        resolve: (l) => {
          clearTimeout(timer);
          resolve(l);
        },
      });
      void exited.then((code) => {
        clearTimeout(timer);
        reject(new Error(`server exited with ${code} before logging ${String(match)}:\n${stderr}`));
      });
      check();
    });
  const listening = await waitForLog('listening');
  return {
    proc,
    url: String(listening.address),
    exited,
    waitForLog,
    stdout: () => stdout,
    stderr: () => stderr,
    logs: () => parseLogs(stderr),
  };
}

async function stopServe(s: Serve | undefined): Promise<void> {
  if (!s || s.proc.exitCode !== null || s.proc.signalCode !== null) return;
  s.proc.kill('SIGTERM');
  await s.exited;
}

const passwordLine = /One-time password: (\S+)/g;

let dataDir: string;
let first: Serve;
let second: Serve | undefined;

test.before(async () => {
  dataDir = await tempDir('svc-serve-');
  first = await spawnServe(dataDir);
});

test.after.always(async () => {
  await stopServe(first);
  await stopServe(second);
  if (dataDir) await removeDir(dataDir);
});

test.serial('first start on an empty data dir prints the owner and a one-time password once, on stdout', (t) => {
  const out = first.stdout();
  const passwords = [...out.matchAll(passwordLine)];
  t.is(passwords.length, 1, out);
  t.regex(passwords[0]![1]!, /^[A-Za-z0-9_-]{16,}$/);
  t.regex(out, /Owner: admin@localhost/);
  t.regex(out, /Workspace "Default" created \(ws_[0-9A-Za-z]{22}\)/);
  // The password is for the operator's eyes only: never in the logs.
  t.false(first.stderr().includes(passwords[0]![1]!));
});

test.serial(
  'it logs "listening" with the bound address on stderr as pino JSON, and nothing but JSON on stderr',
  (t) => {
    t.regex(first.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    t.not(first.url, 'http://127.0.0.1:0');
    const lines = first
      .stderr()
      .split('\n')
      .filter((l) => l.trim());
    t.true(lines.length > 0);
    for (const line of lines) t.notThrows(() => JSON.parse(line), line);
    const listening = first.logs().find((l) => l.msg === 'listening')!;
    t.is(typeof listening.level, 'number');
    // An ISO 8601 UTC time (issue 18): a time from this run, readable as it is.
    t.regex(String(listening.time), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    t.true(Math.abs(Date.parse(String(listening.time)) - Date.now()) < 60_000);
    // Nothing of the log reaches stdout.
    t.false(first.stdout().includes('"msg"'));
  },
);

test.serial('the printed one-time password signs in as the owner of "Default"', async (t) => {
  const password = [...first.stdout().matchAll(passwordLine)][0]![1]!;
  const res = await call(first.url, 'POST', '/api/session', {
    headers: csrf,
    json: { email: 'admin@localhost', password },
  });
  t.is(res.status, 200, res.text);
  t.is(res.body.user.email, 'admin@localhost');
  t.is(res.body.workspaces.length, 1);
  t.like(res.body.workspaces[0], { name: 'Default', role: 'owner' });
  t.regex(String(res.headers['set-cookie']), /^sid=/);
  const wrong = await call(first.url, 'POST', '/api/session', {
    headers: csrf,
    json: { email: 'admin@localhost', password: `${password}x` },
  });
  t.is(wrong.status, 401);
});

test.serial('GET /readyz answers 200 ready with the schema version', async (t) => {
  const res = await call(first.url, 'GET', '/readyz');
  t.is(res.status, 200);
  t.deepEqual(res.body, { status: 'ready', schemaVersion: CURRENT_SCHEMA_VERSION });
});

test.serial(
  'SIGTERM with a request in flight: the request is answered, then the process exits 0 and logs stopped',
  async (t) => {
    const password = [...first.stdout().matchAll(passwordLine)][0]![1]!;
    const body = Buffer.from(JSON.stringify({ email: 'admin@localhost', password }));
    const half = Math.floor(body.length / 2);
    const { port } = new URL(first.url);

    // Expect: 100-continue makes the server say when it has dispatched the request and started
    // reading its body, so the stop below lands on a request that is really in flight.
    const req = httpRequest({
      host: '127.0.0.1',
      port: Number(port),
      method: 'POST',
      path: '/api/session',
      agent: false,
      headers: {
        'content-type': 'application/json',
        'content-length': String(body.length),
        expect: '100-continue',
        ...csrf,
      },
    });
    const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
      req.on('response', (res: IncomingMessage) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          text += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', reject);
      });
      req.on('error', reject);
    });
    const continued = new Promise<void>((r) => req.once('continue', () => r()));
    req.flushHeaders();
    await continued;
    await new Promise<void>((r) => req.write(body.subarray(0, half), () => r()));

    first.proc.kill('SIGTERM');
    await first.waitForLog(/^stopping/);
    req.end(body.subarray(half));

    const res = await answered;
    t.is(res.status, 200, res.body);
    t.is(JSON.parse(res.body).user.email, 'admin@localhost');
    t.is(await first.exited, 0, first.stderr());
    t.truthy(
      first.logs().find((l) => l.msg === 'stopped'),
      first.stderr(),
    );
    // Still exactly one password over the whole life of the process.
    t.is([...first.stdout().matchAll(passwordLine)].length, 1);
  },
);

test.serial(
  'a second start on the same data dir prints no password, and the first password still signs in',
  async (t) => {
    await stopServe(first);
    second = await spawnServe(dataDir);
    t.false(/password/i.test(second.stdout()), second.stdout());
    t.is(second.stdout().trim(), '');
    const password = [...first.stdout().matchAll(passwordLine)][0]![1]!;
    const res = await call(second.url, 'POST', '/api/session', {
      headers: csrf,
      json: { email: 'admin@localhost', password },
    });
    t.is(res.status, 200, res.text);
    const ready = await call(second.url, 'GET', '/readyz');
    t.deepEqual(ready.body, { status: 'ready', schemaVersion: CURRENT_SCHEMA_VERSION });
  },
);
