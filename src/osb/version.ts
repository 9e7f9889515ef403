/**
 * `X-Broker-API-Version`: parsed, checked against what we serve, and compared with the versions
 * that introduced a feature. Pure.
 */
import { preconditionFailed } from './errors.js';

/** An OSB API version as a platform sends it (`MAJOR.MINOR`). */
export interface ApiVersion {
  readonly major: number;
  readonly minor: number;
  /** Normalised text, e.g. `2.17`. */
  readonly text: string;
}

/** A version written `MAJOR.MINOR`, as the spec writes them. */
export type VersionText = `${number}.${number}`;

/** The lowest version we serve. */
export const MIN_API_VERSION: VersionText = '2.12';
/** The latest version we implement; later 2.x minors are accepted and served as this one. */
export const LATEST_API_VERSION: VersionText = '2.17';

/** The versions that introduced the features the API has to gate. */
export const FEATURES = {
  /** `accepts_incomplete` on bind and unbind, 202 for bindings, binding `last_operation`. */
  asyncBindings: '2.14',
  /** `GET` of a service instance and of a service binding. */
  fetchingResources: '2.14',
} as const satisfies Record<string, VersionText>;

const PATTERN = /^(\d{1,4})\.(\d{1,4})$/;

function parse(text: string): ApiVersion | undefined {
  const match = PATTERN.exec(text.trim());
  if (!match) return undefined;
  const major = Number(match[1]);
  const minor = Number(match[2]);
  return { major, minor, text: `${major}.${minor}` };
}

const MIN = parse(MIN_API_VERSION)!;

/**
 * The version of a request, from its `X-Broker-API-Version` header.
 *
 * @throws OsbError 412 when the header is missing, empty or not `MAJOR.MINOR`, when the major
 *   version is not 2, or when the minor version is below {@link MIN_API_VERSION}.
 */
export function parseApiVersion(header: string | undefined): ApiVersion {
  const served = `this broker serves ${MIN_API_VERSION} to ${LATEST_API_VERSION}`;
  const version = header === undefined ? undefined : parse(header);
  if (!version) {
    throw preconditionFailed(
      header === undefined || header.trim() === ''
        ? `The X-Broker-API-Version header is required; ${served}.`
        : `The X-Broker-API-Version header "${header.trim().slice(0, 20)}" is not MAJOR.MINOR; ${served}.`,
    );
  }
  if (version.major !== MIN.major || version.minor < MIN.minor) {
    throw preconditionFailed(
      `X-Broker-API-Version ${version.text} is not supported; ${served}. Send X-Broker-API-Version: ${LATEST_API_VERSION}.`,
    );
  }
  return version;
}

/**
 * Whether a request's version has a feature introduced in `since`, e.g.
 * `supports(version, FEATURES.asyncBindings)` or `supports(version, '2.14')`.
 */
export function supports(version: ApiVersion, since: VersionText): boolean {
  const wanted = parse(since);
  if (!wanted) throw new Error(`Not a MAJOR.MINOR version: ${since}`);
  return version.major > wanted.major || (version.major === wanted.major && version.minor >= wanted.minor);
}

/**
 * Refuses a request whose version predates a feature it uses, e.g.
 * `requireVersion(version, FEATURES.fetchingResources, 'Fetching a service instance')`.
 *
 * @throws OsbError 412 naming the feature, the version it needs and the version sent.
 */
export function requireVersion(version: ApiVersion, since: VersionText, feature: string): void {
  if (!supports(version, since))
    throw preconditionFailed(
      `${feature} needs X-Broker-API-Version ${since} or later; the request sent ${version.text}.`,
    );
}
