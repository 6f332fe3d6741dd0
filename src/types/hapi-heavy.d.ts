declare module '@hapi/heavy' {
  interface HeavyOptions {
    sampleInterval?: number;
    maxEventLoopDelay?: number;
    maxHeapUsedBytes?: number;
    maxRssBytes?: number;
  }
  export class Heavy {
    constructor(options?: HeavyOptions);
    start(): void;
    stop(): void;
    /** Throws a Boom 503 when over a limit. */
    check(): void;
    load: { eventLoopDelay: number; heapUsed: number; rss: number };
  }
}
