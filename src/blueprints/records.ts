/**
 * The shapes of the records this domain writes to the store, as stored (src/store/tables.ts lists
 * their tables and key layouts; ids: src/lib/ids.ts). Types only: the store imports
 * them, so nothing here runs (test/architecture/layers.test.ts holds it to that).
 */

/** An agent blueprint (docs/gate.md#machine-administration): tags and templates a registered agent starts with. */
export interface BlueprintRecord {
  id: string;
  workspaceId: string;
  name: string;
  tags: string[];
  /** tpl_ ids, in order: their rules become the mandate. */
  templates: string[];
  createdAt: string;
  createdBy: string;
}
