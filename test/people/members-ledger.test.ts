import test from 'ava';
import { principalEndedHooks } from '../../src/app.js';
import { systemClock } from '../../src/lib/clock.js';
import { randomIds } from '../../src/lib/ids.js';
import { createPeopleService } from '../../src/people/index.js';
import { removeDir, tempDir } from '../helpers/process.js';
import { withStore } from '../helpers/store.js';

/**
 * With a ledger (PeopleDeps.ledger), every membership change is a ledger record naming the
 * person who made it, committed in the same transaction as the change.
 */
test('adding, changing and removing a member are ledger records naming the actor', async (t) => {
  const dir = await tempDir();
  try {
    await withStore(dir, async (app) => {
      const made = await app.services.people.createWorkspace({
        name: 'W',
        ownerEmail: 'o@example.com',
        ownerPassword: 'owner password 1',
      });
      const people = createPeopleService({
        store: app.store,
        clock: systemClock,
        ids: randomIds,
        masterKey: app.masterKey,
        sessionTtlMs: 60_000,
        ledger: app.services.ledger,
        principalEnded: principalEndedHooks(app.store),
      });
      const by = { userId: made.ownerId };
      const added = await people.addMember(
        {
          workspaceId: made.workspaceId,
          email: 'm@example.com',
          name: 'M',
          password: 'member password 1',
          role: 'member',
        },
        by,
      );
      await people.updateMember(made.workspaceId, added.id, { role: 'admin' }, by);
      await people.signIn('m@example.com', 'member password 1');
      t.deepEqual(await people.removeMember(made.workspaceId, added.id, by), { sessionsEnded: 1 });
      // A refused change leaves no record.
      await t.throwsAsync(people.removeMember(made.workspaceId, made.ownerId, by), { message: /last owner/ });

      const records = (await app.services.ledger.list(made.workspaceId, { limit: 50 })).data;
      t.deepEqual(
        records.map((r) => [r.kind, r.actor, r.subject, r.data]),
        [
          ['member.added', `user:${made.ownerId}`, added.id, { role: 'member' }],
          ['member.updated', `user:${made.ownerId}`, added.id, { role: 'admin' }],
          [
            'member.removed',
            `user:${made.ownerId}`,
            added.id,
            { role: 'admin', sessionsEnded: 1, connectionsEnded: 0 },
          ],
        ],
      );
    });
  } finally {
    await removeDir(dir);
  }
});
