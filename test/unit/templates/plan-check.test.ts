/** The pure parts of `plan check` that render nothing: sample parameters, the CRD's schema, the lines it prints. */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import {
  crdSchemaOf,
  findingLine,
  reportSummary,
  sampleParameters,
} from '../../../src/templates/plan-check.js';

describe('the sample parameters of a schema', () => {
  test.each([
    { name: 'no schema', schema: undefined, sample: {} },
    { name: 'a schema without examples or defaults', schema: { type: 'object' }, sample: {} },
    {
      name: 'its first example',
      schema: { type: 'object', examples: [{ size: 'L' }, { size: 'S' }] },
      sample: { size: 'L' },
    },
    { name: 'its default', schema: { type: 'object', default: { size: 'M' } }, sample: { size: 'M' } },
    {
      name: "its properties' defaults, else their first examples",
      schema: {
        type: 'object',
        properties: { size: { default: 'S' }, name: { examples: ['db'] }, other: { type: 'string' } },
      },
      sample: { size: 'S', name: 'db' },
    },
  ])('GIVEN $name THEN the sample is as expected', ({ schema, sample }) => {
    expect(sampleParameters(schema)).toEqual(sample);
  });
});

describe("the SFPlan CRD's schema", () => {
  test('GIVEN the chart’s CRD WHEN its schema is read THEN it requires the spec', () => {
    const crd = parse(readFileSync('charts/interoperator/crds/osb.servicefabrik.io_sfplans.yaml', 'utf8'));
    expect(crdSchemaOf(crd)).toMatchObject({ type: 'object', required: ['spec'] });
  });

  test.each([null, {}, { spec: { versions: [] } }, { spec: { versions: [{ name: 'v1' }] } }])(
    'GIVEN %j THEN there is no schema',
    (crd) => {
      expect(crdSchemaOf(crd)).toBeUndefined();
    },
  );
});

describe('what plan check prints', () => {
  test('GIVEN findings THEN one line each, and a summary line', () => {
    expect(findingLine({ severity: 'error', action: 'status', message: 'has no provision section' })).toBe(
      'error: status: has no provision section',
    );
    expect(reportSummary({ name: 'small', id: 'p-1', findings: [], errors: 1, warnings: 2 })).toBe(
      'plan small (p-1): 1 error, 2 warnings',
    );
  });
});
