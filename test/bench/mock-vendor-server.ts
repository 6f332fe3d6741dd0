/**
 * The mock model vendor (test/helpers/mock-vendor.ts) in its own process, for the gateway
 * benchmark. Prints `{ listening, control }` as one JSON line once listening.
 * - `listening`: the mock's address (OpenAI shape at /v1/chat/completions, Anthropic at /v1/messages).
 * - `control`: GET /count answers `{ count }`, every request the mock received since start, so the
 *   driver can prove that a refusal sent nothing upstream.
 * The mock keeps every call it receives; a benchmark sends hundreds of thousands, so they are
 * forgotten every second (and only counted), lest the mock's memory and GC skew the numbers.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startMockVendor } from '../helpers/mock-vendor.js';

const vendor = await startMockVendor();
let forgotten = 0;
const forget = setInterval(() => {
  forgotten += vendor.calls.length;
  vendor.reset();
}, 1000);

const control = http.createServer((req, res) => {
  const body = JSON.stringify({ count: forgotten + vendor.calls.length });
  res.writeHead(req.url === '/count' ? 200 : 404, { 'content-type': 'application/json' });
  res.end(body);
});
await new Promise<void>((resolve) => control.listen(0, '127.0.0.1', resolve));

console.log(
  JSON.stringify({ listening: vendor.url, control: `http://127.0.0.1:${(control.address() as AddressInfo).port}` }),
);
process.on('SIGTERM', () => {
  clearInterval(forget);
  control.close();
  void vendor.close().then(() => process.exit(0));
});
