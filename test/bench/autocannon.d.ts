/** The part of autocannon's API the benchmark uses (the package ships no types). */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  interface Options {
    url: string;
    method?: 'GET' | 'POST';
    body?: string;
    connections?: number;
    duration?: number;
    headers?: Record<string, string>;
    /** Requests per second over all connections; each connection sends its share in a burst at the start of each second. */
    overallRate?: number;
    /** Stop after this many requests in all (instead of after `duration`). */
    amount?: number;
    /** Each connection's requests in turn; `setupRequest` may change one (e.g. its body) before each send. */
    requests?: Array<{ setupRequest?: (request: { body?: string }) => { body?: string } }>;
  }
  interface Result {
    duration: number;
    requests: { total: number; average: number };
    latency: { p50: number; p99: number };
    non2xx: number;
    errors: number;
    timeouts: number;
    statusCodeStats: Record<string, { count: number }>;
  }
  /** An event emitter that is also the promise of the result. */
  interface Instance extends EventEmitter, PromiseLike<Result> {
    /** `responseTime`: milliseconds, from writing the request to the end of its answer (not rounded). */
    on(
      event: 'response',
      listener: (client: unknown, statusCode: number, resBytes: number, responseTime: number) => void,
    ): this;
  }
  export default function autocannon(options: Options): Instance;
}
