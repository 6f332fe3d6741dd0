import type { MandateRule } from '../mandates/records.js';
import type { FileAgent, FileBudget, FileIntegrations, FileMcpServer, WorkspaceDocument } from './document.js';
import { DOCUMENT_VERSION } from './document.js';
import { defaultSecretEnv, distinctRules, rememberedKey, ruleKey, type WorkspaceState } from './state.js';
import { GIVEN } from './types.js';

/**
 * A workspace as its file (`svc export`): what `svc apply` of that file would find unchanged.
 * Rules:
 * - Ids become names: templates in blueprints and agents, blueprints in agents, agents in
 *   budgets, people (actsFor, approvers) by e-mail address.
 * - A secret is written as `{ fromEnv: NAME }`: the variable apply last read it from, or a name
 *   made from the resource (MCP_<SERVER>_SECRET, STRIPE_SIGNING_SECRET, SLACK_SIGNING_SECRET,
 *   GITHUB_TOKEN). Its value is never read here.
 * - An agent's mandate is written as templates: its blueprint's, and then the workspace's
 *   templates whose rules it holds, when those rules are exactly its mandate; otherwise (a
 *   mandate people edited by hand) the agent is written with `manageMandate: false`, so apply
 *   leaves that mandate alone.
 * - Budgets of removed agents, and the configuration's local MCP servers, are left out.
 */
export function exportDocument(state: WorkspaceState): WorkspaceDocument {
  const email = (id: string) => state.emails.get(id) ?? id;
  const templateName = new Map(state.templates.map((t) => [t.id, t.name] as const));
  const rulesOf = (id: string) => state.templates.find((t) => t.id === id)?.rules ?? [];
  const fileRule = ({ id: _id, ...rule }: MandateRule) =>
    rule.approval?.approvers
      ? { ...rule, approval: { ...rule.approval, approvers: rule.approval.approvers.map(email) } }
      : rule;

  const agents = state.agents.map((a): FileAgent => {
    const bp = state.blueprints.find((b) => b.id === a.blueprint);
    const mandate = state.mandates.get(a.id) ?? [];
    const base = distinctRules((bp?.templates ?? []).flatMap(rulesOf).map(({ id: _id, ...r }) => r));
    const covered = new Set(base.map(ruleKey));
    const inMandate = new Set(mandate.map(ruleKey));
    const extra: string[] = [];
    for (const t of state.templates) {
      const keys = t.rules.map(ruleKey);
      if (keys.length > 0 && keys.every((k) => inMandate.has(k)) && keys.some((k) => !covered.has(k))) {
        extra.push(t.name);
        keys.forEach((k) => covered.add(k));
      }
    }
    const exact = covered.size === inMandate.size && [...inMandate].every((k) => covered.has(k));
    return {
      name: a.name,
      ...(bp ? { blueprint: bp.name } : {}),
      ...(exact && extra.length > 0 ? { templates: extra } : {}),
      ...(a.actsFor ? { actsFor: email(a.actsFor) } : {}),
      ...(a.tags.length > 0 ? { tags: a.tags } : {}),
      ...(exact ? {} : { manageMandate: false }),
    };
  });

  const agentName = new Map(state.agents.map((a) => [a.id, a.name] as const));
  const budgets: FileBudget[] = [];
  for (const b of state.budgets) {
    let scope: FileBudget['scope'];
    if (b.scope.kind === 'workspace') scope = { kind: 'workspace' };
    else if (b.scope.kind === 'agent') {
      const name = agentName.get(b.scope.id);
      if (name === undefined) continue;
      scope = { kind: 'agent', agent: name };
    } else scope = { kind: b.scope.kind, id: b.scope.id };
    budgets.push({ scope, amountMicros: b.amountMicros, period: b.period, ladder: b.ladder });
  }

  const envOf = (section: 'mcpServers' | 'integrations', name: string) =>
    state.remembered.get(rememberedKey(section, name))?.secretFromEnv ?? defaultSecretEnv(section, name);
  const mcpServers = state.mcpServers
    .filter((s) => s.kind !== 'local')
    .map((s): FileMcpServer => ({
      name: s.name,
      url: s.url,
      ...(s.secretSealed ? { secret: { fromEnv: envOf('mcpServers', s.name) } } : {}),
      ...(s.allowTools ? { allowTools: s.allowTools } : {}),
      ...(s.unprefixed ? { unprefixed: true } : {}),
    }));

  const integrations: Record<string, unknown> = {};
  for (const { kind, config, hasToken } of state.integrations.map((i) => ({
    ...i,
    hasToken: state.integrationSecrets.get(i.kind) === true,
  }))) {
    const plain = Object.fromEntries(Object.entries(config).filter(([, v]) => v !== null && v !== undefined));
    if (kind === 'issuer') integrations.issuer = {};
    else if (kind === 'acp') integrations.acp = {};
    else if (kind === 'chat-relay') integrations['chat-relay'] = plain;
    else if (kind === 'github')
      integrations.github = { ...plain, ...(hasToken ? { token: { fromEnv: envOf('integrations', 'github') } } : {}) };
    else if (GIVEN.has(kind))
      integrations[kind] = { ...plain, signingSecret: { fromEnv: envOf('integrations', kind) } };
    else integrations[kind] = plain;
  }

  return {
    version: DOCUMENT_VERSION,
    templates: state.templates.map((t) => ({ name: t.name, rules: t.rules.map(fileRule) })),
    blueprints: state.blueprints.map((b) => ({
      name: b.name,
      tags: b.tags,
      templates: b.templates.map((id) => templateName.get(id) ?? id),
    })),
    agents,
    budgets,
    mcpServers,
    integrations: integrations as FileIntegrations,
  };
}
