/**
 * An object whose members are built on first use, once each, by factories that may use each
 * other (the composition root's services): a `--local` command that stops one agent builds the
 * kill switch and what it needs, not the model gateway.
 *
 * Rules:
 * - A factory runs at most once; its value is kept.
 * - `after` hooks wire what would otherwise be a cycle (the ledger's subscribers need the ledger):
 *   a member's hook runs once the outermost build in progress has finished, before that first
 *   access returns, so nothing can use the member before its hook ran.
 * - A member whose factory reaches itself, directly or not, is a wiring mistake: it throws.
 *
 * @example
 * const s = lazily<{ a: number; b: number }>({ a: () => 1, b: (s) => s.a + 1 });
 * s.b; // 2, and `a` was built for it
 */
/** The object of members built on first use, and what it tells of them. */
export interface Lazily<T extends object> {
  /** The members: each built on its first access. */
  self: T;
  /** Whether a member was built already. */
  built(name: keyof T): boolean;
  /** Builds every member now (the server does, so a wiring mistake shows at start). */
  buildAll(): void;
}

export function lazily<T extends object>(
  factories: { [K in keyof T]: (self: T) => T[K] },
  after: { [K in keyof T]?: (value: T[K], self: T) => void } = {},
): Lazily<T> {
  const values = new Map<keyof T, unknown>();
  const building = new Set<keyof T>();
  const pending: Array<() => void> = [];
  const self = {} as T;
  const get = <K extends keyof T>(name: K): T[K] => {
    if (values.has(name)) return values.get(name) as T[K];
    if (building.has(name)) throw new Error(`service ${String(name)} needs itself to be built`);
    const outermost = building.size === 0;
    building.add(name);
    try {
      const value = factories[name](self);
      values.set(name, value);
      const hook = after[name];
      if (hook) pending.push(() => hook(value, self));
    } finally {
      building.delete(name);
    }
    if (outermost) while (pending.length > 0) pending.shift()!();
    return values.get(name) as T[K];
  };
  for (const name of Object.keys(factories) as Array<keyof T>)
    Object.defineProperty(self, name, { enumerable: true, get: () => get(name) });
  return {
    self,
    built: (name) => values.has(name),
    buildAll: () => {
      for (const name of Object.keys(factories) as Array<keyof T>) get(name);
    },
  };
}
