/**
 * The gateway benchmark's floor: the least a model proxy can do, in its own process. Prints its
 * address as one JSON line once listening. Argument: the vendor's base address.
 * - POST /v1/chat/completions, /v1/responses and /v1/embeddings: hapi parses the JSON body, undici's Pool sends it to the vendor with
 *   the upstream secret (options as the gateway's own upstream pool: 64 keep-alive connections),
 *   and the vendor's answer is piped back as it arrives, status, type and length kept; a stream is
 *   piped event by event. No auth, no routing, no accounting, no logs.
 * - POST /local?size=N: parses the JSON body and answers N bytes of JSON with no upstream call, the
 *   floor for answers the gateway gives on its own (dry runs, refusals).
 */
import Hapi from '@hapi/hapi';
import { Pool } from 'undici';

const vendor = new URL(process.argv[2] ?? 'http://127.0.0.1:1');
const secret = process.env.VENDOR_O_KEY ?? '';
const pool = new Pool(vendor.origin, { connections: 64, keepAliveTimeout: 30_000 });

const server = Hapi.server({ host: '127.0.0.1', port: 0 });
server.route({
  method: 'POST',
  path: '/v1/{route*}',
  async handler(request, h) {
    const body = JSON.stringify(request.payload);
    const answer = await pool.request({
      method: 'POST',
      path: request.path,
      body,
      headers: {
        authorization: `Bearer ${secret}`,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
      },
    });
    // A client that leaves mid-answer makes hapi destroy the vendor's body, which then errs.
    answer.body.on('error', () => {});
    const response = h
      .response(answer.body)
      .code(answer.statusCode)
      .type(String(answer.headers['content-type'] ?? 'application/json'));
    const length = answer.headers['content-length'];
    if (typeof length === 'string') response.header('content-length', length);
    // As the gateway does: never compressed, never cached.
    return response.header('content-encoding', 'identity').header('cache-control', 'no-cache');
  },
});
server.route({
  method: 'POST',
  path: '/local',
  handler(request, h) {
    const size = Number(request.query.size ?? 0);
    const head = JSON.stringify({
      ok: true,
      model: (request.payload as { model?: unknown } | null)?.model ?? null,
      pad: '',
    });
    return h.response(`${head.slice(0, -2)}${'x'.repeat(Math.max(0, size - head.length))}"}`).type('application/json');
  },
});
await server.start();
console.log(JSON.stringify({ listening: server.info.uri }));
process.on('SIGTERM', () => {
  void server
    .stop()
    .then(() => pool.close())
    .then(() => process.exit(0));
});
