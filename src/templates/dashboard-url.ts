/**
 * The dashboard URL of a new instance, from its plan's `manager.dashboardUrlTemplate` (mustache).
 * Pure: known before the operator answers, so a provision can return it at once.
 */
import Mustache from 'mustache';
import type { ProvisionRequest } from '../osb/service-broker.js';
import { resourceName } from '../resources/names.js';
import type { SFPlan, SFService } from '../resources/types.js';

/**
 * The URL the plan's dashboard URL template renders for `request`, or undefined when the plan has
 * no template. The template sees `instance` (its record's `metadata.name`, and the request as its
 * `spec`), `plan` and `service`; every value it inserts is percent-encoded.
 */
export function renderDashboardUrl(
  plan: SFPlan,
  service: SFService | undefined,
  request: ProvisionRequest,
): string | undefined {
  const template = plan.spec.manager?.dashboardUrlTemplate;
  if (!template) return undefined;
  const view = {
    instance: { metadata: { name: resourceName(request.instanceId) }, spec: request },
    plan,
    service,
  };
  return Mustache.render(template, view, {}, { escape: (s: string) => encodeURIComponent(s) });
}
