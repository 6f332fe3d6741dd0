import { AppError } from '../errors/app-error.js';

/**
 * Which agents a freeze names (docs/gate.md), and what the command line's selection flags mean. The
 * server's route and `svc freeze` (through the server or `--local`) share this one meaning.
 *
 * Rules:
 * - Every criterion given must hold (tags: every tag listed); a removed agent is never selected.
 * - `all` (`svc freeze --all`) is every live agent of the workspace now, and it also turns on
 *   "stop every agent", so an agent registered afterwards is stopped too. Lifting it is a
 *   person's act (the console) or the operator's (`svc stop-all off --local`).
 * - A selection of more than one agent needs `confirmCount` equal to what it matches now:
 *   missing, `409 confirm_count_required` with `count`; different, `409 selection_changed`.
 * - `--selector key=value` pairs: `tag=` (repeatable, also `tags=`), `agent=` (repeatable, also
 *   `agentIds=`), `blueprint=`, `actsFor=`; anything else is `invalid_selector`.
 *
 * @example
 * selectorOf({ selector: ['tag=payments', 'tag=eu'] }) // { tags: ['payments', 'eu'] }
 * selectorOf({ all: true }) // { all: true }
 */
export interface Selector {
  agentIds?: string[];
  tags?: string[];
  blueprint?: string;
  actsFor?: string;
  all?: boolean;
}

/** What a selector is matched against: the fields of an agent record it reads. */
export interface Selectable {
  id: string;
  tags: readonly string[];
  blueprint?: string | null | undefined;
  actsFor?: string | null | undefined;
  removedAt?: string | null | undefined;
}

export function matches(agent: Selectable, s: Selector): boolean {
  return (
    !agent.removedAt &&
    (!s.agentIds || s.agentIds.includes(agent.id)) &&
    (!s.tags || s.tags.every((tag) => agent.tags.includes(tag))) &&
    (!s.blueprint || agent.blueprint === s.blueprint) &&
    (!s.actsFor || agent.actsFor === s.actsFor)
  );
}

/** Does this selection also turn on "stop every agent"? Only `all` does. */
export const stopsEveryAgent = (s: Selector): boolean => s.all === true;

const LIST_KEYS: Record<string, 'tags' | 'agentIds'> = {
  tag: 'tags',
  tags: 'tags',
  agent: 'agentIds',
  agentIds: 'agentIds',
};
const ONE_KEYS = new Set(['blueprint', 'actsFor']);

/** `key=value` pairs (the `--selector` flags) as a selector; throws `invalid_selector` naming the bad pair. */
export function parseSelector(pairs: readonly string[]): Selector {
  const selector: Selector = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    const key = at > 0 ? pair.slice(0, at) : '';
    const value = pair.slice(at + 1).trim();
    const list = LIST_KEYS[key];
    if (value !== '' && list) selector[list] = [...(selector[list] ?? []), value];
    else if (value !== '' && ONE_KEYS.has(key)) selector[key as 'blueprint' | 'actsFor'] = value;
    else
      throw new AppError('invalid_selector', {
        message: `--selector ${pair}: use tag=, agent=, blueprint= or actsFor= with a value.`,
      });
  }
  if (Object.keys(selector).length === 0) throw new AppError('invalid_selector');
  return selector;
}

/** The selection the command line's flags name: `--all`, or `--selector` pairs. */
export function selectorOf(flags: { all?: boolean | undefined; selector?: readonly string[] | undefined }): Selector {
  return flags.all ? { all: true } : parseSelector(flags.selector ?? []);
}

/**
 * Checks `confirmCount` against what the selection matches now (see the rules above). Any value
 * that is not a whole number of at least 1 counts as missing.
 */
export function checkConfirmCount(confirmCount: unknown, count: number): void {
  if (typeof confirmCount !== 'number' || !Number.isInteger(confirmCount) || confirmCount < 1)
    throw new AppError('confirm_count_required', {
      message: `A freeze of a selection needs confirmCount: the selector matches ${count} agent${count === 1 ? '' : 's'} now.`,
      details: { count },
    });
  if (confirmCount !== count)
    throw new AppError('selection_changed', {
      message: `confirmCount is ${confirmCount} but the selector matches ${count} agents now.`,
      details: { oldCount: confirmCount, newCount: count },
    });
}
