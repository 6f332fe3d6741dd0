import type { Request, RequestRoute, Server } from '@hapi/hapi';
import { actorOf, caller, type PersonCredential, type SessionUser } from './callers.js';

/**
 * Console routes of a workspace (/api/w/{wid}/…) declare the permission they need as a route
 * option, `options.app.permission`, and this one extension point checks it for every route:
 * - It runs at onPreHandler, after authentication and after the params, query and body are
 *   validated, so a malformed request is still answered 400 before anyone's role is looked at.
 * - The check is the people service's `authorize`: a workspace the person is not in, or one that
 *   does not exist, is 404 not_found before any 403 forbidden of the role; a person still holding
 *   a one-time password may do nothing in a workspace until they change it.
 * - What passed is put on the request (`member(request)`: the workspace, the person, their role
 *   there and how the ledger names them), so a handler never asks again.
 * - A route whose permission depends on what it is asked names the path parameter that decides
 *   (`{ byParam, of, otherwise }`); a route whose permission depends on the body declares what
 *   it always needs, and checks the rest itself.
 * - A route declaring a permission must take the session cookie and have a {wid} in its path:
 *   anything else is refused when the route is added, not when it is first called.
 */

/**
 * The permissions a route may name. Empty here, since the shared HTTP pieces know no domain: the
 * people domain's route plugin fills it from its one table (declaration merging, as hapi's own
 * RouteOptionsApp), so that a route naming a permission that does not exist does not compile.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by declaration merging
export interface RoutePermissions {}
export type RoutePermission = keyof RoutePermissions & string;

/** A permission that depends on a path parameter: `of[params[byParam]]`, else `otherwise`. */
export interface PermissionByParam {
  byParam: string;
  of: Partial<Record<string, RoutePermission>>;
  otherwise: RoutePermission;
}

export type PermissionOption = RoutePermission | PermissionByParam;

/** A person's role in a workspace (the people domain's Role). */
export type MemberRole = PersonCredential['role'];

/** The signed-in person of a console route of a workspace, once the route's permission passed. */
export interface Member {
  wid: string;
  user: SessionUser;
  role: MemberRole;
  /** How the ledger names them (`user:<id>`). */
  actor: string;
}

declare module '@hapi/hapi' {
  interface RouteOptionsApp {
    /** What the signed-in person's role in the path's workspace must allow (checked at onPreHandler). */
    permission?: PermissionOption;
  }
  interface RequestApplicationState {
    /** Set once a route's declared permission passed. */
    member?: Member;
  }
}

/** What the check asks of the people service: the caller's role in a workspace, once it allows the permission (else it throws). */
export interface PermissionChecker {
  authorize(wid: string, user: SessionUser, permission: RoutePermission): Promise<MemberRole>;
}

/** The permission a route declares for a request with these (validated) path parameters. */
export function permissionFor(option: PermissionOption, params: Record<string, unknown>): RoutePermission {
  if (typeof option === 'string') return option;
  const value = params[option.byParam];
  // Own keys only: a parameter named `constructor` is no permission of Object's.
  return (
    (typeof value === 'string' && Object.hasOwn(option.of, value) ? option.of[value] : undefined) ?? option.otherwise
  );
}

/** The permission a route of the route table declares, if any. */
export function declaredPermission(route: Pick<RequestRoute, 'settings'>): PermissionOption | undefined {
  return route.settings.app?.permission;
}

function checkDeclaration(route: RequestRoute, sessionStrategies: readonly string[]): void {
  const option = declaredPermission(route);
  if (option === undefined) return;
  const where = `${route.method.toUpperCase()} ${route.path}`;
  if (!route.path.includes('{wid}')) throw new Error(`${where} declares a permission but has no {wid} in its path`);
  // hapi keeps `false` here for a route without authentication.
  const auth = route.settings.auth as { strategies?: string[] } | false | undefined;
  const strategies = (auth && auth.strategies) || [];
  if (strategies.length === 0 || strategies.some((s) => !sessionStrategies.includes(s)))
    throw new Error(`${where} declares a permission but does not take the session cookie alone`);
  if (typeof option !== 'string' && !route.path.includes(`{${option.byParam}}`))
    throw new Error(`${where} decides its permission by {${option.byParam}}, which its path lacks`);
}

/**
 * Checks every route's declared permission at onPreHandler. Register it before the route plugins
 * (it watches routes as they are added).
 */
export function registerPermissions(
  server: Server,
  options: { people: PermissionChecker; sessionStrategies: readonly string[] },
): void {
  server.events.on('route', (route) => checkDeclaration(route, options.sessionStrategies));
  // Every request passes here (hapi has no server-wide step for some routes only): a route that
  // declares nothing (the gate, the gateway, /mcp) returns at once, without a promise.
  server.ext('onPreHandler', (request, h) => {
    const option = declaredPermission(request.route);
    if (option === undefined) return h.continue;
    const params = request.params as Record<string, unknown>;
    const wid = params.wid as string;
    const c = caller(request, 'session');
    return options.people.authorize(wid, c.user, permissionFor(option, params)).then((role) => {
      request.app.member = { wid, user: c.user, role, actor: actorOf(c) };
      return h.continue;
    });
  });
}

/** The signed-in person of a route that declares a permission, as the check found them. */
export function member(request: Request): Member {
  const found = request.app.member;
  if (!found) throw new Error(`${request.method.toUpperCase()} ${request.route.path} declares no permission`);
  return found;
}
