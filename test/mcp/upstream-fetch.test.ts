import test from 'ava';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { requestFetch } from '../../src/mcp/upstream-fetch.js';

/**
 * The fetch the MCP proxy gives the SDK's client transport (undici's `request` behind the part of
 * fetch the transport uses), against a real loopback HTTP server: what it sends (method, path,
 * headers of every shape, the body in one piece with its length) and what it answers (status,
 * headers, a JSON body, an event stream read as a web stream, a redirect left unfollowed, a body
 * it refuses to send, an aborted request).
 */
interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

async function upstream(answer: (req: IncomingMessage, res: ServerResponse, body: string) => void) {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      answer(req, res, body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  const agent = new Agent();
  return {
    url,
    seen,
    fetch: requestFetch(agent),
    async close() {
      await agent.close();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

test('a POST carries its method, path, headers and body; the JSON answer reads as fetch would', async (t) => {
  const u = await upstream((_req, res, body) => {
    res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's-1', 'set-cookie': ['a=1', 'b=2'] });
    res.end(JSON.stringify({ echoed: JSON.parse(body) }));
  });
  t.teardown(() => u.close());
  const message = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo' } };
  const answer = await u.fetch(new URL(`${u.url}?x=1`), {
    method: 'post',
    headers: new Headers({ Authorization: 'Bearer up-secret', 'Content-Type': 'application/json' }),
    body: JSON.stringify(message),
  });
  t.is(answer.status, 200);
  t.true(answer.ok);
  t.is(answer.headers.get('mcp-session-id'), 's-1');
  t.is(answer.headers.get('content-type'), 'application/json');
  t.deepEqual(await answer.json(), { echoed: message });
  const [seen] = u.seen;
  t.is(seen!.method, 'POST');
  t.is(seen!.url, '/mcp?x=1');
  t.is(seen!.headers.authorization, 'Bearer up-secret');
  t.is(seen!.headers['content-length'], String(Buffer.byteLength(JSON.stringify(message))));
  t.is(seen!.headers['transfer-encoding'], undefined);
  t.is(seen!.headers['accept-encoding'], undefined, 'nothing asks for a compressed answer');
});

test('headers given as an object or as pairs are sent, names in any case', async (t) => {
  const u = await upstream((_req, res) => res.writeHead(202).end());
  t.teardown(() => u.close());
  const a = await u.fetch(u.url, { method: 'POST', headers: { 'X-One': '1', Accept: 'application/json' }, body: '{}' });
  const b = await u.fetch(u.url, { method: 'DELETE', headers: [['X-Two', '2']] });
  t.is(a.status, 202);
  t.is(await a.text(), '');
  t.is(b.status, 202);
  t.is(await b.text(), '');
  t.is(u.seen[0]!.headers['x-one'], '1');
  t.is(u.seen[0]!.headers.accept, 'application/json');
  t.is(u.seen[1]!.method, 'DELETE');
  t.is(u.seen[1]!.headers['x-two'], '2');
});

test('an event stream is read through body as a web stream, as the transport reads it', async (t) => {
  const u = await upstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('event: message\ndata: {"a":1}\n\n');
    setImmediate(() => res.end('event: message\ndata: {"b":2}\n\n'));
  });
  t.teardown(() => u.close());
  const answer = await u.fetch(u.url, { method: 'GET', headers: { accept: 'text/event-stream' } });
  t.is(answer.headers.get('content-type'), 'text/event-stream');
  const reader = answer.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  for (let r = await reader.read(); !r.done; r = await reader.read()) text += r.value;
  t.is(text, 'event: message\ndata: {"a":1}\n\nevent: message\ndata: {"b":2}\n\n');
});

test('a redirect is answered as it came, not followed; an error status is not ok', async (t) => {
  const u = await upstream((req, res) => {
    if (req.url === '/mcp') res.writeHead(307, { location: '/elsewhere' }).end();
    else res.writeHead(500).end('no');
  });
  t.teardown(() => u.close());
  const moved = await u.fetch(u.url, { method: 'POST', body: '{}', redirect: 'manual' });
  t.is(moved.status, 307);
  t.false(moved.ok);
  t.is(moved.headers.get('location'), '/elsewhere');
  await moved.text();
  const failed = await u.fetch(new URL('/other', u.url), { method: 'GET' });
  t.is(failed.status, 500);
  t.false(failed.ok);
  t.is(await failed.text(), 'no');
  t.is(u.seen.length, 2);
});

test('a body other than a string or bytes is refused before anything is sent', async (t) => {
  const u = await upstream((_req, res) => res.end());
  t.teardown(() => u.close());
  await t.throwsAsync(() => u.fetch(u.url, { method: 'POST', body: new URLSearchParams({ a: '1' }) }), {
    instanceOf: TypeError,
  });
  t.is(u.seen.length, 0);
});

test('an aborted signal rejects the request', async (t) => {
  const u = await upstream(() => {
    /* never answers */
  });
  t.teardown(() => u.close());
  const abort = new AbortController();
  const pending = u.fetch(u.url, { method: 'POST', body: '{}', signal: abort.signal });
  setImmediate(() => abort.abort());
  await t.throwsAsync(pending);
});
