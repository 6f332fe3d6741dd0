import { relative } from 'node:path';

// test/run.ts (npm test) runs most files in groups it writes to .test-groups/ for the run, and
// names the order to start them in (the longest first).
const order = process.env.SVC_TEST_ORDER ? JSON.parse(process.env.SVC_TEST_ORDER) : [];
const rank = (file) => {
  const i = order.indexOf(relative(import.meta.dirname, file));
  return i === -1 ? order.length : i;
};

export default {
  files: process.env.SVC_TEST_GROUPS ? ['test/**/*.test.ts', '.test-groups/*.test.ts'] : ['test/**/*.test.ts'],
  extensions: { ts: 'module' },
  // Node strips the types itself; the loader maps `./x.js` imports to `./x.ts` (test/helpers/ts-loader.mjs).
  nodeArguments: [`--import=${new URL('./test/helpers/ts-loader.mjs', import.meta.url)}`],
  timeout: '60s',
  // Three workers on two cores: a worker waits on its servers and spawned processes part of the
  // time, and a third keeps both cores busy (the suite took 612 s of ava against about 700 with two).
  concurrency: 3,
  workerThreads: false,
  ...(order.length > 0 ? { sortTestFiles: (a, b) => rank(a) - rank(b) } : {}),
};
