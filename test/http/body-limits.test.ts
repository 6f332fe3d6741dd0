import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import test from 'ava';
import { removeDir, startServer, type RunningServer } from '../helpers/process.js';

/**
 * Body limits before the body is read (src/http/body-limits.ts), seen from raw sockets, as a
 * client on the network sees them:
 * - a content-length over the route's limit is answered `413 body_too_large` while the client has
 *   sent nothing but its headers (so the server cannot have read the body), then the connection
 *   is closed; with `expect: 100-continue` the client is never told to send it;
 * - each route keeps its own limit (the model routes take 10 MB);
 * - a chunked body that overruns the limit gets a 413 the client actually reads, then a clean
 *   close, never a reset; so does one that overruns and then stalls, and a compressed one that
 *   inflates past the limit;
 * - a body refused for another reason is not read to its end either, and an early answer to a
 *   client still uploading reaches it;
 * - every refusal is logged with the request id, the route and the limit, never the body.
 * The server's request timeout is raised to a minute, so that an answer that waits for the body
 * (as before) cannot pass for one given at once.
 */

const LIMIT = 1_048_576;
const MODEL_LIMIT = 10_485_760;
/** How long a test waits for an answer that must come at once (far below the request timeout). */
const AT_ONCE_MS = 8_000;

let server: RunningServer;

test.before(async () => {
  server = await startServer({ config: { server: { requestTimeoutMs: 60_000 }, load: { sampleIntervalMs: 0 } } });
});

test.after.always(async () => {
  await server?.stop();
  if (server) await Promise.all([removeDir(server.dataDir), removeDir(`${server.dataDir}-config.json`)]);
});

interface Answer {
  status: number;
  headers: Record<string, string>;
  /** The parsed JSON body (every answer here is an error of the documented error shape). */
  body: { error: { type: string; message: string; fix: string; docs: string; requestId: string } };
}

interface Exchange {
  /** The first whole HTTP response on the socket, if one came. */
  answer?: Answer;
  /** Everything the server sent, as text. */
  raw: string;
  /** Body bytes the client had written when the answer was complete. */
  sentAtAnswer?: number;
  /** How the connection ended: 'end' (FIN from the server), an error code, or 'open' (still open at the bound). */
  ending: string;
  /** The answer was complete before the connection ended. */
  answeredBeforeEnd: boolean;
}

function parse(raw: string): Answer | undefined {
  const split = raw.indexOf('\r\n\r\n');
  if (split < 0) return undefined;
  const [statusLine, ...lines] = raw.slice(0, split).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? -1);
  const rest = raw.slice(split + 4);
  if (length < 0 || Buffer.byteLength(rest) < length) return undefined;
  const text = rest.slice(0, length);
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: Number(statusLine!.split(' ')[1]), headers, body: body as Answer['body'] };
}

/**
 * Writes `head` on a new socket, then calls `pump` (which writes body bytes and returns how many
 * it wrote so far), and waits until the server ends the connection or `maxMs` passes.
 */
async function exchange(
  head: string,
  pump?: (socket: Socket, answered: () => boolean) => () => number,
  maxMs = AT_ONCE_MS,
): Promise<Exchange> {
  const url = new URL(server.url);
  const socket = connect(Number(url.port), url.hostname);
  await once(socket, 'connect');
  const result: Exchange = { raw: '', ending: 'open', answeredBeforeEnd: false };
  const counter = { sent: () => 0 };
  socket.setEncoding('utf8');
  const ended = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, maxMs);
    const end = (how: string) => {
      clearTimeout(timer);
      if (result.ending === 'open') result.ending = how;
      resolve();
    };
    socket.on('data', (d: string) => {
      result.raw += d;
      if (!result.answer) {
        result.answer = parse(result.raw);
        if (result.answer) {
          result.sentAtAnswer = counter.sent();
          result.answeredBeforeEnd = true;
        }
      }
    });
    socket.on('end', () => end('end'));
    socket.on('error', (err: NodeJS.ErrnoException) => end(err.code ?? 'error'));
    socket.on('close', () => end('close'));
  });
  socket.write(head);
  if (pump) counter.sent = pump(socket, () => result.answer !== undefined);
  await ended;
  socket.destroy();
  return result;
}

/** Writes chunked body chunks as fast as the socket takes them, until the answer has come. */
function chunkedPump(chunk: Buffer, maxChunks = Infinity) {
  return (socket: Socket, answered: () => boolean) => {
    let sent = 0;
    const framed = Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]);
    const write = () => {
      while (!answered() && !socket.destroyed && sent / chunk.length < maxChunks) {
        sent += chunk.length;
        if (!socket.write(framed)) {
          socket.once('drain', write);
          return;
        }
      }
    };
    socket.on('error', () => {
      /* the server closes after its answer: expected */
    });
    write();
    return () => sent;
  };
}

function requestHead(method: string, path: string, headers: Record<string, string>): string {
  const lines = [
    `${method} ${path} HTTP/1.1`,
    'Host: 127.0.0.1',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  return `${lines.join('\r\n')}\r\n\r\n`;
}

const session = (extra: Record<string, string>) =>
  requestHead('POST', '/api/session', { 'x-svc-csrf': '1', 'content-type': 'application/json', ...extra });

/** Resolves with the server's log lines once one matches (logs are flushed every 200 ms). */
async function logLine(match: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
  const find = () =>
    server
      .stderr()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find(match);
  const deadline = Date.now() + 10_000;
  let found = find();
  while (!found && Date.now() < deadline) {
    await once(server.proc.stderr!, 'data');
    found = find();
  }
  if (!found) throw new Error(`no such log line:\n${server.stderr()}`);
  return found;
}

function assertBodyTooLarge(t: import('ava').ExecutionContext, answer: Answer | undefined, limit: number): void {
  t.truthy(answer, 'a whole HTTP answer was received');
  t.is(answer!.status, 413);
  t.is(answer!.headers.connection, 'close');
  t.like(answer!.body.error, {
    type: 'body_too_large',
    docs: `${server.url}/docs/errors#body_too_large`,
    requestId: answer!.headers['x-request-id'],
  });
  t.regex(answer!.body.error.message, new RegExp(`limit of ${limit} bytes`));
  t.true(answer!.body.error.fix.length > 0);
}

test('a declared 50 MB body is answered 413 while only the headers were sent, then the connection closes', async (t) => {
  // The client declares 50 MB and stalls: it never sends a byte of the body.
  const result = await exchange(session({ 'content-length': String(50 * 1024 * 1024) }));
  assertBodyTooLarge(t, result.answer, LIMIT);
  t.is(result.ending, 'end', 'the server closed the connection after its answer, cleanly');
  const line = await logLine((l) => l.requestId === result.answer!.headers['x-request-id'] && l.level === 40);
  t.like(line, {
    msg: 'request body over the limit refused',
    route: '/api/session',
    declared: 50 * 1024 * 1024,
    limit: LIMIT,
  });
  // The request log has its line too.
  await logLine((l) => l.requestId === result.answer!.headers['x-request-id'] && l.msg === 'request');
});

test('with expect: 100-continue, a body over the limit is refused without telling the client to send it', async (t) => {
  const result = await exchange(session({ 'content-length': String(2 * LIMIT), expect: '100-continue' }));
  t.regex(result.raw, /^HTTP\/1\.1 413 /, 'the first thing the client hears is the 413, not 100 Continue');
  assertBodyTooLarge(t, result.answer, LIMIT);
});

test('each route keeps its own limit: the model routes take up to 10 MB', async (t) => {
  const model = (length: number) =>
    requestHead('POST', '/v1/messages', { 'content-type': 'application/json', 'content-length': String(length) });
  // 2 MB declared is within this route's limit: judged on its credential (none here), not its size.
  const within = await exchange(model(2 * LIMIT));
  t.is(within.answer?.status, 401, within.raw);
  const over = await exchange(model(MODEL_LIMIT + 1));
  assertBodyTooLarge(t, over.answer, MODEL_LIMIT);
});

test('a chunked body that overruns the limit gets a 413 the client reads, then a clean close, not a reset', async (t) => {
  const marker = Buffer.from('"never-logged-body-marker"');
  const chunk = Buffer.concat([marker, Buffer.alloc(64 * 1024 - marker.length, 0x20)]);
  const result = await exchange(session({ 'transfer-encoding': 'chunked' }), chunkedPump(chunk));
  assertBodyTooLarge(t, result.answer, LIMIT);
  t.true(result.answeredBeforeEnd);
  t.not(result.ending, 'ECONNRESET', 'no reset');
  // Far less than the endless body: what the client had in flight when the answer came (the
  // sockets' buffers, and more on a loaded machine, where the answer is scheduled later).
  t.true(result.sentAtAnswer! < 32 * LIMIT, `answered after ${result.sentAtAnswer} bytes`);
  const line = await logLine((l) => l.requestId === result.answer!.headers['x-request-id'] && l.level === 40);
  t.like(line, { msg: 'request body over the limit refused', route: '/api/session', limit: LIMIT });
  t.false(server.stderr().includes('never-logged-body-marker'), 'the body never reaches the log');
});

test('a chunked body that overruns the limit and then stalls gets its 413 at once', async (t) => {
  // 17 chunks of 64 KiB: just over 1 MB, then nothing more.
  const result = await exchange(
    session({ 'transfer-encoding': 'chunked' }),
    chunkedPump(Buffer.alloc(64 * 1024, 0x20), 17),
  );
  assertBodyTooLarge(t, result.answer, LIMIT);
  t.is(result.ending, 'end');
});

test('a compressed chunked body that inflates past the limit is answered 413 at once, not read to its end', async (t) => {
  // 2 MB of spaces compress to about 2 KB; the client then keeps the body open (sends no last chunk).
  const compressed = gzipSync(Buffer.alloc(2 * LIMIT, 0x20));
  const result = await exchange(
    session({ 'transfer-encoding': 'chunked', 'content-encoding': 'gzip' }),
    chunkedPump(compressed, 1),
  );
  assertBodyTooLarge(t, result.answer, LIMIT);
  t.is(result.ending, 'end');
});

test('a body refused for its content type is not read to its end: the answer comes at once, then a close', async (t) => {
  // An endless chunked upload of a type the route does not take (POST /v1/verify takes JSON only).
  const result = await exchange(
    requestHead('POST', '/v1/verify', { 'content-type': 'text/plain', 'transfer-encoding': 'chunked' }),
    chunkedPump(Buffer.alloc(64 * 1024, 0x61)),
  );
  t.is(result.answer?.status, 400, result.raw.slice(0, 300));
  t.is(result.answer?.body.error.type, 'invalid_request');
  t.is(result.answer?.headers.connection, 'close');
  t.not(result.ending, 'ECONNRESET');
  t.not(result.ending, 'open', 'the connection was closed');
});

test('a client still uploading when it is refused (no credential) receives the answer, not a reset', async (t) => {
  // Node's own client writing a 50 MB chunked body as fast as it can, five times over.
  const { hostname, port } = new URL(server.url);
  for (let i = 0; i < 5; i++) {
    const outcome = await new Promise<{ status?: number; error?: string }>((resolve) => {
      const req = httpRequest({
        host: hostname,
        port: Number(port),
        method: 'POST',
        path: '/v1/actions/authorize',
        agent: false,
        headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      });
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode }));
        res.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
      });
      req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
      const chunk = Buffer.alloc(LIMIT, 0x20);
      let n = 0;
      const write = () => {
        while (n < 50) {
          n++;
          if (!req.write(chunk)) {
            req.once('drain', write);
            return;
          }
        }
        req.end();
      };
      write();
    });
    t.deepEqual(outcome, { status: 401 }, `attempt ${i + 1}`);
  }
});

test('bodies within the limit keep the connection alive: two requests with bodies on one socket', async (t) => {
  const url = new URL(server.url);
  const socket = connect(Number(url.port), url.hostname);
  await once(socket, 'connect');
  socket.setEncoding('utf8');
  let raw = '';
  socket.on('data', (d: string) => {
    raw += d;
  });
  const next = async (): Promise<Answer> => {
    for (;;) {
      const answer = parse(raw);
      if (answer) {
        const split = raw.indexOf('\r\n\r\n') + 4;
        raw = raw.slice(split + Number(answer.headers['content-length']));
        return answer;
      }
      const closed = once(socket, 'close').then(() => {
        throw new Error(`the server closed the connection: ${raw}`);
      });
      await Promise.race([once(socket, 'data'), closed]);
    }
  };
  const body = '{"email":"nobody@example.com","password":"not-the-password"}';
  // One with a content-length, one chunked: each is judged (a wrong sign-in), and the socket stays.
  socket.write(session({ 'content-length': String(body.length) }) + body);
  const first = await next();
  t.is(first.status, 401);
  t.is(first.headers.connection, 'keep-alive');
  socket.write(`${session({ 'transfer-encoding': 'chunked' })}${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`);
  const second = await next();
  t.is(second.status, 401);
  t.is(second.headers.connection, 'keep-alive');
  socket.destroy();
});
