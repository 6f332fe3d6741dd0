/**
 * Hardening of the listening server (src/server.ts, src/http/guards.ts, settings):
 * - a chunked body over the limit is refused with 413 as it streams in, not after it all arrived;
 * - a slow-loris socket is closed once headersTimeout has passed (checked every second);
 * - a malformed request is answered 400 (a stalled one 408) from the catalogue, with a request id,
 *   and the server keeps serving;
 * - over the configured load, 503 overloaded with retry-after, while health routes still answer;
 * - a bad configuration value stops `svc serve` with a message naming the field.
 */
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { call, csrf, type Json, type Reply } from '../helpers/http.js';
import { removeDir, svc, tempDir } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { poll } from '../helpers/wait.js';

const LIMIT = 1_048_576;

let server: ServedInProcess;
let loaded: ServedInProcess;
const temps: string[] = [];

test.before(async () => {
  [server, loaded] = await Promise.all([
    serveInProcess({ productTimeouts: true }),
    serveInProcess({
      config: { load: { maxHeapUsedBytes: 1, sampleIntervalMs: 50 }, observability: { metricsPort: 0 } },
      logLevel: 'info',
    }),
  ]);
});

test.after.always(async () => {
  await Promise.all([server?.stop(), loaded?.stop()]);
  // serveInProcess writes the config file beside the data dir.
  const leftovers = [server?.dataDir, loaded?.dataDir, loaded && `${loaded.dataDir}-config.json`, ...temps];
  await Promise.all(leftovers.filter((d): d is string => !!d).map((d) => removeDir(d)));
});

interface UploadResult {
  status?: number;
  body?: Json;
  /** Bytes written when the answer arrived. */
  sentAtResponse?: number;
  sent: number;
  error?: string;
}

/**
 * POSTs a chunked body (no content-length) of up to `total` bytes in 64 KiB chunks, honouring
 * backpressure, and stops writing as soon as an answer arrives.
 */
function chunkedUpload(
  base: string,
  path: string,
  headers: Record<string, string>,
  total: number,
): Promise<UploadResult> {
  const url = new URL(base);
  return new Promise((resolve) => {
    const result: UploadResult = { sent: 0 };
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => {
      result.error ??= 'no answer within 20 s';
      finish();
    }, 20_000);
    const req = httpRequest({
      host: url.hostname,
      port: url.port,
      method: 'POST',
      path,
      headers: { ...headers, 'transfer-encoding': 'chunked' },
    });
    const chunk = Buffer.alloc(64 * 1024, 'a');
    req.on('response', (res) => {
      result.status = res.statusCode;
      result.sentAtResponse = result.sent;
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        text += d;
      });
      res.on('end', () => {
        try {
          result.body = JSON.parse(text);
        } catch {
          result.body = text;
        }
        finish();
      });
      res.on('error', (err) => {
        result.error ??= err.message;
        finish();
      });
    });
    // After an answer, the server may close the socket under our writes: that is expected.
    req.on('error', (err) => {
      if (result.status === undefined) {
        result.error ??= `${(err as NodeJS.ErrnoException).code ?? ''} ${err.message}`;
        finish();
      }
    });
    const pump = () => {
      while (!settled && result.status === undefined && result.sent < total) {
        result.sent += chunk.length;
        if (!req.write(chunk)) {
          req.once('drain', pump);
          return;
        }
      }
      if (!settled && result.status === undefined && result.sent >= total) req.end();
    };
    pump();
  });
}

/** Opens a raw socket, writes `data`, and resolves when the server closes it (or `maxMs` passes). */
async function rawExchange(
  base: string,
  data: string,
  maxMs: number,
): Promise<{ closed: boolean; ms: number; received: string }> {
  const url = new URL(base);
  const socket = connect(Number(url.port), url.hostname);
  await once(socket, 'connect');
  const started = Date.now();
  let received = '';
  socket.setEncoding('utf8');
  socket.on('data', (d: string) => {
    received += d;
  });
  socket.on('error', () => {
    /* a reset also counts as closed */
  });
  socket.write(data);
  let timer: NodeJS.Timeout | undefined;
  const closed = await Promise.race([
    once(socket, 'close').then(() => true),
    new Promise<false>((r) => {
      timer = setTimeout(() => r(false), maxMs);
    }),
  ]);
  clearTimeout(timer);
  const ms = Date.now() - started;
  socket.destroy();
  return { closed, ms, received };
}

test('a chunked upload over 1 MB is answered 413 body_too_large before it is all sent', async (t) => {
  const total = 16 * LIMIT;
  const result = await chunkedUpload(
    server.url,
    '/api/session',
    { ...csrf, 'content-type': 'application/json' },
    total,
  );
  t.is(result.status, 413, `no 413: ${result.error ?? JSON.stringify(result.body)} after ${result.sent} bytes sent`);
  t.is(result.body?.error?.type, 'body_too_large');
  t.is(result.body?.error?.docs, `${server.url}/docs/errors#body_too_large`);
  t.true(
    result.sentAtResponse !== undefined && result.sentAtResponse < total,
    `answered after ${result.sentAtResponse} of ${total} bytes`,
  );
  // The server is unharmed.
  t.is((await call(server.url, 'GET', '/healthz')).status, 200);
});

test('a chunked upload under the limit is read whole (the limit is not hit early)', async (t) => {
  // A 256 KiB body that is not a valid sign-in: judged on its content, not its size.
  const result = await chunkedUpload(
    server.url,
    '/api/session',
    { ...csrf, 'content-type': 'application/json' },
    256 * 1024,
  );
  t.is(result.status, 400, result.error ?? JSON.stringify(result.body));
  t.is(result.body?.error?.type, 'invalid_json');
});

test('a slow-loris socket is closed after headersTimeout', async (t) => {
  // Defaults: headersTimeout 2000 ms, checked every 1000 ms: closed between 2 and about 3 s.
  const result = await rawExchange(server.url, 'GET /healthz HTTP/1.1\r\nHost: x\r\n', 6_000);
  t.true(result.closed, 'still open after 6 s');
  t.true(result.ms < 6_000, `${result.ms} ms`);
  t.true(result.ms >= 1_800, `closed after ${result.ms} ms, before headersTimeout`);
  // Answered from the catalogue like every other error: 408 request_timeout with a request id.
  t.regex(result.received, /^HTTP\/1\.1 408 /);
  const requestId = /\r\nx-request-id: (req_\w+)\r\n/.exec(result.received)?.[1];
  t.truthy(requestId);
  const body = JSON.parse(result.received.slice(result.received.indexOf('\r\n\r\n') + 4));
  t.like(body.error, { type: 'request_timeout', requestId });
  t.is((await call(server.url, 'GET', '/healthz')).status, 200);
});

test('the server keeps serving after a malformed request line or header', async (t) => {
  for (const junk of [
    'THIS IS NOT HTTP\r\n\r\n',
    'GET /healthz HTTP/1.1\r\nHost x\r\n\r\n',
    '\u0000\u0001\u0002\r\n\r\n',
  ]) {
    const result = await rawExchange(server.url, junk, 6_000);
    t.true(result.closed, JSON.stringify(junk));
    t.regex(result.received, /^HTTP\/1\.1 400 /, JSON.stringify(junk));
    t.regex(result.received, /\r\nsvc-version: 2026-10-01\r\n/);
    const requestId = /\r\nx-request-id: (req_\w+)\r\n/.exec(result.received)?.[1];
    const body = JSON.parse(result.received.slice(result.received.indexOf('\r\n\r\n') + 4));
    t.like(body.error, { type: 'invalid_request', requestId, docs: `${server.url}/docs/errors#invalid_request` });
  }
  const health = await call(server.url, 'GET', '/healthz');
  t.is(health.status, 200);
  t.deepEqual(health.body, { status: 'ok' });
});

test('over the load limit: 503 overloaded with retry-after; /healthz and /readyz still answer', async (t) => {
  // Heavy samples every 50 ms; any heap is over 1 byte. Poll briefly for the first sample.
  const res: Reply | undefined = await poll(
    () => call(loaded.url, 'GET', '/v1/models'),
    (r) => r.status === 503,
    { timeoutMs: 5_000 },
  );
  t.is(res!.status, 503, res!.text);
  t.regex(String(res!.headers['content-type']), /^application\/json/);
  const error = res!.body.error;
  t.is(error.type, 'overloaded');
  t.is(error.requestId, res!.headers['x-request-id']);
  t.is(error.docs, `${loaded.url}/docs/errors#overloaded`);
  t.true(typeof error.fix === 'string' && error.fix.length > 0);
  t.regex(String(res!.headers['retry-after']), /^[1-9]\d*$/);

  const health = await call(loaded.url, 'GET', '/healthz');
  t.is(health.status, 200);
  t.deepEqual(health.body, { status: 'ok' });
  const ready = await call(loaded.url, 'GET', '/readyz');
  t.is(ready.status, 200);
  t.is(ready.body.status, 'ready');
});

test('a shed request is logged at warn without a stack, and counted in svc_http_requests_shed_total', async (t) => {
  const shed = await poll(
    () => call(loaded.url, 'GET', '/v1/models'),
    (r) => r.status === 503,
    { timeoutMs: 5_000 },
  );
  const requestId = String(shed!.headers['x-request-id']);
  const lines = loaded
    .logs()
    .split('\n')
    .filter((l) => l.includes(requestId))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const line = lines.find((l) => l.msg === 'request shed: the server is overloaded');
  t.like(line, { level: 40, requestId }, loaded.logs().slice(-2000));
  t.false(JSON.stringify(lines).includes('stack'), 'no stack in any line of the shed request');
  t.false(
    lines.some((l) => Number(l.level) >= 50),
    'nothing at error level',
  );
  const exposition = await (await fetch(loaded.http.metricsUrl()!)).text();
  const count = /^svc_http_requests_shed_total (\d+)$/m.exec(exposition);
  t.truthy(count, exposition.slice(0, 500));
  t.true(Number(count![1]) >= 1);
});

test('a bad value in the config file stops svc serve, naming the field', async (t) => {
  const dir = await tempDir('svc-badconfig-');
  temps.push(dir);
  const file = join(dir, 'config.json');
  await writeFile(file, JSON.stringify({ server: { port: 'abc' }, limits: { bodyBytes: 10 } }));
  const result = await svc(
    ['serve', '--json', '--data-dir', join(dir, 'data'), '--host', '127.0.0.1', '--config', file],
    { timeoutMs: 20_000 },
  );
  t.not(result.code, 0);
  const output = result.stdout + result.stderr;
  t.regex(output, /server\.port/);
  t.regex(output, /limits\.bodyBytes/);
  t.notRegex(output, /listening/);
  const printed = JSON.parse(result.stdout);
  t.is(printed.error.type, 'invalid_configuration');
  t.regex(printed.error.message, /server\.port/);
});

test('a bad SVC_PORT stops svc serve, naming server.port', async (t) => {
  const dir = await tempDir('svc-badenv-');
  temps.push(dir);
  const result = await svc(['serve', '--data-dir', join(dir, 'data'), '--host', '127.0.0.1'], {
    env: { SVC_PORT: 'abc' },
    timeoutMs: 20_000,
  });
  t.is(result.code, 2, 'a configuration error is a usage error');
  t.regex(result.stdout + result.stderr, /server\.port/);
  t.notRegex(result.stdout + result.stderr, /listening/);
});
