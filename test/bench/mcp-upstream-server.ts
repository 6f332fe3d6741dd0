/**
 * The fixture upstream MCP server (test/helpers/mcp-upstream.ts) in its own process, for the MCP
 * benchmark. argv[2], when given, is the bearer secret it requires. Prints `{ listening, control }`
 * as one JSON line once listening.
 * - `listening`: the upstream's MCP endpoint (stateless Streamable HTTP, tools echo and add), in
 *   both protocol eras: 2025-11-25 and 2026-07-28 (requests carrying the per-request envelope).
 * - `control`: GET /count answers `{ count, methods }`: every tool call the upstream ran since
 *   start, so the driver can prove that each proxied call was forwarded exactly once, and how many
 *   requests of each JSON-RPC method it received (what else a proxied call costs the upstream).
 * The fixture keeps every call and request; a benchmark sends hundreds of thousands, so they are
 * forgotten every second (and only counted), lest its memory and GC skew the numbers.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startMcpUpstream } from '../helpers/mcp-upstream.js';

const secret = process.argv[2];
const upstream = await startMcpUpstream({ modern: true, ...(secret ? { secret } : {}) });
let forgotten = 0;
const methods: Record<string, number> = {};
const tally = () => {
  for (const r of upstream.requests) methods[r.method] = (methods[r.method] ?? 0) + 1;
  upstream.requests.length = 0;
};
const forget = setInterval(() => {
  forgotten += upstream.calls.length;
  upstream.calls.length = 0;
  tally();
}, 1000);

const control = http.createServer((req, res) => {
  tally();
  const body = JSON.stringify({ count: forgotten + upstream.calls.length, methods });
  res.writeHead(req.url === '/count' ? 200 : 404, { 'content-type': 'application/json' });
  res.end(body);
});
await new Promise<void>((resolve) => control.listen(0, '127.0.0.1', resolve));

console.log(
  JSON.stringify({ listening: upstream.url, control: `http://127.0.0.1:${(control.address() as AddressInfo).port}` }),
);
process.on('SIGTERM', () => {
  clearInterval(forget);
  control.close();
  void upstream.close().then(() => process.exit(0));
});
