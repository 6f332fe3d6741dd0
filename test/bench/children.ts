/**
 * The benchmark's child processes: each prints one JSON document on stdout once it listens
 * (`{ listening, ... }`; `svc serve --json` pretty-prints it). Their stderr (the product's
 * request logs) is read and dropped, so that a full pipe never stalls them.
 */
import { spawn, type ChildProcess } from 'node:child_process';

export interface Child<Boot> {
  child: ChildProcess;
  boot: Boot;
  url: string;
  /** SIGTERM, then waits for the exit (a profile, if any, is written on the way out). */
  stop(): Promise<void>;
}

export function startChild<Boot extends { listening: string }>(
  args: string[],
  env: NodeJS.ProcessEnv,
  /** Sees stderr from its first byte (watch() below sees it only once the child listens). */
  onStderr?: (text: string) => void,
): Promise<Child<Boot>> {
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  if (onStderr) child.stderr!.on('data', (d: Buffer) => onStderr(d.toString()));
  child.stderr!.resume();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  // The driver must not leave a server running if it fails between start and stop.
  const reap = () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  };
  process.once('exit', reap);
  void exited.then(() => process.off('exit', reap));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      try {
        const boot = JSON.parse(out) as Boot;
        resolve({ child, boot, url: boot.listening, stop });
      } catch {
        /* not complete yet */
      }
    });
    child.on('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}: ${out}`)));
  });
}

/**
 * A server that dies mid-run would show only as failed requests: say which one, how, and the end
 * of its stderr (which children.ts otherwise drops). Counts svc's error-level log lines.
 */
export function watch(name: string, child: Child<{ listening: string }>, stopping: { now: boolean }) {
  const seen = { tail: '', errors: 0, firstErrors: [] as string[] };
  let partial = '';
  child.child.stderr!.on('data', (d: Buffer) => {
    const text = d.toString();
    seen.tail = (seen.tail + text).slice(-3000);
    const lines = (partial + text).split('\n');
    partial = lines.pop()!;
    for (const line of lines) {
      if (!/"level":(50|60)\b/.test(line)) continue;
      seen.errors += 1;
      if (seen.firstErrors.length < 3) seen.firstErrors.push(line.slice(0, 500));
    }
  });
  child.child.once('exit', (code, signal) => {
    if (!stopping.now)
      console.error(
        `\n${name} (pid ${child.child.pid}) exited during the run: code ${code}, signal ${signal}; its stderr ends:\n${seen.tail}`,
      );
  });
  return seen;
}

/** Throws when a preflight check fails, saying what and with what. */
export const expect = (what: string, ok: boolean, detail: string) => {
  if (!ok) throw new Error(`${what}: ${detail.slice(0, 400)}`);
};
