/** Retention: the one background sweeper and the windows it enforces. */
export { createSweeper, type Sweeper, type SweepReport } from './sweeper.js';
export { retentionJobs } from './policy.js';
