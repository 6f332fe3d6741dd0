export {
  checkConfirmCount,
  matches,
  parseSelector,
  selectorOf,
  stopsEveryAgent,
  type Selectable,
  type Selector,
} from './selector.js';
export {
  createKillSwitch,
  toFreezeAnswer,
  type BulkFreezeOutcome,
  type FreezeAnswer,
  type PendingFreeze,
  type Freezer,
  type KillSwitch,
  type StopAllState,
  type Who,
} from './service.js';
export type { Standing } from '../agents/standing.js';
