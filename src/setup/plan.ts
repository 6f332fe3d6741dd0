import { AppError } from '../errors/app-error.js';
import type { AgentActor } from '../agents/index.js';
import type { WorkspaceDocument } from './document.js';
import {
  planAgents,
  planBlueprints,
  planTemplates,
  workspaceNames,
  type DefinitionsContext,
} from './plan-definitions.js';
import { planBudgets, planIntegrations, planMcpServers, planOthers, type PlanContext } from './plan-resources.js';
import { readState } from './read-state.js';
import type { WorkspaceState } from './state.js';
import { fileFault, type SetupDeps, type SetupResult, type Step } from './types.js';

/**
 * What applying a file would change, in the order apply runs it (service.ts lists the rules): the
 * workspace read once, then one step per resource, section by section: templates, blueprints,
 * agents (plan-definitions.ts), budgets, MCP servers, integrations, and what the workspace has and
 * the file does not (plan-resources.ts). Nothing is written here; each step's `run` does that.
 */
export async function plan(
  deps: SetupDeps,
  wid: string,
  doc: WorkspaceDocument,
  secrets: Record<string, string>,
  who: AgentActor,
  prune: boolean,
  compareSecrets = true,
): Promise<{ steps: Step[]; generated: SetupResult['secrets']; state: WorkspaceState }> {
  const state = await readState(deps, wid);
  const base: PlanContext = {
    deps,
    wid,
    who,
    doc,
    state,
    steps: [],
    generated: [],
    secretOf: (ref, field) => secretOf(secrets, ref, field),
    compareSecrets,
    agentIds: new Map(state.agents.map((a) => [a.name, a.id] as const)),
  };
  const ctx: DefinitionsContext = {
    ...base,
    ...workspaceNames(base),
    personOf: (ref, field) => personOf(deps, wid, ref, field),
  };
  await planTemplates(ctx);
  planBlueprints(ctx);
  await planAgents(ctx);
  const budgetsByKey = planBudgets(ctx);
  planMcpServers(ctx);
  await planIntegrations(ctx);
  planOthers(ctx, budgetsByKey, prune);
  return { steps: ctx.steps, generated: ctx.generated, state };
}

/** A secret's value from the caller's variables (secret_unset when missing). */
function secretOf(
  secrets: Record<string, string>,
  ref: { fromEnv: string } | null | undefined,
  field: string,
): string | null {
  if (!ref) return null;
  const value = secrets[ref.fromEnv];
  if (value === undefined)
    throw new AppError('secret_unset', {
      message: `${field} refers to the environment variable ${ref.fromEnv}, which is not set.`,
      details: { field, fromEnv: ref.fromEnv },
    });
  return value;
}

/** People by e-mail address (or id), as members of this workspace. */
async function personOf(
  deps: SetupDeps,
  wid: string,
  ref: string | null | undefined,
  field: string,
): Promise<string | null> {
  if (!ref) return null;
  if (!ref.includes('@')) {
    // A person of this workspace: one of another workspace is named exactly as one who does not
    // exist (the file tells nothing of other workspaces).
    const found = await deps.people.me(ref).catch(() => undefined);
    if (!found?.workspaces.some((w) => w.id === wid))
      throw fileFault(field, `${field}: ${ref} is not a person of this workspace`);
    return ref;
  }
  const id = await deps.people.memberIdByEmail(wid, ref);
  if (!id) throw fileFault(field, `${field}: ${ref} is not a person of this workspace`);
  return id;
}
