import type { Store } from '../store/index.js';
import type { BlueprintRecord } from './records.js';

/** Blueprints, [wid, id]. Writes only inside store.write(). */
export function blueprintsRepo(store: Store) {
  const t = store.tables;
  return {
    get(wid: string, id: string): Promise<BlueprintRecord | undefined> {
      return t.blueprints.get([wid, id]);
    },
    async put(blueprint: BlueprintRecord): Promise<void> {
      await t.blueprints.put([blueprint.workspaceId, blueprint.id], blueprint);
    },
    async list(wid: string, options: { after?: string; limit?: number } = {}): Promise<BlueprintRecord[]> {
      return (await t.blueprints.scan([wid], options)).map((e) => e.value);
    },
  };
}
