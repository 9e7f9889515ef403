/** `X-Broker-API-Version`: parsed, and compared with the versions features need. Pure. */
import { preconditionFailed } from './errors.js';

export interface ApiVersion {
  readonly major: number;
  readonly minor: number;
}

/** The lowest version we serve. */
export const MIN_VERSION: ApiVersion = { major: 2, minor: 12 };

export function parseApiVersion(header: string | undefined): ApiVersion {
  const match = header ? /^\s*(\d+)\.(\d+)\s*$/.exec(header) : null;
  if (!match) {
    throw preconditionFailed(
      'The X-Broker-API-Version header is missing or malformed; this broker serves 2.12 to 2.17.',
    );
  }
  const version = { major: Number(match[1]), minor: Number(match[2]) };
  if (version.major !== 2 || version.minor < MIN_VERSION.minor) {
    throw preconditionFailed(
      `X-Broker-API-Version ${header!.trim()} is not supported; this broker serves 2.12 to 2.17.`,
    );
  }
  return version;
}

/** Whether the request's version has a feature introduced in `minor` (e.g. 14 for async bindings). */
export const supports = (version: ApiVersion, minor: number): boolean => version.minor >= minor;
