import { contextFlag, SvcCommand } from '../src/cli/base-command.js';
import { openTokens, removeContext } from '../src/cli/contexts.js';
import { revokeToken } from '../src/cli/device-login.js';
import { UnreachableError } from '../src/cli/http-client.js';
import { contextToUse } from '../src/cli/login.js';

export interface LogoutResult {
  context: string;
  url: string;
  /** Whether the server ended the sign-in (false: it could not be reached; the tokens expire by themselves). */
  revoked: boolean;
}

export default class Logout extends SvcCommand {
  static override summary = 'End the sign-in of a context: revoked at the server, removed here.';
  static override description =
    'Revokes the sign-in at the server (its access and refresh tokens stop working at once) and removes the context from the config dir. The current context by default; --context NAME for another. When the server cannot be reached, the context is removed here all the same and the command says so (the access token then lasts until it expires).';
  static override examples = ['<%= config.bin %> logout', '<%= config.bin %> logout --context prod'];
  static override flags = { context: contextFlag };

  async run(): Promise<LogoutResult> {
    const { flags } = await this.parse(Logout);
    const { name, context } = contextToUse(flags.context);
    const tokens = openTokens(name, context);
    let revoked = false;
    if (tokens) {
      try {
        await revokeToken(context.url, tokens.refresh);
        revoked = true;
      } catch (err) {
        if (!(err instanceof UnreachableError)) throw err;
        this.logToStderr(`warning: ${err.message}; the sign-in is removed here but not revoked there.`);
      }
    }
    removeContext(name);
    this.log(`Signed out of ${context.url} (context ${name}${revoked ? ', revoked at the server' : ''}).`);
    return { context: name, url: context.url, revoked };
  }
}
