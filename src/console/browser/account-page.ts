import { api, failureOf, type Data } from './helpers.js';
import { plainMessage } from './plain-errors.js';
import { sessionEnded } from './sections-shared.js';

/** What the account page's parts share: its state, its API calls, and reloading the sessions. */
export interface AccountState {
  /** API calls under way: the page is not refreshed meanwhile. */
  pending: number;
  totp: boolean;
  enrolment: { secret: string; qrSvg: string } | null;
  codes: string[] | null;
  error: string;
}

export interface AccountPage {
  state: AccountState;
  /** An API call of this page: its error as plain sentences; a 401 sends the person to sign in (null). */
  call(method: string, path: string, payload?: unknown): Promise<Data>;
  /** Reloads the sessions' list (account-sessions.ts). */
  loadSessions(): Promise<void>;
}

/** The page's API call: counted in `pending`, its error message made plain. */
export function accountCall(state: AccountState): AccountPage['call'] {
  return async function call(method, path, payload) {
    state.pending += 1;
    try {
      return await api(method, path, payload);
    } catch (caught) {
      const err = failureOf(caught);
      if (sessionEnded(err)) return null;
      throw new Error(plainMessage(err.message), { cause: caught });
    } finally {
      state.pending -= 1;
    }
  };
}
