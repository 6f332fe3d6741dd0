import Joi from 'joi';
import joiToJson, { type Mode } from 'joi-to-json';
import { entryOf, errorTypes, type ErrorType } from '../errors/catalogue.js';
import type { SvcRouteOptions } from '../http/route-options.js';
import { routeErrors } from './route-errors.js';

/**
 * The OpenAPI 3.1 document of this server, generated from its own route table (GET /openapi.json):
 * every route the server answers, its authentication, its path, query and body schemas converted
 * from the joi schemas that validate them (joi-to-json), and the errors it can answer with, from
 * the one catalogue. Nothing is written by hand per route, so the document cannot drift from
 * what the server does; a route that validates by code rather than joi gets no schema.
 */
export interface RouteRow {
  method: string;
  path: string;
  /** The route's auth strategies, or false for none. */
  auth: false | string[];
  validate: { payload?: unknown; query?: unknown; params?: unknown };
  description?: string;
  tags?: string[];
  svc: SvcRouteOptions;
}

type Json = Record<string, unknown>;

// joi-to-json is CommonJS (`module.exports = parse`); its types describe an ES default export.
const parseJoi = ((joiToJson as unknown as { default?: unknown }).default ?? joiToJson) as unknown as (
  schema: unknown,
  mode: Mode,
) => unknown;

/** One security scheme per kind of credential (the route's hapi strategies name them). */
const SCHEMES: Record<string, { name: string; scheme: Json }> = {
  session: {
    name: 'session',
    scheme: {
      type: 'apiKey',
      in: 'cookie',
      name: 'sid',
      description:
        'The console session (POST /api/session); `__Host-sid` in production. Writes also need the header `x-svc-csrf: 1`.',
    },
  },
  'agent-key': {
    name: 'agentKey',
    scheme: {
      type: 'http',
      scheme: 'bearer',
      description: "An agent's key (`ask_…`), or an OAuth access token for /mcp.",
    },
  },
  'workspace-key': {
    name: 'workspaceKey',
    scheme: { type: 'http', scheme: 'bearer', description: 'A workspace key (gateway inference or admin scope).' },
  },
  'service-token': {
    name: 'serviceToken',
    scheme: {
      type: 'http',
      scheme: 'bearer',
      description: 'A service token (`svc tokens create`) with the scope the route names.',
    },
  },
};
const SIGNATURE_HEADERS: Record<string, string> = {
  'signature:github': 'x-hub-signature-256',
  'signature:stripe': 'stripe-signature',
  'signature:stripe:billing': 'stripe-signature',
  'signature:slack': 'x-slack-signature',
  'signature:issuer': 'svc-signature',
  'signature:chat-relay': 'svc-signature',
};

function schemeOf(strategy: string): { name: string; scheme: Json } | null {
  if (strategy === 'session-host') return SCHEMES.session!;
  if (SCHEMES[strategy]) return SCHEMES[strategy];
  const header = SIGNATURE_HEADERS[strategy];
  if (!header) return null;
  return {
    name: strategy.replace(/[^A-Za-z0-9]+/g, '_'),
    scheme: {
      type: 'apiKey',
      in: 'header',
      name: header,
      description: `A request signed by the sender (${strategy}).`,
    },
  };
}

function toSchema(schema: unknown): Json | null {
  if (!Joi.isSchema(schema)) return null;
  try {
    return openConditionals(parseJoi(schema, 'open-api-3.1') as Json);
  } catch {
    return null;
  }
}

/**
 * joi's `.when()` converts to if/then/else subschemas that repeat `additionalProperties: false`,
 * which would refuse every other field of the object they apply to: the object's own schema
 * already says which fields it takes, so the subschemas are opened.
 */
function openConditionals(schema: Json): Json {
  const walk = (node: unknown, conditional: boolean): void => {
    if (Array.isArray(node)) {
      for (const item of node) walk(item, conditional);
      return;
    }
    if (!node || typeof node !== 'object') return;
    const obj = node as Json;
    if (conditional && obj.additionalProperties === false) delete obj.additionalProperties;
    for (const [key, value] of Object.entries(obj)) walk(value, key === 'then' || key === 'else' || key === 'if');
  };
  walk(schema, false);
  return schema;
}

/** Path or query parameters from an object schema: one parameter per key. */
function parametersOf(schema: unknown, where: 'path' | 'query'): Json[] {
  const json = toSchema(schema);
  const properties = (json?.properties ?? {}) as Record<string, Json>;
  const required = new Set((json?.required as string[] | undefined) ?? []);
  return Object.entries(properties).map(([name, s]) => ({
    name,
    in: where,
    required: where === 'path' || required.has(name),
    ...(typeof s.description === 'string' ? { description: s.description } : {}),
    schema: s,
  }));
}

const errorRef = (envelope: SvcRouteOptions['errorEnvelope']) =>
  envelope === 'oauth' ? 'OAuthError' : envelope === 'anthropic' ? 'AnthropicError' : 'Error';

function responsesOf(row: RouteRow): Json {
  const byStatus = new Map<number, ErrorType[]>();
  for (const type of routeErrors(row)) {
    const status = entryOf(type).status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), type]);
  }
  const responses: Json = { '200': { description: 'Success (201 when it creates, 204 when it answers no body).' } };
  for (const [status, types] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    responses[String(status)] = {
      description: types.map((t) => `\`${t}\`: ${entryOf(t).message}`).join(' '),
      content: { 'application/json': { schema: { $ref: `#/components/schemas/${errorRef(row.svc.errorEnvelope)}` } } },
      'x-svc-error-types': types,
    };
  }
  return responses;
}

export function buildOpenApi(rows: readonly RouteRow[], info: { version: string; serverUrl: string }): Json {
  const paths: Record<string, Json> = {};
  const schemes: Record<string, Json> = {};
  for (const row of [...rows].sort((a, b) => a.path.localeCompare(b.path) || a.method.localeCompare(b.method))) {
    if (row.method === '*' || row.method === 'head' || row.method === 'options') continue;
    // hapi's {name*} and {name?} are OpenAPI's {name}.
    const path = row.path.replace(/\{(\w+)[*?]?\d*\}/g, '{$1}');
    const security: Json[] = [];
    for (const strategy of row.auth === false ? [] : row.auth) {
      const s = schemeOf(strategy);
      if (!s) continue;
      schemes[s.name] = s.scheme;
      if (!security.some((r) => s.name in r))
        security.push({ [s.name]: row.svc.tokenScope ? [row.svc.tokenScope] : [] });
    }
    const params = [...parametersOf(row.validate.params, 'path'), ...parametersOf(row.validate.query, 'query')];
    for (const name of path.matchAll(/\{(\w+)\}/g))
      if (!params.some((p) => p.in === 'path' && p.name === name[1]))
        params.push({ name: name[1], in: 'path', required: true, schema: { type: 'string' } });
    const body = toSchema(row.validate.payload);
    const operation: Json = {
      operationId: `${row.method}${path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
      summary: row.description ?? `${row.method.toUpperCase()} ${path}`,
      tags: [tagOf(path)],
      security,
      ...(params.length > 0 ? { parameters: params } : {}),
      ...(body ? { requestBody: { required: true, content: { 'application/json': { schema: body } } } } : {}),
      responses: responsesOf(row),
      'x-svc-auth': row.auth === false ? 'none' : row.auth,
      ...(row.svc.tokenScope ? { 'x-svc-token-scope': row.svc.tokenScope } : {}),
      ...(row.svc.keyScope ? { 'x-svc-key-scope': row.svc.keyScope } : {}),
    };
    paths[path] = { ...(paths[path] ?? {}), [row.method]: operation };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'svc',
      version: info.version,
      description:
        'The HTTP API of this svc deployment, generated from its route table. Errors answer `{ "error": { type, message, fix, docs, requestId } }` (the Anthropic-shaped and OAuth routes in their own envelopes); every type is listed in `x-svc-errors` and on /docs/errors.',
    },
    servers: [{ url: info.serverUrl }],
    paths,
    components: {
      securitySchemes: schemes,
      schemas: {
        Error: {
          type: 'object',
          required: ['error'],
          properties: {
            error: {
              type: 'object',
              required: ['type', 'message', 'fix', 'docs', 'requestId'],
              properties: {
                type: { type: 'string', enum: [...errorTypes] },
                message: { type: 'string' },
                fix: { type: 'string' },
                docs: { type: 'string', format: 'uri' },
                requestId: { type: 'string' },
                errors: {
                  type: 'array',
                  items: {
                    type: 'object',
                    properties: { field: { type: ['string', 'null'] }, message: { type: 'string' } },
                  },
                },
              },
            },
          },
        },
        AnthropicError: {
          type: 'object',
          required: ['type', 'error'],
          properties: { type: { const: 'error' }, error: { $ref: '#/components/schemas/Error/properties/error' } },
        },
        OAuthError: {
          type: 'object',
          required: ['error'],
          properties: { error: { type: 'string' }, error_description: { type: 'string' } },
        },
      },
    },
    'x-svc-errors': Object.fromEntries(
      errorTypes.map((type) => {
        const e = entryOf(type);
        return [type, { status: e.status, message: e.message, fix: e.fix }];
      }),
    ),
  };
}

/** The operation's group: its first meaningful path segment. */
function tagOf(path: string): string {
  const parts = path.split('/').filter((p) => p && !p.startsWith('{') && p !== 'v1' && p !== 'api' && p !== 'w');
  return parts[0] === 'admin' ? `admin ${parts[1] ?? ''}`.trim() : (parts[0] ?? 'root');
}
