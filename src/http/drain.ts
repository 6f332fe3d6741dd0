import type { Server as NodeServer, IncomingMessage, ServerResponse } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';

/**
 * The graceful drain on SIGTERM, on the Node server in front of hapi. Rules, in order:
 * 1. The moment the drain begins, every answer not yet started carries `connection: close`
 *    (requests already in flight, requests still queued on a keep-alive socket, and any request
 *    that arrives later on a connection that was open before), so each client learns from its
 *    last answer that the connection ends, and Node closes it after that answer.
 * 2. New connections are refused: the listening socket is closed at once.
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

  listener.on('connection', (socket: Socket) => {
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
      // net.Server's close stops accepting without http.Server's closeIdleConnections (rule 3).
      NetServer.prototype.close.call(listener);
      if (sockets.size > 0) {
        let timer: NodeJS.Timeout | undefined;
        await new Promise<void>((resolve) => {
          idle = resolve;
          timer = setTimeout(resolve, timeoutMs);
        });
        clearTimeout(timer);
      }
      for (const socket of sockets) socket.destroy();
    },
  };
}
