import test from 'ava';
import { call } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';

// Found by the fuzz campaign (test/fuzz): a Range header the server could not satisfy got hapi's
// own 416, without the catalogue's shape. No answer is served in parts.
let server: ServedInProcess;

test.before(async () => {
  server = await serveInProcess();
});

test.after.always(() => stopAndClean(server));

test('a Range header is ignored: the whole answer, never a 416', async (t) => {
  for (const path of ['/openapi.json', '/healthz', '/console/app.js']) {
    const whole = await call(server.url, 'GET', path);
    for (const range of ['bytes=x', 'bytes=0-1', 'bytes=999999999-']) {
      const res = await call(server.url, 'GET', path, { headers: { range } });
      t.is(res.status, 200, `${path} ${range}`);
      t.is(res.headers['content-range'], undefined, `${path} ${range}`);
      t.is(res.text, whole.text, `${path} ${range}`);
    }
  }
});
