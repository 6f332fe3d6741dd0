/** Time is injected so that tests move it instead of sleeping. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

export function isoAt(ms: number): string {
  return new Date(ms).toISOString();
}
