import { Flags } from '@oclif/core';
import { contextFlag, SvcCommand, urlFlag } from '../src/cli/base-command.js';
import { serverClient, type WhoAmI } from '../src/cli/client.js';
import { readContexts } from '../src/cli/contexts.js';
import { CliFailure, EXIT } from '../src/cli/base-command.js';
import { resolveRemote } from '../src/cli/remote.js';

export interface WhoAmIResult {
  url: string;
  /** The context used (null: a service token, or --url to a server of no context). */
  context: string | null;
  /** Whether that context is the current one. */
  current: boolean;
  credential: WhoAmI;
  /** Every context kept, and which is current. */
  contexts: Array<{ name: string; url: string; email: string; workspace: string; current: boolean }>;
}

export default class WhoAmICommand extends SvcCommand {
  static override summary = 'Show who the command line acts as, on which server, in which context, until when.';
  static override description =
    "Asks the server who the credential is (GET /v1/admin/whoami): the person signed in with svc login (their role and workspace, the access token's expiry; it is refreshed first if it expired), or the service token given with --token/SVC_TOKEN (its name, scopes and expiry). Lists the contexts kept, the current one marked with *.";
  static override examples = ['<%= config.bin %> whoami', '<%= config.bin %> whoami --context prod --json'];
  static override flags = {
    url: urlFlag,
    context: contextFlag,
    token: Flags.string({ description: 'a service token to describe instead of the sign-in', env: 'SVC_TOKEN' }),
  };

  async run(): Promise<WhoAmIResult> {
    const { flags } = await this.parse(WhoAmICommand);
    const remote = resolveRemote(flags, flags.token);
    if (!remote.bearer)
      throw new CliFailure(`not signed in to ${remote.url}`, {
        exit: EXIT.usage,
        type: 'unauthenticated',
        fix: 'Sign in with svc login --url URL, or set SVC_TOKEN to a service token.',
      });
    const credential = await serverClient(remote.url, remote.bearer).whoami();
    const file = readContexts();
    const context = typeof remote.bearer === 'string' ? null : remote.context;
    const contexts = Object.entries(file.contexts).map(([name, c]) => ({
      name,
      url: c.url,
      email: c.user.email,
      workspace: c.workspace.name,
      current: file.current === name,
    }));
    if (credential.kind === 'person') {
      this.log(
        `${credential.user.email} (${credential.user.id}), ${credential.role} in ${credential.workspace.name} (${credential.workspace.id})`,
      );
      // After a refresh, the expiry kept in the context is the new token's.
      const kept = context ? readContexts().contexts[context] : undefined;
      this.log(`server ${remote.url}, context ${context}${file.current === context ? ' (current)' : ''}`);
      this.log(`access token expires ${kept?.accessExpiresAt ?? credential.expiresAt} (refreshed by itself)`);
    } else {
      this.log(
        `service token ${credential.token.name} (${credential.token.id}) in ${credential.workspace.name} (${credential.workspace.id})`,
      );
      this.log(
        `server ${remote.url}; scopes ${credential.token.scopes.join(' ')}; expires ${credential.token.expiresAt}`,
      );
    }
    if (contexts.length)
      this.log(`contexts: ${contexts.map((c) => `${c.current ? '*' : ''}${c.name} (${c.url})`).join(', ')}`);
    return { url: remote.url, context, current: context !== null && file.current === context, credential, contexts };
  }
}
