import { spawn, type ChildProcess } from 'node:child_process';
import {
  deserializeMessage,
  serializeMessage,
  STDIO_DEFAULT_MAX_BUFFER_SIZE,
  type JSONRPCMessage,
  type Transport,
} from '@modelcontextprotocol/client';

/**
 * An MCP client transport over a child process's stdin and stdout (issue 34 part 5), for the local
 * servers (local-servers.ts), in place of the SDK's StdioClientTransport, which neither starts the
 * child in a process group of its own nor ends it by its group.
 * Rules:
 * - The child runs in a new process group (and, sandboxed, a session of its own inside bwrap);
 *   `close` ends its input, sends the group SIGTERM, and SIGKILL after KILL_AFTER_MS, then waits
 *   for the exit (whatever it left in its group is killed then) and runs `cleanup` (the working
 *   directory is removed).
 * - stderr is read line by line (a line longer than MAX_LINE is cut there) and each line is given
 *   to `onStderr`; stdout carries newline-delimited JSON-RPC and nothing else (a line that is not
 *   JSON-RPC is reported to `onerror` and skipped): a process that writes more than MAX_MESSAGE
 *   bytes without ending a message is killed, as a crash. A message's chunks are joined once, at
 *   its end (the SDK's ReadBuffer joins them at every chunk, quadratic in a long message).
 * - An exit svc did not ask for is told to `onExit` with `requested: false`, then the transport
 *   closes (the SDK fails the calls in flight on it).
 */
export const KILL_AFTER_MS = 2_000;
export const MAX_LINE = 2_000;
/** The longest message read from stdout: the SDK's own bound for stdio (10 MB). */
export const MAX_MESSAGE = STDIO_DEFAULT_MAX_BUFFER_SIZE;

export interface ChildSpec {
  /** The program and its arguments (the sandbox and the limits already put in front). */
  argv: string[];
  env: Record<string, string>;
  cwd: string;
}

export class ChildTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private child: ChildProcess | undefined;
  /** The chunks of the message being read, and their length. */
  private chunks: Buffer[] = [];
  private pending = 0;
  private exited: Promise<void> | undefined;
  private closing = false;
  private readonly prepare: () => Promise<ChildSpec & { cleanup: () => Promise<void> }>;
  private readonly hooks: {
    onStderr: (line: string, pid: number) => void;
    onExit: (exit: { code: number | null; signal: string | null; requested: boolean; pid: number }) => void;
  };

  constructor(prepare: () => Promise<ChildSpec & { cleanup: () => Promise<void> }>, hooks: ChildTransport['hooks']) {
    this.prepare = prepare;
    this.hooks = hooks;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  async start(): Promise<void> {
    const spec = await this.prepare();
    const [program, ...args] = spec.argv as [string, ...string[]];
    const child = spawn(program, args, {
      cwd: spec.cwd,
      env: spec.env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
      windowsHide: true,
    });
    this.child = child;
    this.exited = new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        // What it left running in its group (a helper holding the pipes) goes with it.
        signalGroup(child, 'SIGKILL');
        void spec.cleanup().finally(() => {
          this.hooks.onExit({ code, signal, requested: this.closing, pid: child.pid ?? 0 });
          resolve();
          this.onclose?.();
        });
      });
    });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', (err) => {
        reject(err);
        // Never started (the program is gone): no exit will come.
        if (child.pid === undefined)
          void spec
            .cleanup()
            .finally(() => this.hooks.onExit({ code: null, signal: null, requested: this.closing, pid: 0 }));
      });
    });
    child.stdout!.on('data', (chunk: Buffer) => {
      let start = 0;
      for (let end = chunk.indexOf(10); end !== -1; end = chunk.indexOf(10, start)) {
        this.chunks.push(chunk.subarray(start, end));
        const line = Buffer.concat(this.chunks).toString('utf8');
        this.chunks = [];
        this.pending = 0;
        start = end + 1;
        this.deliver(line);
      }
      if (start === chunk.length) return;
      this.pending += chunk.length - start;
      if (this.pending > MAX_MESSAGE) {
        this.chunks = [];
        this.pending = 0;
        this.onerror?.(new Error(`the process wrote more than ${MAX_MESSAGE} bytes without ending a message`));
        signalGroup(child, 'SIGKILL');
        return;
      }
      this.chunks.push(chunk.subarray(start));
    });
    let partial = '';
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (text: string) => {
      const lines = (partial + text).split('\n');
      partial = lines.pop()!;
      if (partial.length > MAX_LINE) {
        lines.push(partial);
        partial = '';
      }
      for (const line of lines) if (line !== '') this.hooks.onStderr(line.slice(0, MAX_LINE), child.pid ?? 0);
    });
    child.stdin!.on('error', () => {});
  }

  private deliver(line: string): void {
    if (line.trim() === '') return;
    let message: JSONRPCMessage;
    try {
      message = deserializeMessage(line.replace(/\r$/, ''));
    } catch (err) {
      this.onerror?.(err as Error);
      return;
    }
    this.onmessage?.(message);
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || stdin.destroyed) throw new Error('the local MCP server process is not running');
    await new Promise<void>((resolve, reject) =>
      stdin.write(serializeMessage(message), (err) => (err ? reject(err) : resolve())),
    );
  }

  async close(): Promise<void> {
    const child = this.child;
    if (!child || !this.exited) return;
    this.closing = true;
    if (child.exitCode === null && child.signalCode === null) {
      child.stdin?.end();
      signalGroup(child, 'SIGTERM');
      const hard = setTimeout(() => signalGroup(child, 'SIGKILL'), KILL_AFTER_MS);
      await this.exited;
      clearTimeout(hard);
    }
    await this.exited;
  }
}

/** Signals the child's whole process group (it leads one); a group already gone is no failure. */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid) process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // Already gone.
    }
  }
}
