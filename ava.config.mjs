export default {
  files: ['test/**/*.test.ts'],
  extensions: { ts: 'module' },
  nodeArguments: ['--import=tsx'],
  timeout: '60s',
  // Tests spawn servers and CLI processes; two cores run two files at a time.
  concurrency: 2,
  workerThreads: false,
};
