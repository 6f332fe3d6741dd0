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

export function startChild<Boot extends { listening: string }>(args: string[], env: NodeJS.ProcessEnv): Promise<Child<Boot>> {
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stderr!.resume();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  // The driver must not leave a server running if it fails between start and stop.
  const reap = () => { if (child.exitCode === null) child.kill('SIGKILL'); };
  process.once('exit', reap);
  void exited.then(() => process.off('exit', reap));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      try {
        const boot = JSON.parse(out) as Boot;
        resolve({ child, boot, url: boot.listening, stop });
      } catch { /* not complete yet */ }
    });
    child.on('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}: ${out}`)));
  });
}
