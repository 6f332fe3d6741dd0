import { Flags, ux } from '@oclif/core';
import { SvcCommand } from '../src/cli/base-command.js';
import { login, type LoginResult } from '../src/cli/login.js';

export default class Login extends SvcCommand {
  static override summary = 'Sign the command line in as yourself: approve a code in the console (OAuth device flow).';
  static override description =
    "Prints a code and an address (RFC 8628 device authorization). Open the address signed in to the console, check the code and approve: the command line then acts as you, with your role's permissions in the workspace you chose (what you cannot do in the console, it cannot do either), and the ledger names you. The sign-in is kept as a named context (--name; default: the server's host) and made current; later commands use it without --url or --token (--context NAME picks another; --url, --token and their variables still come first). Tokens expire and are refreshed by themselves; svc logout ends the sign-in. Kept in the config dir (SVC_CONFIG_DIR, else $XDG_CONFIG_HOME/svc, else ~/.config/svc), tokens sealed: see docs/cli.md. Scripts and CI keep service tokens (SVC_TOKEN).";
  static override examples = [
    '<%= config.bin %> login --url https://svc.example',
    '<%= config.bin %> login --url https://svc.prod.example --name prod',
    '<%= config.bin %> login --name prod   # sign in to a known context again',
  ];
  static override flags = {
    url: Flags.string({
      description: "the server (default: the named context's, else http://127.0.0.1:8080)",
      env: 'SVC_URL',
    }),
    name: Flags.string({ description: "the context's name (default: the server's host)" }),
  };

  async run(): Promise<LoginResult> {
    const { flags } = await this.parse(Login);
    // The code and the address go to stderr, with --json too (a person must read them); stdout
    // holds only the result.
    const result = await login(flags, (line) => ux.stderr(line));
    this.log(
      `Signed in to ${result.url} as ${result.user.email} (${result.role} in ${result.workspace.name}); context ${result.context} is current.`,
    );
    return result;
  }
}
