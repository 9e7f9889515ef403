/**
 * The digest of a request: what tells the same request sent again from a different one with the
 * same id. The broker keeps it on the record and in the operation's memo and compares the next
 * request's with it, so the text it is taken of must stay the same from release to release.
 * Pure.
 */
import { createHmac } from 'node:crypto';
import { canonicalJson } from '../osb/canonical-json.js';
import type { MaintenanceInfo } from '../resources/types.js';

/** What makes two provisions (or the instance an update leaves behind) the same. */
export interface InstanceAttributes {
  readonly serviceId: string;
  readonly planId: string;
  readonly organizationGuid?: string;
  readonly spaceGuid?: string;
  readonly parameters?: Record<string, unknown>;
  readonly maintenanceInfo?: MaintenanceInfo;
}

/** What makes two binds the same. */
export interface BindingAttributes {
  readonly serviceId: string;
  readonly planId: string;
  readonly appGuid?: string;
  readonly bindResource?: Record<string, unknown>;
  readonly parameters?: Record<string, unknown>;
  /** A rotation's predecessor: the same binding id rotating another binding is another request. */
  readonly predecessorBindingId?: string;
}

/**
 * A request's digest: the one written on the records and the memo (under the first key), and
 * whether a digest stored before is of the same request under any key the broker holds, so that a
 * repeat is known as one across a rotation of the keys and between brokers whose first keys differ.
 */
export interface RequestDigest {
  readonly value: string;
  matches(stored: string | undefined): boolean;
}

/**
 * The digests of each kind of request, keyed so that a digest reveals nothing of the parameters.
 * Each takes only the attributes named here of what it is given.
 */
export interface RequestDigests {
  /** A provision, or an update by the instance it asks for (of maintenance_info, the version only). */
  instance(attributes: InstanceAttributes): RequestDigest;
  deprovision(instanceId: string): RequestDigest;
  bind(attributes: BindingAttributes): RequestDigest;
  unbind(bindingId: string): RequestDigest;
  /** A custom action on an instance, with its parameters. */
  action(instanceId: string, action: string, parameters?: Record<string, unknown>): RequestDigest;
}

/**
 * HMAC-SHA-256 (hex) of the canonical JSON of what identifies each request, under each of `keys`
 * (the first is the one written).
 */
export function requestDigests(keys: readonly Buffer[]): RequestDigests {
  if (keys.length === 0) throw new Error('request digests need a key');
  const digest = (attributes: Record<string, unknown>): RequestDigest => {
    const text = canonicalJson(attributes);
    const under = (key: Buffer) => createHmac('sha256', key).update(text).digest('hex');
    const value = under(keys[0]!);
    return {
      value,
      matches: (stored) =>
        stored !== undefined && (stored === value || keys.slice(1).some((key) => under(key) === stored)),
    };
  };
  return {
    instance: ({ serviceId, planId, organizationGuid, spaceGuid, parameters, maintenanceInfo }) =>
      digest({
        serviceId,
        planId,
        organizationGuid,
        spaceGuid,
        parameters,
        maintenanceInfo: maintenanceInfo?.version,
      }),
    deprovision: (instanceId) => digest({ deprovision: instanceId }),
    // Undefined members are left out of the digested text: a bind without a predecessor keeps its digest.
    bind: ({ serviceId, planId, appGuid, bindResource, parameters, predecessorBindingId }) =>
      digest({ serviceId, planId, appGuid, bindResource, parameters, predecessorBindingId }),
    unbind: (bindingId) => digest({ unbind: bindingId }),
    action: (instanceId, action, parameters) => digest({ action, instanceId, parameters }),
  };
}
