// How the test workers load TypeScript (ava.config.mjs's nodeArguments). Node 24 strips the types
// itself (tsconfig's erasableSyntaxOnly keeps the code within what it can strip); this hook only
// maps a relative `./x.js` import written in a .ts file to `./x.ts` when no such .js exists, as
// tsc's NodeNext resolution does. It runs in the loading thread (module.registerHooks), with no
// message passing per module, and together with NODE_COMPILE_CACHE (set by test/run.ts) a worker
// loads the application in about half the CPU tsx takes. On a Node without type stripping or
// synchronous hooks, tsx does the work instead.
import { existsSync } from 'node:fs';
import * as nodeModule from 'node:module';
import { fileURLToPath } from 'node:url';

if (typeof nodeModule.registerHooks === 'function' && process.features.typescript) {
  nodeModule.registerHooks({
    resolve(specifier, context, next) {
      if (specifier.startsWith('.') && specifier.endsWith('.js') && context.parentURL?.endsWith('.ts')) {
        const url = new URL(`${specifier.slice(0, -3)}.ts`, context.parentURL);
        if (existsSync(fileURLToPath(url))) return next(url.href, context);
      }
      return next(specifier, context);
    },
  });
} else {
  await import('tsx');
}
