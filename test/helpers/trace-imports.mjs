// Loaded with `node --import` before svc (test/cli/lazy-loading.test.ts): writes every module the
// process resolved, ESM and CommonJS alike, one URL a line, to the file SVC_TEST_TRACE names.
import { registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';

const seen = new Set();
registerHooks({
  resolve(specifier, context, next) {
    const resolved = next(specifier, context);
    seen.add(resolved.url);
    return resolved;
  },
});
process.on('exit', () => writeFileSync(process.env.SVC_TEST_TRACE, [...seen].join('\n')));
