/** What `plan dry-run` reads and prints. Pure and table-driven. */
import type { InstanceDryRun } from '../../../src/admin/dry-run.js';
import { fieldLine, instanceText, planSpecOf, summaryLine } from '../../../src/cli/dry-run-format.js';

describe('planSpecOf', () => {
  test.each([
    ['an SFPlan in YAML', 'kind: SFPlan\nspec:\n  id: p-1\n', { id: 'p-1' }],
    ['a spec in JSON', '{"id": "p-1", "name": "n"}', { id: 'p-1', name: 'n' }],
    ['YAML with anchors', 'id: &id p-1\nname: *id\n', { id: 'p-1', name: 'p-1' }],
  ])('GIVEN %s THEN the spec', (_name, text, spec) => {
    expect(planSpecOf(text)).toEqual(spec);
  });

  test.each([
    ['a list', '- a\n', 'must hold an SFPlan or its spec'],
    ['an SFPlan without spec', 'kind: SFPlan\n', 'has no spec'],
    ['broken YAML', 'a: [\n', 'not YAML or JSON'],
  ])('GIVEN %s THEN an error saying so', (_name, text, message) => {
    expect(() => planSpecOf(text)).toThrow(message);
  });
});

test.each([
  [{ path: 'spec.a', old: '100', new: '120' }, '~ spec.a: "100" → "120"'],
  [{ path: 'spec.b', new: 3 }, '+ spec.b: 3'],
  [{ path: 'spec.c', old: { x: [1] } }, '- spec.c: {"x":[1]}'],
  [{ path: 'data.password', redacted: true as const }, '~ data.password: (value redacted)'],
  [{ path: 'spec.d', old: 'a\nb', new: 'c' }, '~ spec.d: "a\\nb" → "c"'],
])('GIVEN the field %j THEN the line %s', (field, line) => {
  expect(fieldLine(field)).toBe(line);
});

const pg = { apiVersion: 'acid.zalan.do/v1', kind: 'postgresql', name: 'db', namespace: 'sf-1' };

test('GIVEN an instance with changed, added, removed and unchanged objects THEN a readable diff', () => {
  const instance: InstanceDryRun = {
    instanceId: 'i-1',
    clusterId: '1',
    revision: 'r1',
    objects: [
      {
        ...pg,
        change: 'changed',
        fields: [{ path: 'spec.postgresql.parameters.max_connections', old: '100', new: '120' }],
      },
      { apiVersion: 'v1', kind: 'Secret', name: 'creds', namespace: 'sf-1', change: 'added' },
      { apiVersion: 'v1', kind: 'ConfigMap', name: 'old', namespace: 'sf-1', change: 'removed' },
      { apiVersion: 'v1', kind: 'Service', name: 'svc', namespace: 'sf-1', change: 'unchanged' },
    ],
  };
  expect(instanceText(instance, 'r2')).toBe(
    [
      'instance i-1 (cluster 1, revision r1 → r2):',
      '  ~ postgresql sf-1/db',
      '      ~ spec.postgresql.parameters.max_connections: "100" → "120"',
      '  + Secret sf-1/creds (added)',
      '  - ConfigMap sf-1/old (removed)',
      '  = 1 object unchanged',
      '',
    ].join('\n'),
  );
});

test('GIVEN an instance with no change, and one that failed THEN one line each', () => {
  expect(instanceText({ instanceId: 'i-2', objects: [{ ...pg, change: 'unchanged' }] }, 'r2')).toBe(
    'instance i-2: no change (1 object unchanged)\n',
  );
  expect(instanceText({ instanceId: 'i-3', objects: [], error: 'the template failed' }, 'r2')).toBe(
    'instance i-3: FAILED: the template failed\n',
  );
});

test('GIVEN a summary THEN the closing line says nothing was applied', () => {
  expect(summaryLine('p-1', 'r2', { changed: 2, unchanged: 1, failed: 0 }, 'r1')).toBe(
    'plan p-1: revision r1 → r2; 3 instances: 2 would change, 1 unchanged, 0 failed; nothing was applied\n',
  );
});
