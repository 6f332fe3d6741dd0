import { EventEmitter, once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An OpenTelemetry collector's OTLP/HTTP traces endpoint on loopback (POST /v1/traces, JSON
 * encoding, as the OTLP specification defines it): it keeps every span it is sent, with its
 * attributes decoded, and answers as a collector does. `hang` makes it never answer.
 */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  service: string;
}

type AnyValue = {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
};

const decode = (v: AnyValue): unknown =>
  v.stringValue ??
  (v.intValue !== undefined ? Number(v.intValue) : undefined) ??
  v.doubleValue ??
  v.boolValue ??
  (v.arrayValue ? (v.arrayValue.values ?? []).map(decode) : undefined);

const attributesOf = (list: Array<{ key: string; value: AnyValue }> | undefined) =>
  Object.fromEntries((list ?? []).map((a) => [a.key, decode(a.value)]));

export interface OtlpReceiver {
  /** The base address, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  url: string;
  spans: ReceivedSpan[];
  contentTypes: string[];
  hang: boolean;
  /** Exports received while hanging (never answered). */
  hung: number;
  /** Resolves once `predicate` holds over the spans received, or rejects after `ms`. */
  waitFor(predicate: (spans: ReceivedSpan[]) => boolean, ms?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const events = new EventEmitter();
  const state: OtlpReceiver = {
    url: '',
    spans: [],
    contentTypes: [],
    hang: false,
    hung: 0,
    async waitFor(predicate, ms = 15_000) {
      const deadline = AbortSignal.timeout(ms);
      while (!predicate(state.spans)) await once(events, 'spans', { signal: deadline });
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (state.hang) {
        state.hung += 1;
        events.emit('spans');
        return;
      }
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      state.contentTypes.push(String(req.headers['content-type']));
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans?: Array<{
          resource?: { attributes?: Array<{ key: string; value: AnyValue }> };
          scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }>;
        }>;
      };
      for (const rs of body.resourceSpans ?? []) {
        const service = String(attributesOf(rs.resource?.attributes)['service.name'] ?? '');
        for (const ss of rs.scopeSpans ?? [])
          for (const s of ss.spans ?? [])
            state.spans.push({
              traceId: String(s.traceId),
              spanId: String(s.spanId),
              parentSpanId: String(s.parentSpanId ?? ''),
              name: String(s.name),
              kind: Number(s.kind),
              attributes: attributesOf(s.attributes as Array<{ key: string; value: AnyValue }>),
              service,
            });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      events.emit('spans');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}
