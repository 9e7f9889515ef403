/**
 * The one catalogue of OSB failures. Every layer throws these; one Koa middleware turns them into
 * responses (`{ error?, description }`), so no handler writes an error body itself.
 *
 * Pure: no I/O, safe to import anywhere.
 */

/** OSB error codes the spec defines for the `error` field. */
export type OsbErrorCode =
  | 'AsyncRequired'
  | 'ConcurrencyError'
  | 'RequiresApp'
  | 'MaintenanceInfoConflict'
  | 'BindingNotFound'
  | 'InvalidParameters';

/** A failure with the HTTP status and body an OSB platform expects. */
export class OsbError extends Error {
  constructor(
    /** HTTP status of the response. */
    readonly status: number,
    /** Human description, returned as `description`; never holds secrets or stack traces. */
    readonly description: string,
    /** OSB `error` code, when the spec defines one for this case. */
    readonly code?: OsbErrorCode | string,
    /** Seconds after which the same request may succeed, sent as `Retry-After`. @default none */
    readonly retryAfterSeconds?: number,
    /** The challenge of a 401, sent as `WWW-Authenticate`. @default none */
    readonly challenge?: string,
  ) {
    super(description);
    this.name = 'OsbError';
  }

  /** The response body the spec asks for. */
  toBody(): { error?: string; description: string } {
    return this.code
      ? { error: this.code, description: this.description }
      : { description: this.description };
  }
}

export const badRequest = (description: string): OsbError => new OsbError(400, description, 'BadRequest');
/** The challenge of a 401 that HTTP Basic credentials answer. */
export const BASIC_CHALLENGE = 'Basic realm="interoperator", charset="UTF-8"';
/**
 * 401, with the `WWW-Authenticate` challenge of the credentials that would be accepted when they
 * are ones a client sends in `Authorization` (Basic); none for a client certificate, which no
 * header answers (as Service Fabrik's broker answers in that mode).
 */
export const unauthorized = (
  description = 'Authentication is required to access this broker.',
  challenge?: string,
): OsbError => new OsbError(401, description, 'Unauthorized', undefined, challenge);
/**
 * 403 for a request the broker understands but will not carry out for this tenant or plan: a
 * quota reached, a plan deprecated or being removed, an entitlement service's refusal.
 */
export const forbidden = (description: string, code = 'Forbidden'): OsbError =>
  new OsbError(403, description, code);
export const notFound = (description: string): OsbError => new OsbError(404, description, 'NotFound');
export const methodNotAllowed = (description: string): OsbError =>
  new OsbError(405, description, 'MethodNotAllowed');
export const conflict = (description: string): OsbError => new OsbError(409, description, 'Conflict');
export const gone = (description: string): OsbError => new OsbError(410, description, 'Gone');
export const preconditionFailed = (description: string): OsbError =>
  new OsbError(412, description, 'PreconditionFailed');
export const payloadTooLarge = (description: string): OsbError =>
  new OsbError(413, description, 'PayloadTooLarge');
/** 422 for a change the broker does not support (OSB names no `error` code for it). */
export const unprocessableEntity = (description: string, code = 'UnprocessableEntity'): OsbError =>
  new OsbError(422, description, code);
/**
 * 400 for a plan change the catalog does not allow (`plan_updateable`, `update_predecessors`): the
 * product's rule (the OSB spec would also allow 422); the request is wrong for this catalog.
 */
export const planChangeNotSupported = (description: string): OsbError =>
  new OsbError(400, description, 'PlanChangeNotSupported');
export const asyncRequired = (
  description = 'This service plan requires client support for asynchronous service operations.',
): OsbError => new OsbError(422, description, 'AsyncRequired');
export const concurrencyError = (
  description = 'Another operation for this service instance is in progress.',
): OsbError => new OsbError(422, description, 'ConcurrencyError');
export const maintenanceInfoConflict = (description: string): OsbError =>
  new OsbError(422, description, 'MaintenanceInfoConflict');
export const requiresApp = (
  description = 'This service supports generation of credentials through binding an application only.',
): OsbError => new OsbError(422, description, 'RequiresApp');
export const invalidParameters = (description: string): OsbError =>
  new OsbError(400, description, 'InvalidParameters');
export const internalError = (
  description = 'The broker failed to process the request; the operator of this broker can find the cause in its logs.',
): OsbError => new OsbError(500, description, 'InternalError');
/** 503: the broker cannot serve the request now; `retryAfterSeconds` says when to try again. */
export const unavailable = (description: string, retryAfterSeconds?: number): OsbError =>
  new OsbError(503, description, 'ServiceUnavailable', retryAfterSeconds);

export const notImplemented = (description: string): OsbError =>
  new OsbError(501, description, 'NotImplemented');

/**
 * Whether `err` is an OsbError. Classified by `name` and shape as well as by class, because jest and
 * the workflow sandbox can load two copies of this module, and `instanceof` fails across copies.
 */
export const isOsbError = (err: unknown): err is OsbError => {
  if (err instanceof OsbError) return true;
  if (!err || typeof err !== 'object') return false;
  const e = err as Partial<OsbError>;
  return (
    e.name === 'OsbError' &&
    typeof e.status === 'number' &&
    typeof e.description === 'string' &&
    typeof e.toBody === 'function'
  );
};
