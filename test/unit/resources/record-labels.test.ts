/** Service Fabrik's labels on instance and binding records, and which records an installation owns. Pure and table-driven. */
import {
  SF_LABELS,
  bindingRecordLabels,
  contextLabels,
  instanceRecordLabels,
  isLabelValue,
  isOwnedBy,
  requestState,
} from '../../../src/resources/record-labels.js';
import { labelValue, resourceName } from '../../../src/resources/names.js';

const LONG = 'x'.repeat(64);

describe('the labels of an instance record', () => {
  test('GIVEN a Cloud Foundry provision THEN it has Service Fabrik’s keys with the request’s values', () => {
    const labels = instanceRecordLabels(
      {
        serviceId: 'svc-1',
        planId: 'plan-1',
        context: {
          platform: 'cloudfoundry',
          organization_guid: 'org-1',
          space_guid: 'space-1',
          origin: ' sapcp ',
          subaccount_id: 'sub-1',
          region: 'eu10',
        },
      },
      'provision',
      'landscape-a',
    );
    expect(labels).toEqual({
      plan_id: 'plan-1',
      service_id: 'svc-1',
      platform: 'cloudfoundry',
      organization_guid: 'org-1',
      space_guid: 'space-1',
      origin: 'sapcp',
      subaccount_id: 'sub-1',
      region: 'eu10',
      OWNER_INTEROPERATOR_NAMESPACE: 'landscape-a',
      state: 'in_queue',
    });
  });

  test.each<[string, unknown, Record<string, string>]>([
    ['no context', undefined, {}],
    ['a context that is no map', 'cloudfoundry', {}],
    ['a value with a space is left out', { platform: 'cloud foundry' }, {}],
    ['a value too long is left out', { subaccount_id: LONG }, {}],
    ['a value that is no text is left out', { platform: 7, region: { name: 'eu10' } }, {}],
    ['a value of blanks is left out', { origin: '   ' }, {}],
    ['a value at the longest kept', { region: 'r'.repeat(63) }, { region: 'r'.repeat(63) }],
  ])('GIVEN %s THEN its context labels are %p', (_name, context, expected) => {
    expect(contextLabels(context)).toEqual(expected);
  });

  test('GIVEN a request with organization and space outside its context THEN they stand in', () => {
    expect(
      contextLabels({ platform: 'kubernetes' }, { organizationGuid: 'org-2', spaceGuid: 'space-2' }),
    ).toEqual({
      platform: 'kubernetes',
      organization_guid: 'org-2',
      space_guid: 'space-2',
    });
  });

  test('GIVEN plan and service ids that are no label values THEN they are hashed as our own labels are', () => {
    const planId = 'plan id with spaces';
    const labels = instanceRecordLabels({ serviceId: LONG, planId }, 'update', undefined);
    expect(labels[SF_LABELS.planId]).toBe(labelValue(planId));
    expect(labels[SF_LABELS.serviceId]).toBe(labelValue(LONG));
    expect(isLabelValue(labels[SF_LABELS.planId]!)).toBe(true);
    expect(isLabelValue(labels[SF_LABELS.serviceId]!)).toBe(true);
    expect(labels[SF_LABELS.owner]).toBeUndefined();
    expect(labels[SF_LABELS.state]).toBe('update');
  });
});

describe('the labels of a binding record', () => {
  test.each<[string, string, Record<string, string>]>([
    [
      'a bind',
      'bind',
      { instance_guid: 'inst-1', OWNER_INTEROPERATOR_NAMESPACE: 'landscape-a', state: 'in_queue' },
    ],
    [
      'an unbind',
      'unbind',
      { instance_guid: 'inst-1', OWNER_INTEROPERATOR_NAMESPACE: 'landscape-a', state: 'delete' },
    ],
  ])('GIVEN %s THEN %p', (_name, operation, expected) => {
    expect(bindingRecordLabels({ instanceId: 'inst-1' }, operation, 'landscape-a')).toEqual(expected);
  });

  test('GIVEN an instance id that is no Kubernetes name THEN instance_guid is its record’s name', () => {
    const instanceId = 'Instance/With/Slashes';
    const labels = bindingRecordLabels({ instanceId }, 'bind', 'landscape-a');
    expect(labels.instance_guid).toBe(resourceName(instanceId));
    expect(isLabelValue(labels.instance_guid!)).toBe(true);
  });
});

describe('the state label of a request', () => {
  test.each([
    ['provision', 'in_queue'],
    ['bind', 'in_queue'],
    ['update', 'update'],
    ['deprovision', 'delete'],
    ['unbind', 'delete'],
  ])('%s writes %s', (operation, state) => {
    expect(requestState(operation)).toBe(state);
  });
});

describe('which records an installation owns', () => {
  test.each<[string, Record<string, string> | undefined, string | undefined, boolean]>([
    ['its own', { OWNER_INTEROPERATOR_NAMESPACE: 'a' }, 'a', true],
    ['another installation’s', { OWNER_INTEROPERATOR_NAMESPACE: 'b' }, 'a', false],
    ['one without the label (older, or written without it)', { plan_id: 'p' }, 'a', true],
    ['one without labels', undefined, 'a', true],
    ['any, for an installation without an owner', { OWNER_INTEROPERATOR_NAMESPACE: 'b' }, undefined, true],
  ])('GIVEN %s', (_name, labels, owner, expected) => {
    expect(isOwnedBy(labels, owner)).toBe(expected);
  });
});
