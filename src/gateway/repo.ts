import type { KeyPart, Store } from '../store/index.js';
import type {
  BudgetRecord,
  BudgetReservationRecord,
  CachedAnswerRecord,
  CallRecord,
  RateWindowRecord,
  WorkspaceGatewayRecord,
} from './records.js';
import type { StopAllRecord } from '../agents/records.js';
import type { UserRecord } from '../people/records.js';

/**
 * The gateway's tables: budgets and their spend, call records, tasks, the monthly request count,
 * rate windows, the response cache, the workspace's gateway settings and seat overage; and the
 * few reads of other domains' tables the gateway's checks make (members, users, "stop every
 * agent", whether a key or an agent exists). Puts and removes are legal only inside `store.write`.
 */
export interface GatewayRepo {
  // The workspace's own gateway settings (`workspaceGateway`).
  settingsOf(wid: string): Promise<WorkspaceGatewayRecord | undefined>;
  putSettings(wid: string, own: WorkspaceGatewayRecord): Promise<void>;

  /** "Stop every agent" in the workspace (the kill switch's table, read). */
  stopAll(wid: string): Promise<StopAllRecord | undefined>;

  /** Whether a key is the workspace's (a budget may bind only its own). */
  hasKey(wid: string, keyId: string): Promise<boolean>;
  /** Whether an agent is the workspace's (a budget may bind only its own). */
  hasAgent(wid: string, agentId: string): Promise<boolean>;

  // Seats (the plan's people limit): members read, `seatOverage` written.
  memberCount(wid: string): Promise<number>;
  seatOverage(wid: string): Promise<string | undefined>;
  hasSeatOverage(wid: string): Promise<boolean>;
  putSeatOverage(wid: string, since: string): Promise<void>;
  removeSeatOverage(wid: string): Promise<void>;

  /** The workspace's owner (the first member with that role), as an approval refusal names them. */
  ownerOf(wid: string): Promise<Pick<UserRecord, 'id' | 'email' | 'name'> | null>;

  // Budgets (`budgets`) and their spend (`budgetSpend` [wid, budId, period start]).
  budgets(wid: string): Promise<BudgetRecord[]>;
  putBudget(b: BudgetRecord): Promise<void>;
  spent(wid: string, budgetId: string, periodStart: string): Promise<number>;
  putSpent(wid: string, budgetId: string, periodStart: string, micros: number): Promise<void>;

  // Budget reservations (`budgetReservations` [wid, budId, period start, resId]).
  reservations(
    wid: string,
    budgetId: string,
    periodStart: string,
  ): Promise<Array<{ id: string; value: BudgetReservationRecord }>>;
  putReservation(
    wid: string,
    budgetId: string,
    periodStart: string,
    id: string,
    r: BudgetReservationRecord,
  ): Promise<void>;
  removeReservation(wid: string, budgetId: string, periodStart: string, id: string): Promise<void>;

  // The month's requests (`monthlyRequests` [wid, month]).
  monthlyRequests(wid: string, month: string): Promise<number>;
  putMonthlyRequests(wid: string, month: string, n: number): Promise<void>;

  // Tasks and call records (`tasks`, `calls`).
  hasTask(wid: string, taskId: string): Promise<boolean>;
  putTask(wid: string, taskId: string, at: string): Promise<void>;
  putCall(r: CallRecord): Promise<void>;
  calls(wid: string, options: { after?: string; limit: number }): Promise<CallRecord[]>;

  // Rate windows (`rateWindows` [wid, kind, id, minute start ms]).
  rateWindow(key: KeyPart[]): Promise<RateWindowRecord | undefined>;
  putRateWindow(key: KeyPart[], w: RateWindowRecord): Promise<void>;
  rateWindowKeys(scope: KeyPart[]): Promise<KeyPart[][]>;
  removeRateWindow(key: KeyPart[]): Promise<void>;

  // The response cache (`responseCache` [wid, hash]) and its expiry index
  // (`responseCacheExpiry` [expires at ms, wid, hash]).
  cached(wid: string, hash: string): Promise<CachedAnswerRecord | undefined>;
  putCached(wid: string, hash: string, r: CachedAnswerRecord): Promise<void>;
  removeCached(wid: string, hash: string): Promise<void>;
  putExpiry(at: number, wid: string, hash: string): Promise<void>;
  removeExpiry(at: number, wid: string, hash: string): Promise<void>;
  /** The `limit` entries that expire first: [expires at ms, wid, hash]. */
  firstExpiries(limit: number): Promise<Array<[number, string, string]>>;
}

/** The gateway's repo over a store. */
export function gatewayRepo(store: Store): GatewayRepo {
  const t = store.tables;
  return {
    // The workspace's own gateway settings.
    settingsOf: (wid: string): Promise<WorkspaceGatewayRecord | undefined> => t.workspaceGateway.get(wid),
    putSettings: (wid: string, own: WorkspaceGatewayRecord): Promise<void> => t.workspaceGateway.put(wid, own),

    stopAll: (wid: string): Promise<StopAllRecord | undefined> => t.stopAll.get(wid),

    // Whether a key or an agent is the workspace's (a budget may bind only its own).
    hasKey: (wid: string, keyId: string): Promise<boolean> => t.keys.has([wid, keyId]),
    hasAgent: (wid: string, agentId: string): Promise<boolean> => t.agents.has([wid, agentId]),

    // Seats (the plan's people limit).
    async memberCount(wid: string): Promise<number> {
      return (await t.members.scan([wid])).length;
    },
    seatOverage: (wid: string): Promise<string | undefined> => t.seatOverage.get(wid),
    hasSeatOverage: (wid: string): Promise<boolean> => t.seatOverage.has(wid),
    putSeatOverage: (wid: string, since: string): Promise<void> => t.seatOverage.put(wid, since),
    removeSeatOverage: (wid: string): Promise<void> => t.seatOverage.remove(wid),

    /** The workspace's owner (the first member with that role), as an approval refusal names them. */
    async ownerOf(wid: string): Promise<Pick<UserRecord, 'id' | 'email' | 'name'> | null> {
      for (const { key, value } of await t.members.scan([wid])) {
        if (value.role !== 'owner') continue;
        const user = await t.users.get(String(key[1]));
        if (user) return { id: user.id, email: user.email, name: user.name };
      }
      return null;
    },

    // Budgets and their spend.
    async budgets(wid: string): Promise<BudgetRecord[]> {
      return (await t.budgets.scan([wid])).map((e) => e.value);
    },
    putBudget: (b: BudgetRecord): Promise<void> => t.budgets.put([b.workspaceId, b.id], b),
    async spent(wid: string, budgetId: string, periodStart: string): Promise<number> {
      return (await t.budgetSpend.get([wid, budgetId, periodStart])) ?? 0;
    },
    putSpent: (wid: string, budgetId: string, periodStart: string, micros: number): Promise<void> =>
      t.budgetSpend.put([wid, budgetId, periodStart], micros),

    // Budget reservations: [wid, budId, period start, resId].
    async reservations(
      wid: string,
      budgetId: string,
      periodStart: string,
    ): Promise<Array<{ id: string; value: BudgetReservationRecord }>> {
      return (await t.budgetReservations.scan([wid, budgetId, periodStart])).map((e) => ({
        id: String(e.key[3]),
        value: e.value,
      }));
    },
    putReservation: (
      wid: string,
      budgetId: string,
      periodStart: string,
      id: string,
      r: BudgetReservationRecord,
    ): Promise<void> => t.budgetReservations.put([wid, budgetId, periodStart, id], r),
    removeReservation: (wid: string, budgetId: string, periodStart: string, id: string): Promise<void> =>
      t.budgetReservations.remove([wid, budgetId, periodStart, id]),

    // The month's requests.
    async monthlyRequests(wid: string, month: string): Promise<number> {
      return (await t.monthlyRequests.get([wid, month])) ?? 0;
    },
    putMonthlyRequests: (wid: string, month: string, n: number): Promise<void> =>
      t.monthlyRequests.put([wid, month], n),

    // Tasks and call records.
    hasTask: (wid: string, taskId: string): Promise<boolean> => t.tasks.has([wid, taskId]),
    putTask: (wid: string, taskId: string, at: string): Promise<void> => t.tasks.put([wid, taskId], at),
    putCall: (r: CallRecord): Promise<void> => t.calls.put([r.workspaceId, r.id], r),
    async calls(wid: string, options: { after?: string; limit: number }): Promise<CallRecord[]> {
      return (await t.calls.scan([wid], options)).map((e) => e.value);
    },

    // Rate windows: [wid, kind, id, minute start ms].
    rateWindow: (key: KeyPart[]): Promise<RateWindowRecord | undefined> => t.rateWindows.get(key),
    putRateWindow: (key: KeyPart[], w: RateWindowRecord): Promise<void> => t.rateWindows.put(key, w),
    async rateWindowKeys(scope: KeyPart[]): Promise<KeyPart[][]> {
      return (await t.rateWindows.scan(scope)).map((e) => e.key);
    },
    removeRateWindow: (key: KeyPart[]): Promise<void> => t.rateWindows.remove(key),

    // The response cache: [wid, hash], and its expiry index [expires at ms, wid, hash].
    cached: (wid: string, hash: string): Promise<CachedAnswerRecord | undefined> => t.responseCache.get([wid, hash]),
    putCached: (wid: string, hash: string, r: CachedAnswerRecord): Promise<void> => t.responseCache.put([wid, hash], r),
    removeCached: (wid: string, hash: string): Promise<void> => t.responseCache.remove([wid, hash]),
    putExpiry: (at: number, wid: string, hash: string): Promise<void> => t.responseCacheExpiry.put([at, wid, hash], 1),
    removeExpiry: (at: number, wid: string, hash: string): Promise<void> =>
      t.responseCacheExpiry.remove([at, wid, hash]),
    async firstExpiries(limit: number): Promise<Array<[number, string, string]>> {
      return (await t.responseCacheExpiry.scan([], { limit })).map((e) => e.key as [number, string, string]);
    },
  };
}
