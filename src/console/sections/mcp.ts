import type { ConsoleSection } from '../sections.js';
import { viewAllows } from '../view.js';
import { MCP_ADD_CARD } from './mcp-add.js';

/**
 * MCP tools, /console/mcp (issue 20 item 6), for owners and admins (`mcp.manage`, as the API):
 * each upstream MCP server and its pinned tools; a tool that changed upstream (or was never
 * approved) shows what was approved beside what the upstream says now, as text, with a button
 * that approves it. Filled by browser/section-mcp.ts.
 */
export const section: ConsoleSection = {
  id: 'mcp',
  title: 'MCP tools',
  visible: (view) => viewAllows(view, 'mcp.manage'),
  body() {
    return `<section class="card" id="mcp" aria-labelledby="mcp-title" data-permission="mcp.manage">
<div class="section-head"><h2 id="mcp-title">Upstream MCP servers <span class="count" id="mcp-count"></span></h2></div>
<div class="section-body">
<p class="muted">Each tool's description, input and output schemas and annotations are pinned when its server is added. A tool that changed upstream is hidden from agents and its calls are refused until you approve what it says now.</p>
<div id="mcp-body"><p class="muted">Loading…</p></div>
</div>
</section>
${MCP_ADD_CARD}`;
  },
};
