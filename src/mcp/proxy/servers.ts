import { AppError } from '../../errors/app-error.js';
import { isoAt } from '../../lib/clock.js';
import { sealText } from '../../lib/seal.js';
import type { McpServerRecord } from '../records.js';
import type { ProxyContext } from './context.js';
import { serverView } from './naming.js';
import type { McpServerChange, McpServerView } from './types.js';
import { SEAL_PURPOSE } from './types.js';
import { urlProblem } from './url-problem.js';

/**
 * A workspace's upstream servers as stored (mcp/repo.ts), and their changes after they were
 * added: enabled or disabled, changed in place (`svc apply`), removed. Each change ends the
 * server's upstream sessions and forgets its listing first, and is one write with its ledger
 * record. The configuration's local servers are recorded the first time a workspace's servers
 * are listed.
 */
export interface ServerAdmin {
  /** The servers agents are offered: the remote ones and the enabled local ones of the configuration. */
  list(wid: string): Promise<McpServerRecord[]>;
  /**
   * Every server of a workspace, for the console: the remote ones, and the configuration's
   * local ones (each recorded the first time the workspace's servers are listed, enabled,
   * its tools waiting for approval; a remote server added earlier under the same name keeps
   * it, and the local one stays out of that workspace). A local server no longer in the
   * configuration is left out (its record and pins stay, for when it comes back).
   */
  listAll(wid: string): Promise<McpServerRecord[]>;
  /** One server of the workspace (a local one only while the configuration declares it), or not_found. */
  find(wid: string, name: string): Promise<McpServerRecord>;
  /** An upstream server as stored, or not_found. */
  server(wid: string, name: string): Promise<McpServerRecord>;
  /** Enables or disables a server (a disabled one is offered to no agent, its sessions ended). */
  setEnabled(wid: string, name: string, enabled: boolean, actor: string): Promise<McpServerView>;
  /** Whether a remote server's secret is `value` (null: it has none), without answering the secret. */
  secretIs(server: McpServerRecord, value: string | null): boolean;
  /**
   * A remote server's address, secret, tool allowlist or prefixing changed in place (`svc apply`):
   * its sessions end and its listing is forgotten, so the next call connects anew; its tools'
   * approvals stay, and a tool whose definition differs at the new address is held as any changed
   * tool is (pins.ts). A ledger record (never the secret).
   */
  update(wid: string, name: string, change: McpServerChange, actor: string): Promise<McpServerView>;
  /** Removes a remote server, its pins and credentials with it (a local one is removed from the configuration). */
  remove(wid: string, name: string, actor: string): Promise<void>;
}

const notFound = (name: string) =>
  new AppError('not_found', { message: `No upstream MCP server ${name} in this workspace.` });

export function createServerAdmin(ctx: ProxyContext): ServerAdmin {
  const { deps, servers, pins, auth, listed, pool } = ctx;
  const { store, clock, ledger, masterKey } = deps;

  /** The configuration's local servers not yet recorded for the workspace, recorded (enabled, tools held). */
  const recordLocal = async (wid: string, missing: readonly { id: string }[]) =>
    store.write(async () => {
      for (const l of missing) {
        if (await servers.has(wid, l.id)) continue;
        const record: McpServerRecord = {
          name: l.id,
          workspaceId: wid,
          url: '',
          secretSealed: null,
          allowTools: null,
          unprefixed: false,
          createdAt: isoAt(clock.now()),
          createdBy: 'system',
          kind: 'local',
        };
        await servers.put(record);
        await ledger.record({
          workspaceId: wid,
          actor: 'system',
          kind: 'mcp.server_added',
          subject: l.id,
          data: { local: true, allowTools: null, unprefixed: false, secret: false, pinned: null },
        });
      }
    });

  /** Ends a server's upstream sessions and forgets its listing: the next call connects anew. */
  const disconnect = async (server: McpServerRecord) => {
    await pool.retireServer(server);
    listed.forget(server);
  };

  const admin: ServerAdmin = {
    async list(wid) {
      return (await admin.listAll(wid)).filter((s) => s.enabled !== false);
    },

    async listAll(wid) {
      const stored = await servers.list(wid);
      const missing = (deps.local?.of(wid) ?? []).filter((l) => !stored.some((s) => s.name === l.id));
      if (missing.length > 0) {
        await recordLocal(wid, missing);
        return admin.listAll(wid);
      }
      return stored.filter((s) => s.kind !== 'local' || deps.local?.declares(wid, s.name));
    },

    async find(wid, name) {
      const server = (await admin.listAll(wid)).find((s) => s.name === name);
      if (!server) throw notFound(name);
      return server;
    },

    async server(wid, name) {
      const found = await servers.get(wid, name);
      if (!found) throw notFound(name);
      return found;
    },

    async setEnabled(wid, name, enabled, actor) {
      const existing = await admin.find(wid, name);
      if (!enabled) await disconnect(existing);
      const next: McpServerRecord = { ...existing, enabled };
      await store.write(async () => {
        // Removed (or added again) meanwhile: not this one to change.
        if ((await servers.get(wid, name))?.createdAt !== existing.createdAt) throw notFound(name);
        await servers.put(next);
        await ledger.record({
          workspaceId: wid,
          actor,
          kind: enabled ? 'mcp.server_enabled' : 'mcp.server_disabled',
          subject: name,
          data: {},
        });
      });
      return serverView(next);
    },

    secretIs(server, value) {
      return ctx.secretOf(server) === value;
    },

    async update(wid, name, change, actor) {
      const existing = await admin.find(wid, name);
      if (existing.kind === 'local')
        throw new AppError('invalid_request', {
          message: `The MCP server ${name} is a local server of the configuration (mcp.localServers): it is changed there.`,
          details: { errors: [{ field: 'name', message: 'is a local server of the configuration' }] },
        });
      const url = change.url ?? existing.url;
      const wrongUrl = urlProblem(url, deps.allowPrivateUpstreams);
      if (wrongUrl)
        throw new AppError('invalid_request', { details: { errors: [{ field: 'url', message: wrongUrl }] } });
      const next: McpServerRecord = {
        ...existing,
        url,
        ...(change.secret !== undefined
          ? { secretSealed: change.secret ? sealText(masterKey, SEAL_PURPOSE, `${wid}/${name}`, change.secret) : null }
          : {}),
        ...(change.allowTools !== undefined ? { allowTools: change.allowTools } : {}),
        ...(change.unprefixed !== undefined ? { unprefixed: change.unprefixed } : {}),
      };
      await disconnect(existing);
      await store.write(async () => {
        if ((await servers.get(wid, name))?.createdAt !== existing.createdAt) throw notFound(name);
        await servers.put(next);
        await ledger.record({
          workspaceId: wid,
          actor,
          kind: 'mcp.server_updated',
          subject: name,
          data: {
            changed: Object.keys(change).sort(),
            url: next.url,
            allowTools: next.allowTools,
            unprefixed: next.unprefixed,
            secret: next.secretSealed !== null,
          },
        });
      });
      return serverView(next);
    },

    async remove(wid, name, actor) {
      const existing = await servers.get(wid, name);
      if (existing?.kind === 'local' && deps.local?.declares(wid, name))
        throw new AppError('invalid_request', {
          message: `The MCP server ${name} is a local server of the configuration (mcp.localServers): it is removed there, not here. Disable it instead.`,
          details: { errors: [{ field: 'name', message: 'is a local server of the configuration' }] },
        });
      if (existing) await disconnect(existing);
      await store.write(async () => {
        if (!(await servers.has(wid, name))) throw notFound(name);
        await servers.remove(wid, name);
        await pins.removeInWrite(wid, name);
        await auth.removeAllInWrite(wid, name);
        await ledger.record({ workspaceId: wid, actor, kind: 'mcp.server_removed', subject: name, data: {} });
      });
    },
  };
  return admin;
}
