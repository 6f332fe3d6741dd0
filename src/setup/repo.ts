import type { Store } from '../store/index.js';
import type { SetupResourceRecord } from './records.js';

/** What apply remembers per resource: [wid, section, name] -> record. */
export function setupRepo(store: Store) {
  const t = store.tables;
  return {
    async list(wid: string): Promise<SetupResourceRecord[]> {
      return (await t.setupResources.scan([wid])).map((e) => e.value);
    },
    /** Inside store.write. */
    put: (record: SetupResourceRecord): Promise<void> =>
      t.setupResources.put([record.workspaceId, record.section, record.name], record),
    /** Inside store.write. */
    remove: (wid: string, section: string, name: string): Promise<void> =>
      t.setupResources.remove([wid, section, name]),
  };
}
