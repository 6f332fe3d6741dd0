import { text } from 'node:stream/consumers';
import { Args, Flags } from '@oclif/core';
import { contextFlag, EXIT, SvcCommand, urlFlag } from '../../src/cli/base-command.js';
import { resolveRemote } from '../../src/cli/remote.js';
import { serverClient } from '../../src/cli/client.js';
import { InvalidReceipt, keySetFor } from '../../src/cli/receipt-check.js';
import { describeVerdict } from '../../src/cli/receipt-text.js';
import { jwksUrlOf } from '../../src/receipts/key-set.js';
import { verdictOffline, type ReceiptVerdict } from '../../src/receipts/verdict.js';

export default class ReceiptVerify extends SvcCommand {
  static override summary = "Check a receipt's signature and show what it says.";
  static override description =
    "Offline by default, against a JSON Web Key Set: a file, or a URL fetched once (without --jwks, the server's /.well-known/jwks.json at --url). With --online, asks the server (POST /v1/verify), which also says whether the receipt was checked online before. Exit 0 valid, 1 invalid, 2 usage, 3 unreachable.";
  static override examples = [
    '<%= config.bin %> receipt verify eyJhbGciOiJFZERTQSIs... --jwks ./jwks.json',
    'pbpaste | <%= config.bin %> receipt verify - --jwks https://svc.example.com/.well-known/jwks.json --json',
    'SVC_URL=https://svc.example.com <%= config.bin %> receipt verify "$RECEIPT" --online',
  ];
  static override args = {
    receipt: Args.string({
      description: 'the receipt (compact JWS), or - to read it from standard input',
      required: true,
    }),
  };
  static override flags = {
    jwks: Flags.string({ description: 'key set: a JSON file, or an http(s) URL fetched once', exclusive: ['online'] }),
    online: Flags.boolean({ description: 'ask the server (POST /v1/verify) instead of verifying here' }),
    url: urlFlag,
    context: contextFlag,
  };

  async run(): Promise<ReceiptVerdict> {
    const { args, flags } = await this.parse(ReceiptVerify);
    const token = (args.receipt === '-' ? await text(process.stdin) : args.receipt).trim();
    if (token === '')
      this.fail(
        'no receipt given (standard input was empty)',
        EXIT.usage,
        'usage',
        'Pass the receipt, or pipe it in with -.',
      );
    const url = resolveRemote(flags, undefined, { useSignIn: false }).url;
    const base = URL.canParse(url) ? new URL(url) : null;
    if ((flags.online || !flags.jwks) && !['http:', 'https:'].includes(base?.protocol ?? ''))
      this.fail(
        `--url ${url} is not an http(s) URL`,
        EXIT.usage,
        'usage',
        'Pass --url (or SVC_URL) as http(s)://host:port.',
      );
    const verdict = flags.online
      ? await serverClient(url).verify(token)
      : await verdictOffline(token, await keySetFor(flags.jwks ?? jwksUrlOf(base!), (line) => this.logToStderr(line)));
    for (const line of describeVerdict(verdict)) this.log(line);
    if (!verdict.valid) throw new InvalidReceipt(verdict);
    return verdict;
  }

  protected override toErrorJson(err: unknown): unknown {
    return err instanceof InvalidReceipt ? err.verdict : super.toErrorJson(err);
  }
}
