import { canonicalJson } from '../lib/canonical-json.js';
import type { AgentRecord } from '../agents/records.js';
import type { BlueprintRecord } from '../blueprints/records.js';
import type { BudgetRecord } from '../gateway/records.js';
import type { MandateRule, TemplateRecord } from '../mandates/records.js';
import type { McpServerRecord } from '../mcp/records.js';
import type { IntegrationKind } from '../integrations/records.js';
import type { SetupResourceRecord } from './records.js';

/**
 * A workspace as `svc apply` compares it with a file and `svc export` writes it: every resource
 * the file can hold, read once, with the maps between ids and the names the file uses.
 */
export interface WorkspaceState {
  workspaceId: string;
  templates: TemplateRecord[];
  blueprints: BlueprintRecord[];
  agents: AgentRecord[];
  /** Each agent's mandate rules (ids dropped), by agent id. */
  mandates: Map<string, Array<Omit<MandateRule, 'id'>>>;
  budgets: BudgetRecord[];
  mcpServers: McpServerRecord[];
  integrations: Array<{ kind: IntegrationKind; config: Record<string, unknown> }>;
  /** Whether a kind holds a secret setting (github's token), by kind. */
  integrationSecrets: Map<IntegrationKind, boolean>;
  /** What apply remembers, by `${section}/${name}`. */
  remembered: Map<string, SetupResourceRecord>;
  /** E-mail address of each person named (actsFor, approvers), by id. */
  emails: Map<string, string>;
}

export const rememberedKey = (section: string, name: string) => `${section}/${name}`;

/** A rule without its id, in a form that compares equal exactly when the rules do. */
export const ruleKey = (rule: Omit<MandateRule, 'id'> & { id?: string }): string => {
  const { id: _id, ...rest } = rule;
  return canonicalJson(rest);
};

/** Rules in order, each distinct rule once (as registering an agent from templates keeps them). */
export function distinctRules<R extends Omit<MandateRule, 'id'>>(rules: readonly R[]): R[] {
  const seen = new Set<string>();
  return rules.filter((r) => {
    const key = ruleKey(r);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Two sets of rules are the same mandate (order aside: a mandate allows what some rule covers). */
export function sameRuleSet(a: ReadonlyArray<Omit<MandateRule, 'id'>>, b: ReadonlyArray<Omit<MandateRule, 'id'>>) {
  const ka = [...new Set(a.map(ruleKey))].sort();
  const kb = [...new Set(b.map(ruleKey))].sort();
  return ka.length === kb.length && ka.every((k, i) => k === kb[i]);
}

/** Lists compared as sets (tags). */
export const sameSet = (a: readonly string[], b: readonly string[]) =>
  canonicalJson([...new Set(a)].sort()) === canonicalJson([...new Set(b)].sort());

/** The default environment variable of a secret, when apply never recorded one. */
export function defaultSecretEnv(section: 'mcpServers' | 'integrations', name: string): string {
  const word = name.toUpperCase().replace(/[^A-Z0-9]+/g, '_');
  if (section === 'mcpServers') return `MCP_${word}_SECRET`;
  return name === 'github' ? 'GITHUB_TOKEN' : `${word}_SIGNING_SECRET`;
}
