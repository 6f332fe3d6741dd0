import test from 'ava';
import { lazily } from '../../src/lib/lazy.js';

/** src/lib/lazy.ts: the composition root's services, each built on first use, once. */
interface Parts {
  ledger: { subscribers: string[] };
  outbox: { name: string; ledger: Parts['ledger'] };
  gateway: { name: string };
}

function parts(built: string[]) {
  return lazily<Parts>(
    {
      ledger: () => (built.push('ledger'), { subscribers: [] }),
      outbox: (s) => (built.push('outbox'), { name: 'outbox', ledger: s.ledger }),
      gateway: () => (built.push('gateway'), { name: 'gateway' }),
    },
    { ledger: (ledger, s) => ledger.subscribers.push(s.outbox.name) },
  );
}

test('only what is reached is built, each once, and an after hook wires a cycle before first use returns', (t) => {
  const built: string[] = [];
  const { self, built: isBuilt } = parts(built);
  const ledger = self.ledger;
  t.deepEqual(ledger.subscribers, ['outbox'], 'the hook ran before the first access returned');
  t.is(self.outbox.ledger, ledger, 'one ledger');
  t.is(self.ledger, ledger);
  t.deepEqual(built, ['ledger', 'outbox']);
  t.false(isBuilt('gateway'));
});

test('reaching the cycle from the other side wires it the same way', (t) => {
  const built: string[] = [];
  const { self } = parts(built);
  t.deepEqual(self.outbox.ledger.subscribers, ['outbox']);
  t.deepEqual(built.sort(), ['ledger', 'outbox']);
});

test('buildAll builds everything once; a factory that needs itself throws', (t) => {
  const built: string[] = [];
  const all = parts(built);
  all.buildAll();
  all.buildAll();
  t.deepEqual(built.sort(), ['gateway', 'ledger', 'outbox']);
  const loop = lazily<{ a: number; b: number }>({ a: (s) => s.b, b: (s) => s.a });
  t.throws(() => loop.self.a, { message: /needs itself/ });
});
