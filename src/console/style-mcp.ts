/** The MCP tools section's own rules: tools, their states side by side (stacked on a phone). Appended to app.css by app-style.ts. */
export const STYLE_MCP = `
/* MCP tools */
.mcp-server + .mcp-server { border-top: 1px solid var(--border); margin-top: 1rem; padding-top: 1rem; }
.mcp-server h3 { margin: 0 0 .2rem; font-size: 1rem; display: flex; gap: .5rem; align-items: center; flex-wrap: wrap; }
.mcp-url { margin: 0 0 .6rem; font-size: .85rem; overflow-wrap: anywhere; }
.mcp-tools { list-style: none; margin: 0; padding: 0; }
.mcp-tool { padding: .7rem 0; border-top: 1px solid var(--border); min-width: 0; }
.mcp-tool-head { display: flex; gap: .6rem; align-items: center; flex-wrap: wrap; }
.mcp-tool-name { font-weight: 600; font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
.mcp-desc, .mcp-meta { margin: .3rem 0 0; font-size: .85rem; overflow-wrap: anywhere; }
.mcp-badge { font-size: .75rem; padding: .1rem .5rem; border-radius: 999px; background: var(--border); }
.mcp-badge.mcp-changed, .mcp-badge.mcp-new { background: var(--warn-bg); color: var(--warn); }
.mcp-diff { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: .75rem; margin-top: .6rem; }
.mcp-state { min-width: 0; }
.mcp-state h4 { margin: 0 0 .3rem; font-size: .8rem; font-weight: 600; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
.mcp-text { margin: 0; padding: .6rem; border: 1px solid var(--border); border-radius: 6px; font-size: .8rem; line-height: 1.45; white-space: pre-wrap; overflow-wrap: anywhere; max-height: 24rem; overflow: auto; }
.mcp-line { display: block; }
.mcp-removed { background: var(--danger-bg); color: var(--danger); }
.mcp-added { background: var(--warn-bg); color: var(--warn); }
.mcp-approve { display: flex; justify-content: flex-end; margin-top: .6rem; }
@media (max-width: 760px) {
  .mcp-diff { grid-template-columns: 1fr; }
  .mcp-approve { justify-content: flex-start; }
}
`;
