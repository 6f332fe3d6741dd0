/**
 * The shapes of the records this domain writes to the store, as stored (src/store/tables.ts lists
 * their tables and key layouts; ids: src/lib/ids.ts). Types only: the store imports
 * them, so nothing here runs (test/architecture/layers.test.ts holds it to that).
 */

// "Stop every agent" in force: declared with the agents' standing, which reads it.
export type { StopAllRecord } from '../agents/records.js';
