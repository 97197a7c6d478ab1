// The per-request context: who calls, on which tenant, and the app's parts a handler hands to server/, built once per
// request by the route wrapper instead of by each handler. A handler says what it needs by the wrapper it uses, so a
// route cannot forget to authenticate, and the order of the refusals is the same everywhere: credentials (401), key
// scope and rate (403, 429: authenticate), the admin check (403), then the tenant named in the path (404). The app is
// read once per request, so a request is answered by one app's parts and settings throughout.
import { app, type App } from '../app';
import { authenticate, type Principal } from '../auth';
import type { Clock } from '../clock';
import type { EngineHandle } from '../engine';
import type { Env } from '../env';
import type { ExportFormatters } from '../exports/table-export';
import type { ProcedureRunner } from '../procedures/types';
import { audit, type AuditAction } from '../security/audit';
import type { SignInThrottle } from '../security/sign-in-throttle';
import type { Database } from '../storage/database';
import { assertAdmin, findTenant, type Tenant } from '../tenants/tenants';
import { route, type Params } from './respond';

/** What every handler is handed. */
interface Handed {
  readonly request: Request;
  readonly database: Database;
  /** The app's settings (server/env.ts): the admin token, trusted proxies, upload limit, webhook address policy. */
  readonly env: Env;
}

/** What a handler of a route anyone may call (sign-in, sign-out) is handed. */
export interface Visitor extends Handed {
  /** The app's throttle of failed sign-ins (server/security/sign-in-throttle.ts). */
  readonly signInThrottle: SignInThrottle;
  /** The app's clock: sessions start and end by it. */
  readonly clock: Clock;
}

/** What an authenticated handler is handed. */
export interface Caller extends Handed {
  readonly principal: Principal;
  /** The app's engine (a route of an app built without one fails when it asks). */
  readonly engine: EngineHandle;
  readonly runner: ProcedureRunner;
  /** The clock the app's loops wait on and the engine stamps moves with. */
  readonly clock: Clock;
  /** The app's export formatter threads' clients. */
  readonly formatters: ExportFormatters;
  /**
   * Registers how a long-lived response (an event stream) ends itself when the process stops: Next.js waits for every
   * open connection before it exits, so a studio tab left open would otherwise keep a stopping server alive. Returns
   * the unregister.
   */
  onShutdown(close: () => void): () => void;
  /** Records what the caller did, after it succeeded (server/security/audit.ts). */
  audit(action: AuditAction, what: { tenantId?: string | null; target: string; details?: unknown }): Promise<void>;
}

/** What a handler of a `/tenants/{tenant}/…` route is handed: the caller and the tenant it may act on. */
export interface TenantCaller extends Caller {
  readonly tenant: Tenant;
  /** Records what the caller did to this tenant. */
  audit(action: AuditAction, what: { target: string; details?: unknown }): Promise<void>;
}

type CallerHandler<P extends Params> = (caller: Caller, params: P) => Promise<Response>;
type TenantHandler<P extends Params & { tenant: string }> = (caller: TenantCaller, params: P) => Promise<Response>;

/** Who calls with `request`, by the admin token and the database of `built`, the app answering it. */
function authenticated(built: App, request: Request): Promise<Principal> {
  return authenticate(request, built.database, built.env.CROWDFLOW_ADMIN_TOKEN, built.state.security, built.clock.now());
}

function callerOf(built: App, request: Request, principal: Principal): Caller {
  return {
    request,
    principal,
    database: built.database,
    env: built.env,
    get engine() {
      if (!built.engine) throw new Error('This app has no engine (built with engine: none)');
      return built.engine;
    },
    runner: built.runner,
    clock: built.clock,
    formatters: built.state.formatters,
    onShutdown: (close) => {
      const { closers } = built.state.shutdown;
      closers.add(close);
      return () => closers.delete(close);
    },
    audit: (action, what) => audit(built.database, principal, action, what),
  };
}

async function tenantCallerOf(built: App, request: Request, principal: Principal, ref: string): Promise<TenantCaller> {
  const caller = callerOf(built, request, principal);
  const tenant = await findTenant(caller.database, principal, ref);
  return Object.assign(caller, {
    tenant,
    audit: (action: AuditAction, what: { target: string; details?: unknown }) => audit(caller.database, principal, action, { tenantId: tenant.id, ...what }),
  });
}

/** A route anyone may call, without credentials (signing in and out). */
export function openRoute<P extends Params = Params>(handler: (visitor: Visitor, params: P) => Promise<Response>) {
  return route<P>(async (request, params) => {
    const { database, env, state, clock } = app();
    return handler({ request, database, env, signInThrottle: state.security.signIn, clock }, params);
  });
}

/** A route any authenticated caller may use (an API key within its scopes, or the admin). */
export function callerRoute<P extends Params = Params>(handler: CallerHandler<P>) {
  return route<P>(async (request, params) => {
    const built = app();
    return handler(callerOf(built, request, await authenticated(built, request)), params);
  });
}

/** A route only the admin (token or studio session) may use. */
export function adminRoute<P extends Params = Params>(handler: CallerHandler<P>) {
  return route<P>(async (request, params) => {
    const built = app();
    const principal = await authenticated(built, request);
    assertAdmin(principal);
    return handler(callerOf(built, request, principal), params);
  });
}

/** A route on the tenant the path names: the admin may name any, an API key only its own (another is a 404). */
export function tenantRoute<P extends Params & { tenant: string }>(handler: TenantHandler<P>) {
  return route<P>(async (request, params) => {
    const built = app();
    return handler(await tenantCallerOf(built, request, await authenticated(built, request), params.tenant), params);
  });
}

/** A route on the tenant the path names that only the admin may use. */
export function adminTenantRoute<P extends Params & { tenant: string }>(handler: TenantHandler<P>) {
  return route<P>(async (request, params) => {
    const built = app();
    const principal = await authenticated(built, request);
    assertAdmin(principal);
    return handler(await tenantCallerOf(built, request, principal, params.tenant), params);
  });
}
