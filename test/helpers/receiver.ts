import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { poll } from './wait.js';

/** A customer's webhook receiver on loopback, and waiting for what it receives. */
export type Mode = 'ok' | 'fail' | 'hang';
export interface Received {
  id: string;
  type: string;
  status: number;
  verified: boolean;
  body: string;
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** A customer's receiver on loopback: answers as `mode` says, checks each signature with its own HMAC. */
export async function startReceiver(secret: () => string) {
  const state = { mode: 'ok' as Mode, received: [] as Received[] };
  const http: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const header = String(req.headers['svc-signature'] ?? '');
      const t = /t=(\d+)/.exec(header)?.[1] ?? '';
      const v1 = /v1=([0-9a-f]{64})/.exec(header)?.[1] ?? '';
      const expected = createHmac('sha256', secret()).update(`${t}.${body}`).digest();
      const verified =
        v1.length === 64 &&
        timingSafeEqual(expected, Buffer.from(v1, 'hex')) &&
        Math.abs(Date.now() / 1000 - Number(t)) < 300;
      const status = state.mode === 'ok' ? 200 : 500;
      state.received.push({
        id: String(req.headers['svc-event-id']),
        type: String(req.headers['svc-event-type']),
        status: state.mode === 'hang' ? 0 : status,
        verified,
        body,
      });
      if (state.mode === 'hang') return; // never answers: the sender's timeout ends it
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    state,
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/hooks`,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

/** A bounded wait on what the test can observe (see wait.ts): fails naming `what` after `ms`. */
export async function until(what: string, check: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  if (!(await poll(check, (ok) => ok, { timeoutMs: ms, everyMs: 50 })))
    throw new Error(`timed out waiting for ${what}`);
}
