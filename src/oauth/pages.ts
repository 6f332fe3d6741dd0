import { escapeHtml } from '../lib/html.js';
import { ICON, STYLE_PATH } from '../console/pages.js';

/**
 * The OAuth pages a person sees (docs/mcp-oauth.md#oauth-for-mcp-clients): the consent screen and the error page shown
 * when the request cannot be sent back to the application (unknown client, unregistered
 * redirect). Server-rendered, no script; every value passes through escapeHtml. The consent
 * form may post only here, and the answer may redirect only to the application's own address.
 */
export function consentPolicy(redirectOrigin: string): string {
  return [
    "default-src 'none'",
    "style-src 'self'",
    "img-src 'self' data:",
    `form-action 'self' ${redirectOrigin}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}
export const ERROR_PAGE_POLICY = "default-src 'none'; style-src 'self'; frame-ancestors 'none'; base-uri 'none'";

/** A sign-in-styled page of the OAuth flows (consent, errors, the device page): its shell around `content`. */
export const page = (title: string, content: string, dataPage?: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="${ICON}">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="${STYLE_PATH}">
</head>
<body class="page-login"${dataPage ? ` data-page="${escapeHtml(dataPage)}"` : ''}>
<main class="signin">
${content}
</main>
</body>
</html>
`;

export function consentPage(input: {
  clientName: string;
  /** A client known by its metadata document: the host that document is served from. */
  clientHost?: string;
  redirectHost: string;
  request: string;
  person: string;
  agents: Array<{ agentId: string; agentName: string; workspaceName: string }>;
}): string {
  const choices = input.agents
    .map(
      (a, i) =>
        `<label class="choice"><input type="radio" name="agent" value="${escapeHtml(a.agentId)}"${i === 0 ? ' checked' : ''}> <strong>${escapeHtml(a.agentName)}</strong> <span class="muted">(${escapeHtml(a.workspaceName)})</span></label>`,
    )
    .join('\n');
  return page(
    'Connect an agent · svc',
    `<h1>Connect ${escapeHtml(input.clientName)}</h1>
${
  input.clientHost
    ? `<p class="notice" id="client-host">This application is described by <strong>${escapeHtml(input.clientHost)}</strong>. Its name above is what that site says about itself: connect it only if you trust <strong>${escapeHtml(input.clientHost)}</strong>.</p>\n`
    : ''
}<form id="consent" class="card" method="post" action="/oauth/authorize">
<p><strong>${escapeHtml(input.clientName)}</strong> (returning to ${escapeHtml(input.redirectHost)}) asks to act as one of your agents through MCP, with that agent's mandate. You are signed in as ${escapeHtml(input.person)}.</p>
${input.agents.length > 0 ? `<fieldset><legend>Connect exactly one agent</legend>\n${choices}\n</fieldset>` : '<p class="notice notice-error">You have no running agent you may connect.</p>'}
<input type="hidden" name="request" value="${escapeHtml(input.request)}">
<p class="actions">${input.agents.length > 0 ? '<button type="submit" name="decision" value="allow" id="allow">Connect</button> ' : ''}<button type="submit" name="decision" value="deny" id="deny">Deny</button></p>
</form>`,
  );
}

export function errorPage(problem: string): string {
  return page(
    'Cannot connect · svc',
    `<h1>Cannot connect this application</h1>
<p class="notice notice-error" id="problem">${escapeHtml(problem)}</p>
<p>Nothing was shared. Ask whoever set up the application to register it again.</p>`,
  );
}
