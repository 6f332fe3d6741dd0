/**
 * The shapes of the records this domain writes to the store, as stored (src/store/tables.ts lists
 * their tables and key layouts). Types only: the store imports them, so nothing here runs
 * (test/architecture/layers.test.ts holds it to that).
 */

/**
 * What `svc apply` remembers of a resource it wrote: whether a file created it (only those are
 * removed by `--prune`), and the environment variable its secret was read from (so that
 * `svc export` writes the same reference back).
 */
export interface SetupResourceRecord {
  workspaceId: string;
  section: 'templates' | 'blueprints' | 'agents' | 'budgets' | 'mcpServers' | 'integrations';
  /** The resource's name in the file (a budget's scope and period; an integration's kind). */
  name: string;
  createdByFile: boolean;
  secretFromEnv: string | null;
  updatedAt: string;
}
