import { entryOf, type ErrorType } from './catalogue.js';

export interface FieldError {
  /** Dotted path into the body, or null when the body as a whole is at fault. */
  field: string | null;
  message: string;
}

/** Extra members of the error object (docs/api.md#errors), beside type, message, fix, docs, requestId. */
export interface ErrorDetails {
  errors?: FieldError[];
  hold?: string;
  stopped?: string;
  /** null: the key is bound to no one agent (gateway, "stop every agent"). */
  agentId?: string | null;
  evidenceRecord?: string;
  didYouMean?: string;
  relaxations?: unknown[];
  attemptedModels?: unknown[];
  oldCount?: number;
  newCount?: number;
  reason?: string;
  [extra: string]: unknown;
}

export interface AppErrorOptions {
  /** Overrides the catalogue message (still safe to show). */
  message?: string;
  /** A route-specific fix that replaces the catalogue's. */
  fix?: string;
  details?: ErrorDetails;
  /** Response headers that belong to this error, e.g. retry-after or allow. */
  headers?: Record<string, string>;
  cause?: unknown;
  /** A status variant the catalogue entry names (see CatalogueEntry.variants). */
  variant?: string;
}

/**
 * The one error type code throws. Everything a surface needs to render it is here or in the
 * catalogue; surfaces never build error bodies by hand.
 */
export class AppError extends Error {
  readonly type: ErrorType;
  readonly status: number;
  readonly fix: string;
  readonly details: ErrorDetails;
  readonly headers: Record<string, string>;

  constructor(type: ErrorType, options: AppErrorOptions = {}) {
    const entry = entryOf(type);
    const errors = options.details?.errors;
    const message =
      options.message ??
      (entry.validation && errors && errors.length > 0 ? errors.map((e) => e.message).join('; ') : entry.message);
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.type = type;
    this.status = (options.variant !== undefined ? entry.variants?.[options.variant] : undefined) ?? entry.status;
    this.fix = options.fix ?? entry.fix;
    this.details = options.details ?? {};
    this.headers = options.headers ?? {};
  }

  /** 4xx errors are the caller's to see; a 5xx never shows its cause outside the logs. */
  get expose(): boolean {
    return this.status < 500;
  }
}

/** `400 invalid_request` naming one field (a dotted path, or null for the body as a whole). */
export function invalidField(field: string | null, message: string): AppError {
  return new AppError('invalid_request', { details: { errors: [{ field, message }] } });
}

/**
 * Revoking what is already revoked: still not a revocable object (404 not_found, exit 1), but the
 * message says it is revoked and since when, rather than that it does not exist.
 */
export function alreadyRevoked(what: string, revokedAt: string): AppError {
  return new AppError('not_found', {
    message: `${what} is already revoked (since ${revokedAt}); nothing changed.`,
    fix: 'Nothing to do: a revoked credential stays revoked. Mint a new one if it is needed again.',
  });
}
