import { bumpGeneration, readGeneration } from '../store/generations.js';
import type { Store } from '../store/index.js';
import type { AgentRecord } from '../agents/records.js';
import type { ActionRecord } from '../gate/records.js';
import type {
  CardProvider,
  CardRecord,
  ChargeRecord,
  GithubBotRecord,
  GithubCallbackRecord,
  IntegrationKind,
  IntegrationRecord,
} from './records.js';

type HookEntry = { answer: Record<string, unknown>; at: string };
type CardAction = { provider: CardProvider; cardId: string; eventId: string };

/**
 * The integrations' tables: settings and secrets, cards and charges, code-host accounts and
 * reports, each inbound event's answer, identifiers accepted once, and inbound refusal counts.
 * Writes only inside `store.write` (the store rejects them elsewhere).
 */
export function integrationsRepo(store: Store) {
  const t = store.tables;
  const values = <V>(entries: Array<{ value: V }>): V[] => entries.map((e) => e.value);
  return {
    // Settings (registry.ts).
    integration(wid: string, kind: IntegrationKind): Promise<IntegrationRecord | undefined> {
      return t.integrations.get([wid, kind]);
    },
    /** Also bumps the `integrations` generation, in the same write: the registry caches opened secrets behind it. */
    async putIntegration(record: IntegrationRecord): Promise<void> {
      await t.integrations.put([record.workspaceId, record.kind], record);
      await bumpGeneration(t, 'integrations');
    },
    /** The `integrations` generation: one read that says whether the registry's cache is current. */
    generation(): Promise<number> {
      return readGeneration(t, 'integrations');
    },
    async integrations(wid: string): Promise<IntegrationRecord[]> {
      return values(await t.integrations.scan([wid]));
    },
    /** Every workspace's settings: [wid, record]. */
    async allIntegrations(): Promise<Array<[string, IntegrationRecord]>> {
      return (await t.integrations.scan([])).map(({ key, value }) => [String(key[0]), value]);
    },

    // Inbound refusals per workspace and kind (http/inbound.ts counts them; every instance adds to one count).
    async refusals(wid: string, kind: string): Promise<number> {
      return (await t.integrationRefusals.get([wid, kind])) ?? 0;
    },
    /** Inside a write: one more refusal. */
    async addRefusal(wid: string, kind: string): Promise<void> {
      await t.integrationRefusals.put([wid, kind], ((await t.integrationRefusals.get([wid, kind])) ?? 0) + 1);
    },

    // Each inbound event's answer (hook-events.ts, github/service.ts).
    hookEvent(wid: string, source: string, id: string): Promise<HookEntry | undefined> {
      return t.hookEvents.get([wid, source, id]);
    },
    putHookEvent(wid: string, source: string, id: string, entry: HookEntry): Promise<void> {
      return t.hookEvents.put([wid, source, id], entry);
    },

    // Identifiers accepted once (once.ts): until when (ms) each stays used.
    onceUntil(scope: string, id: string): Promise<number | undefined> {
      return t.hookOnce.get([scope, id]);
    },
    putOnce(scope: string, id: string, untilMs: number): Promise<void> {
      return t.hookOnce.put([scope, id], untilMs);
    },

    // Cards (cards.ts).
    card(wid: string, provider: CardProvider, cardId: string): Promise<CardRecord | undefined> {
      return t.cards.get([wid, provider, cardId]);
    },
    putCard(record: CardRecord): Promise<void> {
      return t.cards.put([record.workspaceId, record.provider, record.cardId], record);
    },
    async cards(wid: string, provider: CardProvider): Promise<CardRecord[]> {
      return values(await t.cards.scan([wid, provider]));
    },
    /** One card's charges, or with no card every charge of the workspace (any provider). */
    async charges(wid: string, provider?: CardProvider, cardId?: string): Promise<ChargeRecord[]> {
      const prefix = provider === undefined ? [wid] : cardId === undefined ? [wid, provider] : [wid, provider, cardId];
      return values(await t.charges.scan(prefix));
    },
    hasCharge(wid: string, provider: CardProvider, cardId: string, eventId: string): Promise<boolean> {
      return t.charges.has([wid, provider, cardId, eventId]);
    },
    putCharge(record: ChargeRecord): Promise<void> {
      return t.charges.put([record.workspaceId, record.provider, record.cardId, record.eventId], record);
    },
    cardAction(wid: string, actionId: string): Promise<CardAction | undefined> {
      return t.cardActions.get([wid, actionId]);
    },
    putCardAction(wid: string, actionId: string, through: CardAction): Promise<void> {
      return t.cardActions.put([wid, actionId], through);
    },
    /** An agent's actions in a workspace (the payments a charge may settle). */
    async actionsOf(wid: string, agentId: string): Promise<ActionRecord[]> {
      return values(await t.actions.scan([wid])).filter((a) => a.agentId === agentId);
    },
    /** Every action of a workspace (the decisions a merchant's checkout event may belong to). */
    async actionsIn(wid: string): Promise<ActionRecord[]> {
      return values(await t.actions.scan([wid]));
    },
    agent(wid: string, agentId: string): Promise<AgentRecord | undefined> {
      return t.agents.get([wid, agentId]);
    },

    // Code-host accounts and reports (github/).
    githubBot(wid: string, login: string): Promise<GithubBotRecord | undefined> {
      return t.githubBots.get([wid, login.toLowerCase()]);
    },
    putGithubBot(record: GithubBotRecord): Promise<void> {
      return t.githubBots.put([record.workspaceId, record.login.toLowerCase()], record);
    },
    async githubBots(wid: string): Promise<GithubBotRecord[]> {
      return values(await t.githubBots.scan([wid]));
    },
    githubCallback(wid: string, id: string): Promise<GithubCallbackRecord | undefined> {
      return t.githubCallbacks.get([wid, id]);
    },
    putGithubCallback(record: GithubCallbackRecord): Promise<void> {
      return t.githubCallbacks.put([record.workspaceId, record.id], record);
    },
    removeGithubCallback(wid: string, id: string): Promise<void> {
      return t.githubCallbacks.remove([wid, id]);
    },
    async githubCallbacks(): Promise<GithubCallbackRecord[]> {
      return values(await t.githubCallbacks.scan([]));
    },
  };
}

export type IntegrationsRepo = ReturnType<typeof integrationsRepo>;
