import type { LedgerParts } from './context.js';

/**
 * The integrator's lease: one row of the store (`ledgerLeases`, 'integrator') naming the process
 * that integrates every workspace's waiting records, and until when. Its holder renews it each
 * round; a process finds it free when there is none, when it is its own, or when it expired (its
 * holder died or stalled), and then takes it in a write, so two processes that both find it free
 * at once conflict and one of them sees the other's. Works the same across `--workers N` (one
 * LMDB file) and PostgreSQL instances. A holder that stalls past its expiry and integrates late is
 * still harmless: integration is one write per batch (integrate.ts).
 */
export const INTEGRATOR_LEASE = 'integrator';

/** How long a lease lasts without renewal, for an integrator that runs every `everyMs`. */
export const leaseTtlMs = (everyMs: number): number => Math.max(3 * everyMs, 2000);

/** Takes or renews the lease for `holder` when it is free or its own; whether `holder` holds it now. */
export async function holdLease(parts: LedgerParts, holder: string, ttlMs: number): Promise<boolean> {
  const { repo, store, clock } = parts;
  const free = (l: Awaited<ReturnType<typeof repo.lease>>, now: number) =>
    !l || l.holder === holder || l.expiresAt <= now;
  // A read first: a process that is not the holder writes nothing while the lease is held.
  if (!free(await repo.lease(INTEGRATOR_LEASE), clock.now())) return false;
  return store.write(async () => {
    const now = clock.now();
    const lease = await repo.lease(INTEGRATOR_LEASE);
    if (!free(lease, now)) return false;
    const since = lease && lease.holder === holder ? lease.since : now;
    await repo.putLease(INTEGRATOR_LEASE, { holder, expiresAt: now + ttlMs, since });
    return true;
  });
}

/** The lease as stored (undefined before any integrator took it). */
export const currentLease = (parts: LedgerParts) => parts.repo.lease(INTEGRATOR_LEASE);
