/** The dry run's request as the admin API reads it, and the summary of a page. Pure and table-driven. */
import { dryRunSummary, type InstanceDryRun } from '../../../src/admin/dry-run.js';
import { parseDryRunSpec, parsePageRequest } from '../../../src/admin/requests.js';

const spec = (fields: Record<string, unknown> = {}) => ({
  id: 'p-1',
  name: 'small',
  serviceId: 's-1',
  description: 'a plan',
  templates: [{ action: 'provision', type: 'gotemplate', content: 'x' }],
  ...fields,
});

describe('parseDryRunSpec', () => {
  test('GIVEN the body {spec} of the plan THEN the spec', () => {
    expect(parseDryRunSpec({ spec: spec() }, 'p-1')).toEqual(spec());
  });

  test.each([
    ['no spec', {}, 'spec must be an object'],
    ['a spec that is a list', { spec: [] }, 'spec must be an object'],
    ['another field', { spec: spec(), dryRun: true }, 'Unknown field dryRun'],
    ['another plan’s id', { spec: spec({ id: 'p-2' }) }, "spec.id must be the plan's id p-1"],
    ['no name', { spec: spec({ name: '' }) }, 'spec.name must be a non-empty string'],
    ['no service', { spec: spec({ serviceId: 3 }) }, 'spec.serviceId must be a non-empty string'],
    ['templates not a list', { spec: spec({ templates: {} }) }, 'spec.templates must be a list'],
    [
      'a template without a type',
      { spec: spec({ templates: [{ action: 'provision' }] }) },
      'spec.templates[0]',
    ],
    [
      'an unknown action',
      { spec: spec({ templates: [{ action: 'deploy', type: 'gotemplate' }] }) },
      'spec.templates[0].action must be one of',
    ],
    [
      'an unknown type',
      { spec: spec({ templates: [{ action: 'provision', type: 'jinja' }] }) },
      'spec.templates[0].type must be one of',
    ],
  ])('GIVEN %s THEN a 400 naming the field', (_name, body, message) => {
    expect(() => parseDryRunSpec(body, 'p-1')).toThrow(
      expect.objectContaining({ status: 400, message: expect.stringContaining(message) }),
    );
  });
});

test('GIVEN a dry run’s page limit over its own maximum THEN a 400 naming the maximum', () => {
  expect(() => parsePageRequest({ limit: '201' }, 200)).toThrow(/from 1 to 200/);
  expect(parsePageRequest({ limit: '200' }, 200)).toEqual({ limit: 200 });
});

test('GIVEN instances changed, unchanged and failed THEN the summary counts each once', () => {
  const obj = (change: 'changed' | 'unchanged') => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    name: 'c',
    change,
  });
  const instances: InstanceDryRun[] = [
    { instanceId: 'a', objects: [obj('unchanged'), obj('changed')] },
    { instanceId: 'b', objects: [obj('unchanged')] },
    { instanceId: 'c', objects: [], error: 'template failed' },
    { instanceId: 'd', objects: [] },
  ];
  expect(dryRunSummary(instances)).toEqual({ changed: 1, unchanged: 2, failed: 1 });
});
