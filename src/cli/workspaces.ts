import { text } from 'node:stream/consumers';
import { Flags } from '@oclif/core';
import { CliFailure, EXIT, urlFlag } from './base-command.js';
import { asPerson, type PersonCredentials } from './person-session.js';

/** A workspace as the routes answer it, with the person's role in it. */
export interface WorkspaceView {
  id: string;
  name: string;
  role: string;
}

/** Who signs in: a person's e-mail address, and their password from SVC_PASSWORD or standard input. */
export const personFlags = {
  url: urlFlag,
  email: Flags.string({ description: 'your e-mail address as you sign in to the console', env: 'SVC_EMAIL' }),
  password: Flags.string({
    description: 'your password (prefer SVC_PASSWORD or --password-stdin)',
    env: 'SVC_PASSWORD',
  }),
  'password-stdin': Flags.boolean({ description: 'read your password from standard input' }),
  totp: Flags.string({ description: 'your two-factor code, when your account has two-factor on' }),
};

export async function credentialsOf(flags: {
  email?: string | undefined;
  password?: string | undefined;
  'password-stdin'?: boolean;
  totp?: string | undefined;
}): Promise<PersonCredentials> {
  const password = flags['password-stdin'] ? (await text(process.stdin)).replace(/\r?\n$/, '') : flags.password;
  if (!flags.email || !password)
    throw new CliFailure('this command acts as a person: give your e-mail address and password', {
      exit: EXIT.usage,
      type: 'unauthenticated',
      fix: 'Set SVC_EMAIL (or --email) and SVC_PASSWORD (or --password-stdin), as you sign in to the console.',
    });
  return { email: flags.email, password, ...(flags.totp ? { totp: flags.totp } : {}) };
}

export const workspacesClient = (url: string, who: PersonCredentials) => ({
  list: () =>
    asPerson(url, who, (call) => call<{ data: WorkspaceView[] }>('GET', '/api/workspaces')).then((p) => p.data),
  create: (name: string) => asPerson(url, who, (call) => call<WorkspaceView>('POST', '/api/workspaces', { name })),
});
