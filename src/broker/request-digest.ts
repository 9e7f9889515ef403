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
 * The digests of each kind of request, keyed so that a digest reveals nothing of the parameters.
 * Each takes only the attributes named here of what it is given.
 */
export interface RequestDigests {
  /** A provision, or an update by the instance it asks for (of maintenance_info, the version only). */
  instance(attributes: InstanceAttributes): string;
  deprovision(instanceId: string): string;
  bind(attributes: BindingAttributes): string;
  unbind(bindingId: string): string;
  /** A custom action on an instance, with its parameters. */
  action(instanceId: string, action: string, parameters?: Record<string, unknown>): string;
}

/** HMAC-SHA-256 (hex) of the canonical JSON of what identifies each request. */
export function requestDigests(key: Buffer): RequestDigests {
  const digest = (attributes: Record<string, unknown>): string =>
    createHmac('sha256', key).update(canonicalJson(attributes)).digest('hex');
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
