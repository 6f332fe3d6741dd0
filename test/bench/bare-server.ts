/**
 * The baseline: a bare hapi server in its own process. Prints its address as one JSON line once
 * listening.
 * - GET /bare answers a fixed JSON body (the same bytes as the measured GET route).
 * - POST /bare/echo?size=N parses the JSON object it is sent and answers it back, padded to N
 *   bytes, so that the baseline of a POST route reads the same request and writes an answer of
 *   the same size as the product's route it stands beside.
 * - POST /bare/sized?size=N parses the JSON object it is sent and answers a JSON object of N bytes
 *   naming the `id` it was sent: the baseline of a POST route whose answer is smaller than its
 *   request (which /bare/echo cannot be).
 */
import Hapi from '@hapi/hapi';

const body: unknown = JSON.parse(process.argv[2] ?? '{"ok":true}');
const server = Hapi.server({ host: '127.0.0.1', port: 0 });
server.route({ method: 'GET', path: '/bare', handler: () => body });
server.route({
  method: 'POST',
  path: '/bare/echo',
  handler(request, h) {
    const echo = JSON.stringify({ echo: request.payload, pad: '' });
    const size = Number(request.query.size ?? 0);
    const answer = `${echo.slice(0, -2)}${'x'.repeat(Math.max(0, size - echo.length))}"}`;
    return h.response(answer).type('application/json');
  },
});
server.route({
  method: 'POST',
  path: '/bare/sized',
  handler(request, h) {
    const { id } = (request.payload ?? {}) as { id?: unknown };
    const head = JSON.stringify({ id: typeof id === 'string' ? id : null, pad: '' });
    const size = Number(request.query.size ?? 0);
    const answer = `${head.slice(0, -2)}${'x'.repeat(Math.max(0, size - head.length))}"}`;
    return h.response(answer).type('application/json');
  },
});
await server.start();
console.log(JSON.stringify({ listening: server.info.uri }));
process.on('SIGTERM', () => {
  void server.stop().then(() => process.exit(0));
});
