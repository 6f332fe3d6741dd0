/**
 * The server's V8 heap, read from outside through the inspector protocol: `svc serve` has no
 * metrics route, so the soak starts it with `--inspect=127.0.0.1:0` (loopback, a free port, for
 * the soak only) and asks over that socket. Reading the heap's size takes no GC and no pause; a
 * full GC and heap snapshots are asked for only where the soak says so.
 * Invariants: one request at a time is enough (the soak asks every few seconds); every request
 * has a deadline, so a server that stopped answering fails the read instead of hanging the soak.
 */
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { WebSocket } from 'undici';

/** The inspector's address, from the line Node prints on stderr when it starts listening. */
export const inspectorUrl = (stderr: string): string | undefined =>
  /Debugger listening on (ws:\/\/127\.0\.0\.1:\d+\/[\w-]+)/.exec(stderr)?.[1];

export interface HeapUsage {
  /** Bytes of the JS heap in use, and reserved. */
  used: number;
  total: number;
}

export interface Inspector {
  heap(): Promise<HeapUsage>;
  /** A full garbage collection, then the heap's size: what is still reachable. */
  heapAfterGc(): Promise<HeapUsage>;
  /** Writes a heap snapshot (for Chrome DevTools' Memory tab) to `file`. */
  snapshot(file: string): Promise<void>;
  close(): void;
}

type Message = { id?: number; method?: string; params?: { chunk?: string }; result?: unknown; error?: unknown };

export async function connectInspector(url: string, deadlineMs = 60_000): Promise<Inspector> {
  const ws = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    ws.addEventListener('open', () => resolve(), { once: true });
    ws.addEventListener('error', () => reject(new Error(`cannot reach the inspector at ${url}`)), { once: true });
  });
  let next = 1;
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let onChunk: ((chunk: string) => void) | undefined;
  ws.addEventListener('message', (event: { data: unknown }) => {
    const message = JSON.parse(String(event.data)) as Message;
    if (message.method === 'HeapProfiler.addHeapSnapshotChunk') onChunk?.(message.params?.chunk ?? '');
    if (message.id === undefined) return;
    const w = waiting.get(message.id);
    waiting.delete(message.id);
    if (message.error) w?.reject(new Error(JSON.stringify(message.error)));
    else w?.resolve(message.result);
  });
  ws.addEventListener('close', () => {
    for (const w of waiting.values()) w.reject(new Error('the inspector closed'));
    waiting.clear();
  });
  const send = <T>(method: string, params: object = {}, ms = deadlineMs): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error(`${method}: no answer within ${ms} ms`));
      }, ms);
      waiting.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v as T);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      ws.send(JSON.stringify({ id, method, params }));
    });
  const heap = async (): Promise<HeapUsage> => {
    const r = await send<{ usedSize: number; totalSize: number }>('Runtime.getHeapUsage');
    return { used: r.usedSize, total: r.totalSize };
  };
  return {
    heap,
    async heapAfterGc() {
      await send('HeapProfiler.collectGarbage');
      return heap();
    },
    async snapshot(file: string) {
      const out = createWriteStream(file);
      onChunk = (chunk) => out.write(chunk);
      try {
        // A snapshot of a large heap on a busy machine takes a while.
        await send('HeapProfiler.takeHeapSnapshot', { reportProgress: false }, 10 * deadlineMs);
      } finally {
        onChunk = undefined;
        out.end();
        await once(out, 'close');
      }
    },
    close: () => ws.close(),
  };
}
