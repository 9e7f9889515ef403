/**
 * The platform a request comes from, as Service Fabrik's broker registered it: the path prefix a
 * platform is given (`/cf/v2`, `/k8s/v2`, `/sm/v2`, optionally `/<platform>/region/<region>/v2`),
 * and which services and plans each platform is offered (`supported_platform`). Pure.
 */
import { badRequest } from './errors.js';
import type { SFPlan, SFService } from '../resources/types.js';

/** The platforms of the path prefix: Cloud Foundry, Kubernetes, and a service manager. */
export const BROKER_PLATFORMS = ['cf', 'k8s', 'sm'] as const;
export type BrokerPlatform = (typeof BROKER_PLATFORMS)[number];

/** Where a request came in: the platform and region of its path prefix. */
export interface PlatformRoute {
  readonly platform: BrokerPlatform;
  /** The region of a `/<platform>/region/<region>/v2` path. @default none */
  readonly region?: string;
}

export const isBrokerPlatform = (value: string): value is BrokerPlatform =>
  (BROKER_PLATFORMS as readonly string[]).includes(value);

/** A region is kept as a label value: 1 to 63 letters, digits, `-`, `_` or `.`, alphanumeric at both ends. */
const REGION = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/**
 * The route of a request from its path parameters; undefined for a plain `/v2` path.
 *
 * @throws OsbError 400 when the region is not a valid label value.
 */
export function platformRoute(
  platform: string | undefined,
  region: string | undefined,
): PlatformRoute | undefined {
  if (platform === undefined) return undefined;
  if (!isBrokerPlatform(platform))
    throw badRequest(`Unknown platform ${platform}; known: ${BROKER_PLATFORMS.join(', ')}.`);
  if (region === undefined) return { platform };
  if (!REGION.test(region))
    throw badRequest(
      'The region of the path must be 1 to 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit.',
    );
  return { platform, region };
}

/**
 * Whether a service or a plan is offered on a platform: a `supported_platform` list names the
 * platforms it is offered on; without one (or with an empty one) it is offered on every platform.
 * A plain `/v2` request (no platform) sees everything.
 */
export function offeredOn(
  spec: { readonly supported_platform?: readonly string[] },
  platform: BrokerPlatform | undefined,
): boolean {
  const supported = spec.supported_platform;
  if (platform === undefined || !Array.isArray(supported) || supported.length === 0) return true;
  return supported.includes(platform);
}

/** The services and plans a platform's catalog shows: those offered on it, and plans of services that are. */
export function catalogForPlatform(
  services: readonly SFService[],
  plans: readonly SFPlan[],
  platform: BrokerPlatform | undefined,
): { services: SFService[]; plans: SFPlan[] } {
  const shown = services.filter((s) => offeredOn(s.spec, platform));
  const ids = new Set(shown.map((s) => s.spec.id));
  return {
    services: shown,
    plans: plans.filter((p) => ids.has(p.spec.serviceId) && offeredOn(p.spec, platform)),
  };
}

/**
 * Refuses a new instance of a plan (or a change to it) on a platform it is not offered on.
 *
 * @throws OsbError 400 naming the plan, the platform and those it is offered on.
 */
export function checkOfferedOn(service: SFService, plan: SFPlan, route: PlatformRoute | undefined): void {
  const platform = route?.platform;
  if (!offeredOn(service.spec, platform))
    throw badRequest(
      `Service ${service.spec.name} is not offered on platform ${platform}; it is offered on ${service.spec.supported_platform!.join(', ')}.`,
    );
  if (!offeredOn(plan.spec, platform))
    throw badRequest(
      `Plan ${plan.spec.name} is not offered on platform ${platform}; it is offered on ${plan.spec.supported_platform!.join(', ')}.`,
    );
}
