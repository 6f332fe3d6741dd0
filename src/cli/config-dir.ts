import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * The folder svc login keeps its contexts in (contexts.ts): oclif's config dir for svc
 * (`$SVC_CONFIG_DIR`, else `$XDG_CONFIG_HOME/svc`, else `~/.config/svc`), which every command
 * sets before it runs (base-command.ts); `~/.config/svc` for code run outside a command.
 */
let dir: string | null = null;

export function useConfigDir(path: string): void {
  dir = path;
}

export function configDir(): string {
  return dir ?? join(homedir(), '.config', 'svc');
}
