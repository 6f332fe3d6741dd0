import { connect } from 'node:net';
import { performance } from 'node:perf_hooks';

/**
 * The fuzz campaign's two instruments: a raw HTTP/1.1 client, which sends the request's bytes as
 * they are (a malformed escape, a NUL, bytes that are not UTF-8 in the path or the body: what an
 * HTTP library would refuse to send), and a watch on the event loop of this process, where the
 * server runs.
 */

export interface WireRequest {
  method: string;
  /** The request target as sent: path and query, already escaped (or deliberately not). */
  target: string;
  headers: [string, string][];
  body?: Buffer;
}

export interface WireAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** The answer was an event stream: its head was read and the connection closed. */
  streamed: boolean;
}

/** Sends one request on a connection of its own (Connection: close); undefined when nothing answered in time. */
export function send(port: number, request: WireRequest, timeoutMs: number): Promise<WireAnswer | undefined> {
  const bytes = raw(request, port);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let done = false;
    const socket = connect(port, '127.0.0.1');
    const finish = (answer: WireAnswer | undefined) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    socket.on('error', () => finish(parse(Buffer.concat(chunks), false)));
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      const sofar = Buffer.concat(chunks);
      const parsed = parse(sofar, true);
      if (parsed?.streamed) finish(parsed);
    });
    socket.on('end', () => finish(parse(Buffer.concat(chunks), false)));
    socket.write(bytes);
  });
}

/** The request's bytes on the wire, as sent to 127.0.0.1:port (Connection: close). */
export function raw(request: WireRequest, port: number): Buffer {
  const head =
    `${request.method} ${request.target} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nconnection: close\r\n` +
    request.headers.map(([name, value]) => `${name}: ${value}\r\n`).join('') +
    (request.body ? `content-length: ${request.body.length}\r\n` : '') +
    '\r\n';
  return Buffer.concat([Buffer.from(head, 'latin1'), request.body ?? Buffer.alloc(0)]);
}

/** The answer in these bytes; with `partial`, only an event stream's head (anything else waits for the end). */
function parse(bytes: Buffer, partial: boolean): WireAnswer | undefined {
  const end = bytes.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const [statusLine = '', ...lines] = bytes.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    headers[name] =
      headers[name] === undefined ? line.slice(colon + 1).trim() : `${headers[name]}, ${line.slice(colon + 1).trim()}`;
  }
  const status = Number(statusLine.split(' ')[1]);
  const streamed = (headers['content-type'] ?? '').includes('text/event-stream');
  if (partial && !streamed) return undefined;
  const rest = bytes.subarray(end + 4);
  const body = /chunked/i.test(headers['transfer-encoding'] ?? '') ? unchunk(rest) : rest;
  return { status, headers, body, streamed };
}

function unchunk(bytes: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = bytes.indexOf('\r\n', at);
    if (eol === -1) break;
    const size = parseInt(bytes.subarray(at, eol).toString('latin1'), 16);
    if (!(size > 0)) break;
    parts.push(bytes.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

/**
 * How long the event loop was held, measured as the main thread's own CPU time between two ticks
 * of a 10 ms timer, counted only for gaps that began while a request was in flight. CPU time, not
 * the wall clock: on a busy machine a process that is merely waiting for a core shows long gaps
 * between its timers without having blocked anything, and those gaps are not the server's doing.
 */
export class LoopWatch {
  private timer: NodeJS.Timeout | undefined;
  private lastWall = performance.now();
  private lastCpu = cpuMs();
  private since: number | undefined;
  private worst = 0;

  start(): void {
    this.lastWall = performance.now();
    this.lastCpu = cpuMs();
    this.timer = setInterval(() => this.tick(), 10);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Marks a request as sent; `end()` gives the longest hold of the loop since (ms of CPU). */
  begin(): void {
    this.tick();
    this.since = this.lastWall;
    this.worst = 0;
  }

  end(): number {
    this.tick();
    this.since = undefined;
    return this.worst;
  }

  private tick(): void {
    const wall = performance.now();
    const cpu = cpuMs();
    if (this.since !== undefined && this.lastWall >= this.since)
      this.worst = Math.max(this.worst, Math.min(wall - this.lastWall, cpu - this.lastCpu));
    this.lastWall = wall;
    this.lastCpu = cpu;
  }
}

function cpuMs(): number {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1000;
}
