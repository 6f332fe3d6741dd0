import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { removeDir, tempDir } from '../helpers/process.js';
import { codeBlocks, pages } from './markdown.js';

const run = promisify(execFile);

/**
 * The nginx configuration the docs give passes `nginx -t` on Debian's nginx (1.22 in Debian 12,
 * which has no `http2` directive), with a throwaway certificate in place of Let's Encrypt's.
 */
test('every nginx snippet in the docs passes nginx -t', async (t) => {
  const snippets = pages().flatMap((page) => codeBlocks(page.text, 'nginx').map((body) => ({ page: page.path, body })));
  t.true(snippets.length > 0, 'the docs give an nginx snippet');
  const dir = await tempDir('svc-nginx-');
  try {
    const cert = join(dir, 'cert.pem');
    const key = join(dir, 'key.pem');
    await run('openssl', [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      '/CN=svc.example.com',
      '-days',
      '1',
      '-keyout',
      key,
      '-out',
      cert,
    ]);
    for (const [i, { page, body }] of snippets.entries()) {
      const server = body
        .replace(/ssl_certificate\s+\S+;/g, `ssl_certificate ${cert};`)
        .replace(/ssl_certificate_key\s+\S+;/g, `ssl_certificate_key ${key};`);
      const conf = join(dir, `nginx-${i}.conf`);
      await writeFile(conf, `pid ${join(dir, 'nginx.pid')};\nevents {}\nhttp {\n${server}\n}\n`);
      const checked = await run('nginx', ['-t', '-p', dir, '-e', join(dir, 'error.log'), '-c', conf]).then(
        (r) => ({ ok: true, out: r.stderr }),
        (err: { stderr?: string; message: string }) => ({ ok: false, out: err.stderr ?? err.message }),
      );
      t.true(checked.ok, `${page}, snippet ${i + 1}: ${checked.out}`);
      t.regex(checked.out, /test is successful/);
    }
  } finally {
    await removeDir(dir);
  }
});
