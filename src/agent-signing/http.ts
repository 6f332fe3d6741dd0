import type { Plugin } from '@hapi/hapi';
import { AGENT_KEY, caller } from '../http/auth/callers.js';
import type { Guards } from '../http/guards.js';
import { signHttpSchema, type SignHttpInput } from './schemas.js';
import { DIRECTORY_PATH } from './profile.js';
import type { AgentSigning } from './service.js';

/**
 * Signed agent requests (docs/signed-requests.md):
 * - POST /v1/signatures/http (agent key) `{ method, url, headers }`: the three header values
 *   `{ "signature-input", signature, "signature-agent" }`; 403 agent_stopped or
 *   signing_not_allowed; the gate's per-agent rate limit.
 * - GET /.well-known/http-message-signatures-directory (public, rate limited per address): the
 *   keys of every agent that may sign, as `application/http-message-signatures-directory+json`,
 *   the answer signed by each key it lists.
 */
export const agentSigningRoutes: Plugin<{ signing: AgentSigning; guards: Guards }> = {
  name: 'svc-agent-signing',
  register(server, { signing, guards }) {
    server.route([
      {
        method: 'POST',
        path: '/v1/signatures/http',
        options: {
          description: "Sign an agent's outbound HTTP request (RFC 9421, Web Bot Auth)",
          auth: AGENT_KEY,
          plugins: { svc: { gateRateLimit: true, errors: ['agent_stopped', 'signing_not_allowed'] } },
          validate: { payload: signHttpSchema },
        },
        handler(request) {
          const c = caller(request, 'agent');
          return signing.sign({ workspaceId: c.workspaceId, agentId: c.agent.id }, request.payload as SignHttpInput);
        },
      },
      {
        method: 'GET',
        path: DIRECTORY_PATH,
        options: {
          description: "The agents' public signing keys (Web Bot Auth key directory)",
          auth: false,
          ext: { onPreAuth: guards.publicRoute('public') },
        },
        async handler(request, h) {
          const host = String(request.headers.host ?? request.info.host);
          const directory = await signing.directory({
            url: new URL(DIRECTORY_PATH, `${request.url.protocol}//${host}`).href,
            headers: { host },
          });
          return h
            .response(directory.body)
            .type(directory.mediaType)
            .header('signature-input', directory.signatureInput)
            .header('signature', directory.signature)
            .header('cache-control', 'public, max-age=60');
        },
      },
    ]);
  },
};
