import { openStore } from '../../src/store/open.js';

/**
 * A second process on the same store, for the contract suite (contract-suite.ts):
 *   kv-child.ts SPEC ack          writes ['ack', i] = i for i = 0, 1, … with 16 writes in flight,
 *                                 printing i once each is acknowledged, until killed;
 *   kv-child.ts SPEC inc N C      N read-modify-write increments of one counter, C at a time;
 *   kv-child.ts SPEC put KEY N    one write of periodUsage[KEY] = N;
 *   kv-child.ts SPEC reopen MS    opens the store and closes it again, over and over for MS ms,
 *                                 printing `opened` once first and the count at the end.
 * SPEC is JSON: { dataDir, url }.
 */

const [specText, mode, a, b] = process.argv.slice(2);
const spec = JSON.parse(specText!) as { dataDir: string; url?: string };
const store = await openStore(spec.dataDir, { url: spec.url });

if (mode === 'ack') {
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      await store.write(async (tx) => tx.periodUsage.put(['ack', i], i));
      process.stdout.write(`${i}\n`);
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
} else if (mode === 'inc' || mode === 'inc-on') {
  // inc-on: each write serialized on a row of its own worker (the gate's way), so only the
  // check of what it read and writes keeps the count against the other process's writes.
  let left = Number(a);
  let workers = 0;
  const worker = async () => {
    const row = `lock-${workers++}`;
    while (left-- > 0) {
      await store.write(
        async (tx) => {
          const n = (await tx.periodUsage.get('counter')) ?? 0;
          await tx.periodUsage.put('counter', n + 1);
        },
        mode === 'inc-on' ? { serializeOn: [['agents', row]] } : {},
      );
    }
  };
  await Promise.all(Array.from({ length: Number(b) }, worker));
  process.stdout.write('done\n');
} else if (mode === 'reopen') {
  process.stdout.write('opened\n');
  const end = Date.now() + Number(a);
  let opens = 0;
  while (Date.now() < end) {
    const again = await openStore(spec.dataDir, { url: spec.url });
    await again.tables.periodUsage.get('counter');
    await again.close();
    opens++;
  }
  process.stdout.write(`${opens}\n`);
} else if (mode === 'put') {
  await store.write(async (tx) => tx.periodUsage.put(a!, Number(b)));
  process.stdout.write('ok\n');
}
await store.close();
