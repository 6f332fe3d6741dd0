import type { Finding } from './campaign.js';

/**
 * Findings already known and being fixed on other branches: the campaign reports them as
 * "known" (printed, never silent) and does not fail on them. Each entry goes once its fix is
 * merged; a run whose known entry no longer matches anything says so, so that a stale entry is seen.
 */
export interface Known {
  id: string;
  /** What goes wrong, and where the fix is being made. */
  what: string;
  matches(finding: Finding): boolean;
}

export const KNOWN: Known[] = [];
