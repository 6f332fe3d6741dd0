import { closeSync, openSync, readSync, readlinkSync } from 'node:fs';
import type { Server as NodeServer, IncomingMessage, ServerResponse } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import { setImmediate as nextCheck } from 'node:timers/promises';

/**
 * The graceful drain on SIGTERM, on the Node server in front of hapi. Rules, in order:
 * 1. The moment the drain begins, every answer not yet started carries `connection: close`
 *    (requests already in flight, requests still queued on a keep-alive socket, and any request
 *    that arrives later on a connection that was open before), so each client learns from its
 *    last answer that the connection ends, and Node closes it after that answer.
 * 2. New connections are refused: the listening socket is closed, but only once the connections
 *    the kernel had already completed when the drain began are taken from it. Those are open for
 *    their clients, whose requests are often already sent, yet Node has not accepted them: libuv
 *    accepts one connection per turn of the event loop (libuv #3696), so under load (clients that
 *    reconnect after every answer) dozens wait in the listen queue, and closing the listening
 *    socket makes the kernel reset every one of them. So the drain first shrinks the socket's
 *    backlog to nothing, so that the kernel completes no new connection while the queue holds one
 *    (those clients retry the handshake later and find the port closed: refused), then counts the
 *    queue (Linux: the listening socket's receive queue in /proc/net/tcp), and closes the
 *    listening socket as the last of those is accepted, before any answer lets a client connect
 *    again; or sooner, when a turn of the loop accepted none, or at the timeout. Each is answered
 *    as in rule 1. Where the queue cannot be read (not Linux; a cluster worker sharing its
 *    primary's socket) the listening socket is closed at once.
 * 3. An idle keep-alive connection is never cut before the keep-alive time the server advertised
 *    on it (`Keep-Alive: timeout=5`; Node closes it after that, plus its buffer). Cutting it sooner
 *    races the client's next request, which a client cannot tell from a lost one (nodejs/node
 *    #60617); clients that honour the hint (undici, Node's agent) stop using it before then.
 *    Node's own `server.close()` and hapi's `server.stop()` cut idle sockets at once, so neither
 *    is used to begin the drain: hapi is stopped after it, on a server with no connections left.
 * 4. The drain ends when every connection has closed, or at the timeout (`server.shutdownTimeoutMs`),
 *    when what is left is destroyed.
 */
export interface Drain {
  /** True from the moment the drain begins (readiness answers 503 draining). */
  draining(): boolean;
  /** Begins the drain and resolves when no connection is left (at most `timeoutMs`). */
  drain(timeoutMs: number): Promise<void>;
}

export function trackDrain(listener: NodeServer): Drain {
  const sockets = new Set<Socket>();
  // Answers whose headers may not be written yet.
  const pending = new Set<ServerResponse>();
  let draining = false;
  let idle: (() => void) | undefined;
  // Rule 2: the connections still to take from the listen queue before it is closed.
  let toAccept = 0;
  let listening = true;
  // net.Server's close stops accepting without http.Server's closeIdleConnections (rule 3).
  const stopListening = () => {
    if (!listening) return;
    listening = false;
    NetServer.prototype.close.call(listener);
  };

  listener.on('connection', (socket: Socket) => {
    // Closed as the last one queued is accepted, before any answer lets a client connect again.
    if (draining && --toAccept <= 0) stopListening();
    sockets.add(socket);
    socket.once('close', () => {
      sockets.delete(socket);
      if (sockets.size === 0) idle?.();
    });
  });
  // First among the request listeners, so that answers written at once (health) are marked too.
  const onRequest = (_req: IncomingMessage, res: ServerResponse) => {
    if (draining) {
      res.setHeader('connection', 'close');
      return;
    }
    pending.add(res);
    res.once('close', () => pending.delete(res));
  };
  listener.prependListener('request', onRequest);
  listener.prependListener('checkContinue', onRequest);

  return {
    draining: () => draining,
    async drain(timeoutMs) {
      if (draining) return;
      draining = true;
      for (const res of pending) if (!res.headersSent) res.setHeader('connection', 'close');
      pending.clear();
      const deadline = Date.now() + timeoutMs;
      // Shrunk first, so that the queue cannot grow while it is counted.
      if (listenAgain(listener, 0)) toAccept = listenQueueLength(listener) ?? 0;
      while (listening && toAccept > 0 && Date.now() < deadline) {
        const left = toAccept;
        // Two check phases have a whole poll phase between them, where libuv accepts one.
        await nextCheck();
        await nextCheck();
        if (toAccept === left) break;
      }
      stopListening();
      if (sockets.size > 0) {
        let timer: NodeJS.Timeout | undefined;
        await new Promise<void>((resolve) => {
          idle = resolve;
          timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
        });
        clearTimeout(timer);
      }
      for (const socket of sockets) socket.destroy();
    },
  };
}

/** The listening socket's file descriptor, where Node has one (not in a cluster worker it shares). */
function listenerFd(listener: NetServer): number | undefined {
  const fd = (listener as unknown as { _handle?: { fd?: unknown } | null })._handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : undefined;
}

/**
 * Sets the listening socket's backlog (rule 2): listen(2) on a socket that already listens only
 * changes it, and Linux completes no handshake while the accept queue holds more than the backlog.
 * True when it was set.
 */
function listenAgain(listener: NetServer, backlog: number): boolean {
  const handle = (listener as unknown as { _handle?: { listen?: (backlog: number) => number } | null })._handle;
  return listenerFd(listener) !== undefined && handle?.listen?.(backlog) === 0;
}

/**
 * How many connections the kernel has completed on the listening socket that Node has not yet
 * accepted (rule 2), or undefined where that cannot be read. Linux lists each TCP socket in
 * /proc/net/tcp (tcp6 for IPv6) with its inode, the listening ones first; for those (state 0A)
 * the receive queue is the accept queue. Only that first part is read: the whole table lists
 * every connection on the host, tens of milliseconds for a few thousand.
 */
function listenQueueLength(listener: NetServer): number | undefined {
  const fd = listenerFd(listener);
  if (fd === undefined) return undefined;
  try {
    const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`))?.[1];
    if (inode === undefined) return undefined;
    return listenerRow(inode, '/proc/net/tcp') ?? listenerRow(inode, '/proc/net/tcp6');
  } catch {
    // No /proc (not Linux, or hidden): the count is unknown.
    return undefined;
  }
}

/** The receive queue of the listening socket `inode` in a /proc/net/tcp table, read until its listeners end. */
function listenerRow(inode: string, table: string): number | undefined {
  const file = openSync(table, 'r');
  try {
    const chunk = Buffer.alloc(64 * 1024);
    let rest = '';
    let header = true;
    for (;;) {
      const n = readSync(file, chunk, 0, chunk.length, null);
      const lines = (rest + chunk.toString('latin1', 0, n)).split('\n');
      rest = n === 0 ? '' : lines.pop()!;
      for (const line of lines) {
        if (header) {
          header = false;
          continue;
        }
        // sl local rem st tx_queue:rx_queue tr:when retrnsmt uid timeout inode ...
        const fields = line.trim().split(/\s+/);
        if (fields.length < 10) continue;
        if (fields[3] !== '0A') return undefined;
        if (fields[9] === inode) return Number.parseInt(fields[4]!.split(':')[1]!, 16);
      }
      if (n === 0) return undefined;
    }
  } finally {
    closeSync(file);
  }
}
