import test from 'ava';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { stopAndClean, svc } from '../helpers/process.js';
import { withStore } from '../helpers/store.js';

/**
 * checkpoints carry the origin line `<host>/<wid>`, host being
 * baseUrl's. A deployment whose baseUrl is set in its config file (svc serve --config) and whose
 * operator mints a key with `svc keys create --local` (README quick start) must still sign its
 * checkpoints under its own origin. Today the first ledger record, written by the CLI process
 * (which has no --config and so no baseUrl), fixes the origin to `svc.local/<wid>` for good.
 */

let server: ServedInProcess;

test.before(async () => {
  server = await serveInProcess({ config: { baseUrl: 'http://svc.acme.example' } });
});

test.after.always(() => stopAndClean(server));

test("checkpoints name the deployment's host even when the CLI wrote the first ledger record", async (t) => {
  const wid = server.boot.workspaceId!;
  const minted = await svc([
    'keys',
    'create',
    '--scope',
    'admin',
    '--local',
    '--name',
    'ops',
    '--data-dir',
    server.dataDir,
    '--json',
  ]);
  t.is(minted.code, 0, minted.stderr);
  // The server signs a checkpoint every second when records were added, and a last one as it stops.
  await server.stop();
  const notes = await withStore(server.dataDir, async (app) =>
    (await app.store.tables.checkpoints.scan([wid])).map((e) => e.value.note),
  );
  t.true(notes.length > 0, 'a checkpoint was signed');
  for (const note of notes) t.is(note.split('\n')[0], `svc.acme.example/${wid}`);
});
