import { Command, Errors, Flags, ux } from '@oclif/core';
import { AppError } from '../errors/app-error.js';
import { entryOf, fixOf } from '../errors/catalogue.js';
import { systemError } from '../errors/system.js';
import { StoreError } from '../store/errors.js';
import { useConfigDir } from './config-dir.js';
import { RemoteError, UnreachableError } from './http-client.js';

/**
 * Every command: `--json` prints one JSON document on stdout and nothing else (logs go to
 * stderr); failures map to the exit codes of docs/cli.md#command-line:
 * 0 success, 1 the operation ran and failed (the thing checked is false, the server refused),
 * 2 usage or configuration error, 3 cannot reach or open the store, the master key does not match
 * it, or the port cannot be bound, 4 refused without running (a drill in its cooldown).
 *
 * This module is loaded by every command, remote ones included: it imports nothing heavy (the
 * settings loader and the app are loaded only by the commands that open the store).
 */
export const EXIT = { ok: 0, false: 1, usage: 2, unreachable: 3, notRun: 4 } as const;

export class CliFailure extends Errors.CLIError {
  readonly exitCode: number;
  readonly type: string;
  readonly fix: string | undefined;
  /** What the error says beside its message (a selector's `count`), shown under --json. */
  readonly details: Record<string, unknown>;

  constructor(
    message: string,
    options: { exit: number; type: string; fix?: string | undefined; details?: Record<string, unknown> },
  ) {
    // Without a fix of its own, the catalogue's for the type: every failure says what to do.
    const fix = options.fix ?? fixOf(options.type);
    // oclif prints suggestions under the message on a terminal ("Try this: ..."); --json has `fix`.
    super(message, { exit: options.exit, ...(fix ? { suggestions: [fix] } : {}) });
    this.exitCode = options.exit;
    this.type = options.type;
    this.fix = fix;
    this.details = options.details ?? {};
  }
}

export const dataDirFlag = Flags.string({ description: 'data directory of the store', env: 'SVC_DATA_DIR' });
/**
 * The store (docs/operations.md#store-backends): every command that takes --data-dir takes it too.
 * Never echoed: it may hold a password.
 */
export const storeFlag = Flags.string({
  description:
    'the store: lmdb: (the file under --data-dir, the default) or postgres://user:password@host:port/database',
  env: 'SVC_STORE_URL',
});
/** No default here: without it, the context's server, else http://127.0.0.1:8080 (remote.ts). */
export const urlFlag = Flags.string({
  description: "address of a running svc server (default: the context's, else http://127.0.0.1:8080)",
  env: 'SVC_URL',
});
/** A server signed in to with svc login, by the name given there (default: the current one). */
export const contextFlag = Flags.string({
  description: 'the sign-in context to use (svc login --name): its server and person; default: the current one',
  env: 'SVC_CONTEXT',
});

export abstract class SvcCommand extends Command {
  static override enableJsonFlag = true;

  public override async init(): Promise<void> {
    await super.init();
    // Where svc login keeps its contexts: oclif's config dir for svc (SVC_CONFIG_DIR, XDG_CONFIG_HOME/svc, ~/.config/svc).
    useConfigDir(this.config.configDir);
  }

  /**
   * The thing checked is false (an invalid receipt, a broken ledger): the result is still printed
   * (with --json, as the one JSON document), and the command exits 1 once it is written.
   */
  protected checkedFalse(): void {
    process.exitCode = EXIT.false;
  }

  /**
   * A long operation with a progress display on stderr, shown only when stderr is a terminal
   * (a spinner; oclif falls back to one plain line under CI or TERM=dumb). Pipes and CI logs get
   * nothing extra, and stdout (the result, or the one --json document) is never touched.
   * `step(status)` updates the line: "3/40".
   */
  protected async progress<T>(label: string, fn: (step: (status: string) => void) => Promise<T>): Promise<T> {
    if (!process.stderr.isTTY) return fn(() => {});
    ux.action.start(label);
    try {
      const result = await fn((status) => {
        ux.action.status = status;
      });
      ux.action.stop('done');
      return result;
    } catch (err) {
      ux.action.stop('failed');
      throw err;
    }
  }

  protected fail(message: string, exit: number, type = 'failed', fix?: string): never {
    throw new CliFailure(message, { exit, type, ...(fix ? { fix } : {}) });
  }

  protected override async catch(err: Error & { exitCode?: number }): Promise<unknown> {
    // An error before the flags were parsed whole is a usage error, whichever part of oclif threw it.
    return super.catch(await toCliFailure(err, { parsing: !this.parsed }));
  }

  protected override toErrorJson(err: unknown): unknown {
    if (err instanceof CliFailure) {
      return {
        error: {
          ...err.details,
          type: err.type,
          message: err.message,
          ...(err.fix ? { fix: err.fix } : {}),
          exitCode: err.exitCode,
        },
      };
    }
    return super.toErrorJson(err);
  }
}

async function toCliFailure(err: Error, context: { parsing: boolean } = { parsing: false }): Promise<Error> {
  if (err instanceof CliFailure) return err;
  if (err instanceof StoreError && err.code === 'no_space')
    return toCliFailure(new AppError('disk_full', { message: err.message, cause: err }));
  // Damage found inside the file by a read: the same error as damage found before opening it.
  if (err instanceof StoreError && err.code === 'damaged')
    return toCliFailure(new AppError('store_damaged', { message: err.message, cause: err }));
  if (err instanceof StoreError)
    return new CliFailure(err.message, { exit: EXIT.unreachable, type: `store_${err.code}` });
  // svc serve --workers: a worker failed to start; the command fails as that worker did.
  if (err.name === 'WorkerStartFailed')
    return new CliFailure(err.message, { exit: (err as Error & { exitCode: number }).exitCode, type: 'worker_failed' });
  // Only a command that loaded the settings can have failed on them; loading the module to ask costs
  // nothing then.
  if (err.name === 'SettingsError' && err instanceof (await import('../settings/load.js')).SettingsError)
    return new CliFailure(err.message, { exit: EXIT.usage, type: 'invalid_configuration' });
  if (err instanceof UnreachableError)
    return new CliFailure(err.message, {
      exit: EXIT.unreachable,
      type: 'unreachable',
      fix: 'Start the server, or pass --url (or SVC_URL) naming where it runs.',
    });
  if (err instanceof RemoteError) {
    const usage = err.status === 400;
    return new CliFailure(`${err.message} (${err.type}, HTTP ${err.status})`, {
      exit: usage ? EXIT.usage : EXIT.false,
      type: err.type,
      ...(err.fix ? { fix: err.fix } : {}),
      details: err.details,
    });
  }
  if (err instanceof AppError) {
    const exit = entryOf(err.type).exit ?? (err.status === 400 ? EXIT.usage : EXIT.false);
    return new CliFailure(err.message, { exit, type: err.type, fix: err.fix, details: err.details });
  }
  // The operating system's refusals met outside the store and the listener (a file named by a
  // flag, say): the catalogue's error for it rather than a raw errno object.
  const path = (err as NodeJS.ErrnoException).path;
  const system = typeof path === 'string' ? systemError(err, { kind: 'file', path }) : undefined;
  if (system) return toCliFailure(system);
  if (err instanceof Errors.CLIError && ('parse' in err || context.parsing)) {
    // oclif's parse and flag-validation errors (unknown flag, bad choice, missing or conflicting
    // flags, a flag without its value): usage, whatever exit code oclif gives that kind.
    return new CliFailure(err.message, {
      exit: EXIT.usage,
      type: 'usage',
      fix: 'See --help for the flags this command takes.',
    });
  }
  return err;
}
