/** The dashboard URL of a new instance, from our mustache template or Service Fabrik's. Pure and table-driven. */
import { renderDashboardUrl } from '../../../src/templates/dashboard-url.js';
import type { ProvisionRequest } from '../../../src/osb/service-broker.js';
import type { SFPlan } from '../../../src/resources/types.js';

const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');

const request: ProvisionRequest = {
  instanceId: 'inst-1',
  serviceId: 'svc-1',
  planId: 'plan-1',
  organizationGuid: 'org-1',
  acceptsIncomplete: true,
  context: { platform: 'cloudfoundry', region: 'eu 10' },
};

const planWith = (manager: Record<string, unknown>): SFPlan =>
  ({
    apiVersion: 'osb.servicefabrik.io/v1alpha1',
    kind: 'SFPlan',
    metadata: { name: 'plan-1', namespace: 'interoperator' },
    spec: { id: 'plan-1', name: 'small', serviceId: 'svc-1', manager },
  }) as unknown as SFPlan;

describe('the dashboard URL of a new instance', () => {
  test.each<[string, Record<string, unknown>, string | undefined]>([
    ['no template', {}, undefined],
    [
      'ours (mustache)',
      { dashboardUrlTemplate: 'https://dash.example/{{instance.metadata.name}}' },
      'https://dash.example/inst-1',
    ],
    [
      'Service Fabrik’s, with ${…} interpolations',
      {
        settings: {
          dashboard_url_template: b64(
            'https://dash.example/instances/${instance.metadata.name}?planId=${instance.spec.planId}&serviceId=${service_id}',
          ),
        },
      },
      'https://dash.example/instances/inst-1?planId=plan-1&serviceId=svc-1',
    ],
    [
      'Service Fabrik’s, with <%= %> interpolations, encoded as encodeURI does',
      {
        settings: {
          dashboard_url_template: b64('https://dash.example/<%= context.region %>/<%= plan.name %>'),
        },
      },
      'https://dash.example/eu%2010/small',
    ],
    [
      'Service Fabrik’s, a value unset is nothing',
      { settings: { dashboard_url_template: b64('https://dash.example/${space_guid}x') } },
      'https://dash.example/x',
    ],
    [
      'ours before Service Fabrik’s',
      {
        dashboardUrlTemplate: 'https://ours.example/{{instance.metadata.name}}',
        settings: { dashboard_url_template: b64('https://theirs.example/') },
      },
      'https://ours.example/inst-1',
    ],
  ])('GIVEN %s', (_name, manager, expected) => {
    expect(renderDashboardUrl(planWith(manager), undefined, request)).toBe(expected);
  });

  test.each<[string, string, RegExp]>([
    ['not base64', '!!not base64!!', /not base64/],
    ['a template that computes', b64("${instance.spec.clusterId == 1 ? 'https://a' : ''}"), /computes/],
    ['a template that runs code', b64('<% print(1) %>https://a.example'), /runs code/],
    ['no URL', b64('${instance.metadata.name}'), /no http\(s\) URL/],
  ])('GIVEN Service Fabrik’s template %s THEN a 422 says why', (_name, encoded, description) => {
    const plan = planWith({ settings: { dashboard_url_template: encoded } });
    expect(() => renderDashboardUrl(plan, undefined, request)).toThrow(
      expect.objectContaining({ status: 422, message: expect.stringMatching(description) }) as Error,
    );
  });
});
