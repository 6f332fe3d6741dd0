import type { McpToolPinRecord, Store } from '../store/index.js';

/** The pins' reads and writes (mcp/pins.ts). Writes only inside store.write(). */
export function pinsRepo(store: Store) {
  const t = store.tables;
  return {
    pin(wid: string, server: string, tool: string): McpToolPinRecord | undefined {
      return t.mcpToolPins.get([wid, server, tool]);
    },
    /** Every pin of one upstream server, by tool name. */
    pinsOf(wid: string, server: string): McpToolPinRecord[] {
      return t.mcpToolPins.scan([wid, server]).map((e) => e.value);
    },
    putPin(p: McpToolPinRecord): void {
      t.mcpToolPins.put([p.workspaceId, p.server, p.tool], p);
    },
    /** Removes every pin of a server (it was removed: adding it again pins afresh). */
    removePins(wid: string, server: string): void {
      for (const e of t.mcpToolPins.scan([wid, server])) t.mcpToolPins.remove(e.key);
    },
  };
}
