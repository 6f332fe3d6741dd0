import Joi from 'joi';
import { AppError } from '../errors/app-error.js';
import { isoAt } from '../lib/clock.js';
import type { AgentActor } from '../agents/index.js';
import { checkDocument, DocumentError, secretRefs, type WorkspaceDocument } from './document.js';
import { exportDocument } from './export.js';
import { plan } from './plan.js';
import { readState } from './read-state.js';
import type { SetupResourceRecord } from './records.js';
import { setupRepo } from './repo.js';
import { rememberedKey, type WorkspaceState } from './state.js';
import type { ApplyInput, ChangeAction, SetupDeps, SetupResult, Step } from './types.js';

export type { ApplyInput, Change, ChangeAction, SetupDeps, SetupResult } from './types.js';

/**
 * `svc apply`: a workspace made to match a file, through the same services (and so the same checks
 * and ledger records) as the console's and the machine routes; `svc export`: the file of a
 * workspace (export.ts).
 * Rules:
 * - A resource is known by its name (a budget by its scope and period, an integration by its
 *   kind). In the file and not in the workspace: created; in both and different: updated, naming
 *   the fields that differ; the same: unchanged, and nothing is written. Applying a file twice
 *   changes nothing the second time (`changed: false`), and writes no ledger record.
 * - A dry run answers the same plan and writes nothing.
 * - In the workspace and not in the file: left alone, and listed as `unmanaged`. With `prune`,
 *   the agents and MCP servers that apply created from a file (never those people made) are
 *   removed instead (`remove`). Templates, blueprints, budgets and integrations are never removed.
 * - Secrets come as values the caller read from its environment (`secrets`, by variable name);
 *   a secret is compared with the one stored, never answered, and the variable's name is kept so
 *   that export writes the same reference back.
 * - Order: templates, blueprints, agents, budgets, MCP servers, integrations, then removals; each
 *   change is its own write, so a failure part-way leaves what came before it applied, and
 *   applying the file again finishes the rest.
 * - An agent's mandate is the rules of its blueprint's templates and its own templates (the file
 *   names no rules for an agent: a token may attach mandates from templates only); with
 *   `manageMandate: false` apply leaves the mandate people set.
 * - One `setup.applied` ledger record sums up an apply that changed something.
 */

/**
 * `svc apply` and `svc export` (the rules above). Reads every resource the file can hold through
 * its domain's service; apply writes through those services (their own writes and ledger
 * records), remembers what it created and which variable held each secret (`setupResources`),
 * and records one `setup.applied`.
 */
export interface Setup {
  /**
   * Makes the workspace match the document (or, with `dryRun`, says what that would change).
   * Refuses a document that is not a workspace file (`invalid_workspace_file`, `secret_in_file`)
   * or names a secret's variable that `secrets` lacks (`secret_unset`).
   *
   * `compareSecrets: false` (a plan for a caller who may not apply it) compares no secret the file
   * gives with the stored one: each is listed as a change ("will be set"), so that a plan never
   * confirms a guessed secret.
   */
  apply(wid: string, input: ApplyInput, who: AgentActor, options?: { compareSecrets?: boolean }): Promise<SetupResult>;
  /** The workspace as a file: names instead of ids, secrets as references to variables. */
  export(wid: string): Promise<WorkspaceDocument>;
}

export function createSetup(deps: SetupDeps): Setup {
  const { store, clock, ledger } = deps;
  const repo = setupRepo(store);

  /** After a step: what apply remembers of its resource (created by a file, the secret's variable), written only when it changed. */
  async function remember(wid: string, step: Step, state: WorkspaceState): Promise<void> {
    if (step.action === 'remove') {
      await store.write(() => repo.remove(wid, step.section, step.name));
      return;
    }
    if (!step.remember) return;
    const before = state.remembered.get(rememberedKey(step.section, step.name));
    const next: SetupResourceRecord = {
      workspaceId: wid,
      section: step.section,
      name: step.name,
      createdByFile: step.remember.createdByFile ?? before?.createdByFile ?? false,
      secretFromEnv:
        step.remember.secretFromEnv !== undefined ? step.remember.secretFromEnv : (before?.secretFromEnv ?? null),
      updatedAt: isoAt(clock.now()),
    };
    if (before && before.createdByFile === next.createdByFile && before.secretFromEnv === next.secretFromEnv) return;
    await store.write(() => repo.put(next));
  }

  return {
    async apply(wid, input, who, options = {}) {
      const doc = checkedOrRefused(input.document);
      const secrets = input.secrets ?? {};
      const missing = secretRefs(doc).filter((r) => secrets[r.fromEnv] === undefined);
      if (missing.length > 0)
        throw new AppError('secret_unset', {
          message: missing
            .map((m) => `${m.field} refers to the environment variable ${m.fromEnv}, which is not set`)
            .join('; '),
          details: { errors: missing.map((m) => ({ field: m.field, message: `${m.fromEnv} is not set` })) },
        });
      const prune = input.prune === true;
      const dryRun = input.dryRun === true;
      const compareSecrets = options.compareSecrets ?? true;
      if (!compareSecrets && !dryRun) throw new Error('a setup that compares no secret is a plan only');
      const { steps, generated, state } = await plan(deps, wid, doc, secrets, who, prune, compareSecrets);
      if (!dryRun) {
        for (const step of steps) {
          if (step.run && step.action !== 'unchanged' && step.action !== 'unmanaged') await step.run();
          await remember(wid, step, state);
        }
      }
      const summary: Record<ChangeAction, number> = { create: 0, update: 0, unchanged: 0, remove: 0, unmanaged: 0 };
      for (const s of steps) summary[s.action] += 1;
      const changed = summary.create + summary.update + summary.remove > 0;
      if (changed && !dryRun) {
        await store.write(() =>
          ledger.record({
            workspaceId: wid,
            actor: who.actor,
            ...(who.tokenId ? { tokenId: who.tokenId } : {}),
            kind: 'setup.applied',
            subject: wid,
            data: { create: summary.create, update: summary.update, remove: summary.remove, prune },
          }),
        );
      }
      return {
        dryRun,
        prune,
        changed,
        summary,
        changes: steps.map(({ section, name, action, fields }) => ({ section, name, action, fields })),
        secrets: generated,
      };
    },

    async export(wid) {
      return exportDocument(await readState(deps, wid));
    },
  };
}

/** The document checked, or the file's refusal as an error of the catalogue (with each problem's path). */
function checkedOrRefused(document: unknown): WorkspaceDocument {
  try {
    return checkDocument(document);
  } catch (err) {
    if (err instanceof DocumentError)
      throw new AppError(err.type, {
        details: { errors: err.errors.map((e) => ({ field: e.field, message: e.message })) },
      });
    throw err;
  }
}

/** The body of `POST /v1/admin/setup`. */
export const applyBodySchema = Joi.object({
  document: Joi.object().unknown(true).required(),
  secrets: Joi.object()
    .pattern(/^[A-Za-z_][A-Za-z0-9_]*$/, Joi.string().max(4096))
    .max(100),
  dryRun: Joi.boolean(),
  prune: Joi.boolean(),
});
