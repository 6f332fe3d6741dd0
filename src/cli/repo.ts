import type { Store } from '../store/index.js';

/** What `--local` commands read of the store themselves (cli/local.ts): the workspaces it holds. */
export function localRepo(store: Store) {
  const t = store.tables;
  return {
    /** The ids of every workspace in the store, in key order. */
    async workspaceIds(): Promise<string[]> {
      return (await t.workspaces.scan([])).map((e) => e.value.id);
    },
  };
}
