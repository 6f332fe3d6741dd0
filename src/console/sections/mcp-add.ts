/**
 * The MCP tools section's "Add a server" card (POST /api/w/{wid}/mcp-servers, owners and admins
 * as the section): a name, the server's URL, and a secret it expects (optional, sealed, never
 * shown again); then the connection test's result, and a button that tests it again (GET
 * …/mcp-servers/{name}/tools). Filled by browser/section-mcp-add.ts.
 */
export const MCP_ADD_CARD = `<section class="card" id="mcp-add" aria-labelledby="mcp-add-title" data-permission="mcp.manage">
<div class="section-head"><h2 id="mcp-add-title">Add a server</h2></div>
<div class="section-body">
<form id="mcp-add-form" class="stack-form" novalidate>
<p id="mcp-add-error" class="notice notice-error" role="alert" hidden></p>
<div class="field-row">
<div class="field"><label for="mcp-add-name">Name</label><input id="mcp-add-name" type="text" maxlength="64" autocomplete="off" placeholder="files" required><p class="hint">Letters, digits, _ or -: its tools are offered to agents as name__tool.</p></div>
<div class="field"><label for="mcp-add-url">URL</label><input id="mcp-add-url" type="url" autocomplete="off" placeholder="https://mcp.example.com/mcp" required></div>
<div class="field"><label for="mcp-add-secret">Secret (optional)</label><input id="mcp-add-secret" type="password" autocomplete="off"><p class="hint">Sent as its bearer token; sealed, never shown again.</p></div>
</div>
<button type="submit" class="button button-primary" id="mcp-add-submit">Add and test</button>
</form>
<div id="mcp-add-result"></div>
</div>
</section>`;
