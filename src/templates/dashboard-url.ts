/**
 * The dashboard URL of a new instance, from its plan's `manager.dashboardUrlTemplate` (mustache),
 * or from Service Fabrik's `manager.settings.dashboard_url_template` (base64 of a lodash template).
 * Pure: known before the operator answers, so a provision can return it at once.
 */
import Mustache from 'mustache';
import { unprocessableEntity } from '../osb/errors.js';
import type { ProvisionRequest } from '../osb/service-broker.js';
import { resourceName } from '../resources/names.js';
import type { SFPlan, SFService } from '../resources/types.js';

/**
 * The URL the plan's dashboard URL template renders for `request`, or undefined when the plan has
 * none. Ours (`manager.dashboardUrlTemplate`, mustache) sees `instance` (its record's
 * `metadata.name`, and the request as its `spec`), `plan` and `service`; every value it inserts is
 * percent-encoded. Without it, Service Fabrik's is used ({@link renderServiceFabrikDashboardUrl}).
 *
 * @throws OsbError 422 when Service Fabrik's template cannot be read or renders no URL.
 */
export function renderDashboardUrl(
  plan: SFPlan,
  service: SFService | undefined,
  request: ProvisionRequest,
): string | undefined {
  const template = plan.spec.manager?.dashboardUrlTemplate;
  const instance = { metadata: { name: resourceName(request.instanceId) }, spec: request };
  if (!template) {
    const settings = plan.spec.manager?.settings as { dashboard_url_template?: unknown } | undefined;
    const encoded = settings?.dashboard_url_template;
    if (typeof encoded !== 'string' || !encoded.trim()) return undefined;
    return renderServiceFabrikDashboardUrl(encoded, {
      ...osbFields(request),
      plan: plan.spec,
      service: service?.spec,
      instance,
    });
  }
  const view = { instance, plan, service };
  return Mustache.render(template, view, {}, { escape: (s: string) => encodeURIComponent(s) });
}

/** The request's fields under their OSB names, as Service Fabrik's template sees them at its top level. */
function osbFields(request: ProvisionRequest): Record<string, unknown> {
  const fields: Record<string, unknown> = {
    instance_id: request.instanceId,
    service_id: request.serviceId,
    plan_id: request.planId,
    organization_guid: request.organizationGuid,
    space_guid: request.spaceGuid,
    context: request.context,
    parameters: request.parameters,
  };
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}

/** `${ path }` or `<%= path %>`: an interpolation of lodash's template. */
const INTERPOLATION = /\$\{([^}]*)\}|<%=([\s\S]*?)%>/g;
/** A property path: names joined by dots, with list indexes (`instance.metadata.name`, `a.b[0]`). */
const PROPERTY_PATH = /^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*|\[\d+\])*$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** What Service Fabrik takes for a URL. */
const URL_PATTERN = /^https?:\/\/[^\s/$.?#][^\s]*$/i;

function valueAt(view: Record<string, unknown>, path: string): unknown {
  let value: unknown = view;
  for (const part of path.split(/\.|\[(\d+)\]/).filter((p) => p !== undefined && p !== '')) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/**
 * Service Fabrik's dashboard URL template, base64 in the plan's `manager.settings`, rendered over
 * `view` as its broker does: the lodash template's interpolations (`${…}` or `<%= … %>`) filled
 * in, an unset value as nothing, and the whole URL encoded with `encodeURI`. Only property paths
 * (`${instance.metadata.name}`) are filled in: a template that computes (`${a == 1 ? … : …}`,
 * `<% … %>`) runs no code here and is refused.
 *
 * @throws OsbError 422 when the template is not base64 text, computes, or renders no http(s) URL.
 */
export function renderServiceFabrikDashboardUrl(encoded: string, view: Record<string, unknown>): string {
  const base64 = encoded.replace(/\s+/g, '');
  const template = BASE64.test(base64) ? Buffer.from(base64, 'base64').toString('utf8') : '';
  if (!template.trim())
    throw unprocessableEntity(
      'The plan’s manager.settings.dashboard_url_template is not base64 text; check the plan',
    );
  if (/<%(?!=)/.test(template))
    throw unprocessableEntity(
      'The plan’s manager.settings.dashboard_url_template runs code (<% … %>); only ${path} interpolations are supported',
    );
  const rendered = template.replace(INTERPOLATION, (_match, dollar?: string, erb?: string) => {
    const path = (dollar ?? erb ?? '').trim();
    if (!PROPERTY_PATH.test(path))
      throw unprocessableEntity(
        `The plan’s manager.settings.dashboard_url_template computes \${${path}}; only property paths such as \${instance.metadata.name} are supported`,
      );
    const value = valueAt(view, path);
    return value === undefined || value === null ? '' : String(value);
  });
  const url = encodeURI(rendered);
  if (!URL_PATTERN.test(url))
    throw unprocessableEntity(
      'The plan’s manager.settings.dashboard_url_template renders no http(s) URL; check the plan',
    );
  return url;
}
