import test from 'ava';
import { migrateStore, openStore } from '../../src/store/index.js';
import { removeDir, tempDir } from '../helpers/process.js';

/** Schema 4 (the gate): agents of a schema-3 store gain an empty list of holds; nothing is lost. */
test.serial('agents of a schema-3 store get holds: [] and keep every field', async (t) => {
  const dir = await tempDir();
  const store = await openStore(dir);
  try {
    await migrateStore(store, { target: 3 });
    const agent = {
      id: 'agt_AAAAAAAAAAAAAAAAAAAAAA',
      workspaceId: 'ws_AAAAAAAAAAAAAAAAAAAAAA',
      name: 'old-bot',
      actsFor: null,
      tags: ['x'],
      createdAt: '2026-01-01T00:00:00.000Z',
      removedAt: null,
    };
    await store.write(async () => store.tables.agents.put([agent.workspaceId, agent.id], agent));
    const result = await migrateStore(store);
    t.deepEqual(
      result.applied.map((m) => m.version),
      [4],
    );
    t.deepEqual(await store.tables.agents.get([agent.workspaceId, agent.id]), { ...agent, holds: [] });
    const again = await migrateStore(store);
    t.deepEqual(again.applied, [], 'safe to re-run');
  } finally {
    await store.close();
    await removeDir(dir);
  }
});
