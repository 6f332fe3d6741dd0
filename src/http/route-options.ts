// The module augmentation below needs hapi's types in scope.
import type {} from '@hapi/hapi';
import type { ErrorType } from '../errors/catalogue.js';

/** What a route declares under `options.plugins.svc`, read by the auth strategies and the validation fail action. */
export interface SvcRouteOptions {
  /** Validation type for this route's request errors (default invalid_request). */
  validationType?: ErrorType;
  /** Validation type by the first field at fault, where one route has several (settle). */
  validationTypeByField?: Record<string, ErrorType>;
  /** Workspace-key routes: the key scope needed (admin), or whether agent keys are accepted. */
  keyScope?: 'admin' | 'any-workspace' | 'any';
  /** Service-token routes: the scope needed. */
  tokenScope?: string;
  /** Most members (keys and items, at every depth) a body may have; default MAX_BODY_MEMBERS. */
  maxBodyMembers?: number;
  /**
   * Most items of any one array in a body, checked with the members before validation (a route
   * whose schema bounds its arrays: the validator would otherwise walk every item of an over-long
   * one before refusing it); none by default.
   */
  maxArrayItems?: number;
  /**
   * The body is forwarded as it came (a model request to its vendor, a JSON-RPC message to an
   * upstream MCP server): its `constructor` and `prototype` keys are kept, not removed as on
   * every other route, since a tool's schema or arguments may name a field so.
   */
  forwarded?: boolean;
  /** Agent-key routes counted against the agent's per-minute gate limit (ratelimit-* headers on every answer). */
  gateRateLimit?: boolean;
  /** /mcp: a 401 carries `WWW-Authenticate: Bearer resource_metadata="…"` (RFC 9728). */
  mcpChallenge?: boolean;
  /**
   * Errors in another envelope: 'anthropic' wraps the svc error object as `{ type: "error", error }`;
   * 'oauth' answers RFC 6749's `{ error, error_description }` with Cache-Control: no-store.
   */
  errorEnvelope?: 'anthropic' | 'oauth';
  /**
   * Errors this route's own logic can answer with, beyond those of its credential and validation
   * (which are derived): the OpenAPI document (GET /openapi.json) lists them.
   */
  errors?: ErrorType[];
}

declare module '@hapi/hapi' {
  interface PluginSpecificConfiguration {
    svc?: SvcRouteOptions;
  }
}

export function svcOptions(settings: { plugins?: { svc?: SvcRouteOptions } }): SvcRouteOptions {
  return settings.plugins?.svc ?? {};
}
