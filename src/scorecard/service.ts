import type { AgentsService } from '../agents/index.js';
import { AppError } from '../errors/app-error.js';
import type { Ledger } from '../ledger/service.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import type { SigningKeys } from '../signing/service.js';
import type { Store } from '../store/index.js';
import { controlFigures, type ControlFigures } from './figures.js';
import { scorecardRepo } from './repo.js';

/**
 * The signed scorecard (issue 5; `GET /v1/admin/scorecard`, docs/gate.md#scorecard).
 * Rules:
 * - The figures (figures.ts) are read at once, outside any write (one read-only pass: a write
 *   transaction over every action of a busy workspace would conflict with its traffic), so they
 *   describe the store as of the request, give or take the writes that land while it is read;
 *   `ledgerSize` is the ledger's record count read with them, once what waited is integrated.
 * - It is a compact JWS (EdDSA) signed with the workspace ledger's key: the key of the evidence,
 *   published in /.well-known/jwks.json with `use: "ledger"`, never the receipt key, so that no
 *   scorecard can pass for a receipt. Header `typ: "svc-scorecard+jwt"`.
 * - Claims: `iss` (base url), `sub` (workspace id), `iat`, `jti` (`scr_` id), `asOf`,
 *   `ledgerSize`, and the figures.
 * - Reading it is evidence:read; it reads everything of the workspace, so it costs a pass over its
 *   actions and approvals: fine for an audit step, not for a dashboard that polls every second.
 */
export type ScorecardClaims = ControlFigures & {
  iss: string;
  sub: string;
  iat: number;
  jti: string;
  asOf: string;
  ledgerSize: number;
};

export const SCORECARD_TYP = 'svc-scorecard+jwt';

export function createScorecard(deps: {
  store: Store;
  clock: Clock;
  ids: IdSource;
  ledger: Ledger;
  agents: AgentsService;
  signingKeys: SigningKeys;
  issuer: () => string;
}): Scorecard {
  const { store, clock, ids, ledger, agents, signingKeys } = deps;
  const repo = scorecardRepo(store);
  /** The workspace's live agents as people see them (with their standing). */
  const viewsOf = async (wid: string) => Promise.all((await agents.list(wid)).map((a) => agents.view(a)));

  return {
    /** The figures as of now, unsigned. */
    async figures(wid: string): Promise<{ figures: ControlFigures; ledgerSize: number }> {
      // The records still waiting are integrated first, so ledgerSize counts every decision so far.
      await ledger.integrateNow(wid);
      const [views, drills, approvals, actions, head] = await Promise.all([
        viewsOf(wid),
        repo.drillReports(wid),
        repo.approvals(wid),
        repo.actions(wid),
        ledger.head(wid),
      ]);
      const figures = controlFigures({ agents: views, drills, approvals, actions });
      return { figures, ledgerSize: head?.size ?? 0 };
    },

    async signed(wid: string): Promise<{ scorecard: string; claims: ScorecardClaims }> {
      // A store set up by `svc serve` or `svc init` has the key; any other gets it now.
      let key = await signingKeys.current('ledger');
      if (!key) {
        await signingKeys.ensure();
        key = await signingKeys.current('ledger');
      }
      if (!key) throw new AppError('internal', { cause: new Error('no ledger key after ensure()') });
      const now = clock.now();
      const { figures, ledgerSize } = await this.figures(wid);
      const claims: ScorecardClaims = {
        iss: deps.issuer(),
        sub: wid,
        iat: Math.floor(now / 1000),
        jti: ids.id('scr'),
        asOf: isoAt(now),
        ledgerSize,
        ...figures,
      };
      // jose with the first scorecard, not when the server starts.
      const { CompactSign } = await import('jose');
      const scorecard = await new CompactSign(new TextEncoder().encode(JSON.stringify(claims)))
        .setProtectedHeader({ alg: 'EdDSA', kid: key.record.kid, typ: SCORECARD_TYP })
        .sign(key.privateKey);
      return { scorecard, claims };
    },
  };
}

/**
 * The workspace's control scorecard: figures read from agents, drills, approvals and actions (it
 * writes nothing but the ledger key it signs with, on a store that lacks one).
 */
export interface Scorecard {
  /** The figures as of now, unsigned, with the ledger's size they were read at. */
  figures(wid: string): Promise<{ figures: ControlFigures; ledgerSize: number }>;
  /** The figures signed with the ledger key as a JWT of type svc-scorecard+jwt, and its claims. */
  signed(wid: string): Promise<{ scorecard: string; claims: ScorecardClaims }>;
}
