import test from 'ava';
import { inProcessServer, type InProcess } from '../helpers/in-process.js';

/**
 * The identity provider's `jti` is claimed in the same write as the token's effects and ledger
 * records: a failure while acting leaves the token unclaimed and nothing half-applied, so the
 * transmitter's retry is acted on; a success leaves claim, effects and records together.
 */
const SESSION_REVOKED = 'https://schemas.openid.net/secevent/caep/event-type/session-revoked';
const ACCOUNT_DISABLED = 'https://schemas.openid.net/secevent/risc/event-type/account-disabled';
let running: InProcess;

test.before(async () => {
  running = await inProcessServer();
});
test.after.always(() => running?.close());

test('a failed handle claims nothing and changes nothing; its retry is acted on, claim and effects together', async (t) => {
  const { services } = running.app;
  const { workspaceId: wid } = await services.people.createWorkspace({
    name: 'Claims',
    ownerEmail: 'owner@claims.example',
    ownerPassword: 'owner-password-12',
  });
  const hal = await services.people.addMember({
    workspaceId: wid,
    email: 'hal@claims.example',
    password: 'hal-password-1234',
    role: 'member',
  });
  const ida = await services.people.addMember({
    workspaceId: wid,
    email: 'ida@claims.example',
    password: 'ida-password-1234',
    role: 'member',
  });
  const iat = Math.floor(Date.now() / 1000);
  const set = {
    workspaceId: wid,
    claimUntil: Date.now() + 600_000,
    // Two events: the first would apply, the second fails; neither may land without the other.
    claims: {
      jti: 'jti-retry-1',
      iat,
      iss: 'https://idp.example.com',
      events: {
        [ACCOUNT_DISABLED]: { subject: { format: 'email', email: 'hal@claims.example' } },
        [SESSION_REVOKED]: { subject: { format: 'email', email: 'ida@claims.example' } },
      },
    },
  };
  // Records are integrated (given their index) after their write: integrate what waits, then count.
  const ledgerSize = async () => {
    await services.ledger.integrateNow(wid);
    return (await services.ledger.head(wid))?.size ?? 0;
  };
  const members = async () => (await services.people.listMembers(wid, { limit: 50 })).data.map((m) => m.email).sort();
  const before = { size: await ledgerSize(), members: await members() };

  const people = services.people as { revokeAccessInWrite: (...args: never[]) => unknown };
  const real = people.revokeAccessInWrite;
  people.revokeAccessInWrite = () => {
    throw new Error('disk full');
  };
  try {
    await t.throwsAsync(services.ssf.handle(set));
  } finally {
    people.revokeAccessInWrite = real;
  }
  t.false(await services.once.used(`ssf:${wid}`, 'jti-retry-1'), 'not claimed');
  t.is(await ledgerSize(), before.size, 'no record');
  t.deepEqual(await members(), before.members, "hal's removal did not land alone");

  await services.ssf.handle(set);
  t.true(await services.once.used(`ssf:${wid}`, 'jti-retry-1'), 'claimed with the effects');
  const after = await members();
  t.false(after.includes('hal@claims.example'));
  t.true(after.includes('ida@claims.example'));
  const kinds = (await services.ledger.list(wid, { limit: 50 })).data.slice(before.size).map((r) => r.kind);
  t.deepEqual(kinds, ['member.removed', 'ssf.account_disabled', 'member.access_revoked', 'ssf.session_revoked']);
  t.truthy(hal.id && ida.id);

  // Acted on once: a second handle of the same token is refused and changes nothing.
  const size = await ledgerSize();
  await t.throwsAsync(services.ssf.handle(set), { message: /already received/ });
  t.is(await ledgerSize(), size);
});
