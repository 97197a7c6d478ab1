// The one error table: every failure a caller can cause has a code, and each code one HTTP status.

export const ERROR_STATUS = {
  bad_request: 400,
  invalid_json: 400,
  validation_failed: 400,
  invalid_id: 400,
  invalid_bitmap: 400,
  invalid_workflow: 400,
  /** A condition the gate refuses (core/conditions/gate.ts): syntax, types, length, nesting, literal sizes, RE2 patterns. */
  invalid_condition: 400,
  /** A condition whose estimated cost per evaluation exceeds the budget (core/conditions/cost.ts). */
  condition_too_costly: 400,
  empty_upload: 400,
  /** A webhook URL naming a private, loopback or link-local address while those are not allowed (server/webhooks/address-policy.ts). */
  private_address: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unprocessable: 422,
  /** A profile write that would take the tenant past its limit of distinct attribute paths (server/profiles/attribute-budget.ts). */
  too_many_attributes: 422,
  rate_limited: 429,
  idempotency_key_reused: 422,
  /** An ad hoc query (audience estimate, explain) stopped at its deadline (server/conditions/deadline.ts). */
  query_deadline: 422,
  /** A time before the journal's retained range (server/analytics/journal-window.ts): details name the range. */
  outside_retention: 422,
  internal: 500,
  unavailable: 503,
  /** A cluster member has no committed figure yet for a partition that is between owners (server/cluster/counts.ts). */
  partition_moving: 503,
  /** A live read of a tenant whose partitions are still loading after a restart (server/engine/reads.ts). */
  partition_recovering: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** The server entry (loaded through tsx: boot, the procedure runner, the engine client) and each Next.js route bundle
 * have their own copy of this class; the brand makes `instanceof AppError` true for an AppError from any copy. */
const APP_ERROR = Symbol.for('crowdflow.AppError');

export class AppError extends Error {
  readonly [APP_ERROR] = true;

  static [Symbol.hasInstance](value: unknown): boolean {
    if (this !== AppError) return Function.prototype[Symbol.hasInstance].call(this, value);
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[APP_ERROR] === true;
  }

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'AppError';
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }
}

export const notFound = (what: string) => new AppError('not_found', `${what} was not found`);
export const conflict = (message: string, details?: unknown) => new AppError('conflict', message, details);
export const badRequest = (message: string, details?: unknown) => new AppError('bad_request', message, details);

/** Unique-constraint violations from either provider, as Prisma reports them. */
export function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: string }).code === 'P2002';
}

/**
 * A row that refers to one deleted meanwhile (a tenant deleted while a request for it was under way), from Prisma
 * (P2003) or either raw driver (SQLite's constraint code, PostgreSQL's SQLSTATE 23503).
 */
export function isForeignKeyViolation(error: unknown): boolean {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return code === 'P2003' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY' || code === '23503';
}

/** "Record to update/delete does not exist" from either provider (a row removed under a concurrent request). */
export function isRecordMissing(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: string }).code === 'P2025';
}
