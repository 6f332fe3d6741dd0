import { escapeHtml } from '../../lib/html.js';
import { page as signinPage } from '../pages.js';

/**
 * The console page where a signed-in person approves or denies a command-line sign-in
 * (`svc login`, RFC 8628's verification URI, /device): enter the code the terminal shows, check
 * where the request came from, choose the workspace, approve or deny. Server-rendered, no
 * script; every value passes through escapeHtml; its forms post only to this origin.
 */
export const DEVICE_PAGE_POLICY =
  "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const page = (title: string, content: string) => signinPage(title, content, 'device');

/** The code form: what the person types the terminal's code into (with the problem of a previous try, if any). */
export function deviceCodePage(input: { person: string; problem?: string; typed?: string }): string {
  return page(
    'Sign in the command line · svc',
    `<h1>Sign in the svc command line</h1>
${input.problem ? `<p class="notice notice-error" id="problem" role="alert">${escapeHtml(input.problem)}</p>\n` : ''}<form id="device-code" class="card" method="get" action="/device">
<p>Type the code that <code>svc login</code> printed in your terminal. You are signed in as ${escapeHtml(input.person)}.</p>
<label for="user_code">Code</label>
<input id="user_code" name="user_code" autocomplete="off" autocapitalize="characters" spellcheck="false" maxlength="16" required value="${escapeHtml(input.typed ?? '')}">
<p class="actions"><button type="submit" id="continue">Continue</button></p>
</form>`,
  );
}

/** The decision form for one waiting sign-in. */
export function deviceConfirmPage(input: {
  person: string;
  userCode: string;
  requestedFrom: string;
  requestedAt: string;
  workspaces: Array<{ id: string; name: string; role: string }>;
}): string {
  const choices = input.workspaces
    .map(
      (w, i) =>
        `<label class="choice"><input type="radio" name="workspace" value="${escapeHtml(w.id)}"${i === 0 ? ' checked' : ''}> <strong>${escapeHtml(w.name)}</strong> <span class="muted">(your role: ${escapeHtml(w.role)})</span></label>`,
    )
    .join('\n');
  return page(
    'Approve the command line · svc',
    `<h1>Approve the svc command line?</h1>
<form id="device-decision" class="card" method="post" action="/device">
<p>A terminal asks to act as you, ${escapeHtml(input.person)}, with your role's permissions: what you cannot do in the console, it cannot do either.</p>
<p>Code <strong id="user-code">${escapeHtml(input.userCode)}</strong>, asked from <strong id="requested-from">${escapeHtml(input.requestedFrom)}</strong> at ${escapeHtml(input.requestedAt)}. Approve only if it is the code your own terminal shows.</p>
${
  input.workspaces.length > 0
    ? `<fieldset><legend>For the workspace</legend>\n${choices}\n</fieldset>`
    : '<p class="notice notice-error">You belong to no workspace.</p>'
}
<input type="hidden" name="user_code" value="${escapeHtml(input.userCode)}">
<p class="actions">${input.workspaces.length > 0 ? '<button type="submit" name="decision" value="approve" id="approve">Approve</button> ' : ''}<button type="submit" name="decision" value="deny" id="deny">Deny</button></p>
</form>`,
  );
}

/** What the person sees once they decided. */
export function deviceDonePage(decision: 'approve' | 'deny', workspaceName: string): string {
  return page(
    decision === 'approve' ? 'Command line signed in · svc' : 'Sign-in denied · svc',
    decision === 'approve'
      ? `<h1>Approved</h1>
<p class="notice" id="done">The command line is signed in to ${escapeHtml(workspaceName)} as you. Return to your terminal. <code>svc logout</code> there ends it.</p>`
      : `<h1>Denied</h1>
<p class="notice" id="done">The command line was not signed in. Nothing was shared.</p>`,
  );
}
