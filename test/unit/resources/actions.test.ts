/**
 * The names of a plan's template actions: the OSB ones and the custom `x-<name>` ones, the same rule
 * in code and in the SFPlan CRD's CEL rule; and when an instance can run a custom action.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import {
  CUSTOM_ACTION_PATTERN,
  OSB_TEMPLATE_ACTIONS,
  actionRefusal,
  customActionProblem,
  customActionsOf,
  isCustomAction,
  isTemplateActionName,
  type ActionTarget,
} from '../../../src/resources/actions.js';

describe('custom action names', () => {
  test.each([
    ['x-backup', true],
    ['x-restart-2', true],
    ['x-1', true],
    [`x-${'a'.repeat(61)}`, true],
    [`x-${'a'.repeat(62)}`, false],
    ['x-', false],
    ['x--', false],
    ['x-backup-', false],
    ['x-Backup', false],
    ['x_backup', false],
    ['backup', false],
    ['X-backup', false],
    ['x-back up', false],
    ['x-backup\n', false],
    ['provision', false],
    [42, false],
    [undefined, false],
  ])('%j is a custom action: %s', (name, expected) => {
    expect(isCustomAction(name)).toBe(expected);
  });

  test.each([
    ['provision', true],
    ['clusterSelector', true],
    ['x-backup', true],
    ['update', false],
    ['deprovision', false],
    ['backup', false],
  ])('%j may name a plan template: %s', (name, expected) => {
    expect(isTemplateActionName(name)).toBe(expected);
  });

  test.each([
    ['x-backup', undefined],
    ['provision', /"provision" is an OSB action, run by the platform; a custom action is named x-<name>/],
    ['backup', /"backup" is not a custom action: a custom action is named x-<name>: lowercase letters/],
    ['x-Backup', /"x-Backup" is not a custom action/],
  ])('the problem of %j', (name, expected) => {
    const problem = customActionProblem(name);
    if (expected === undefined) expect(problem).toBeUndefined();
    else expect(problem).toMatch(expected);
  });

  test('a long name is cut short in the problem', () => {
    expect(customActionProblem('y'.repeat(500))!.length).toBeLessThan(250);
  });

  test("a plan's custom actions, once each, in the order of its templates", () => {
    expect(
      customActionsOf([
        { action: 'provision' },
        { action: 'x-restart' },
        { action: 'status' },
        { action: 'x-backup' },
        { action: 'x-restart' },
      ]),
    ).toEqual(['x-restart', 'x-backup']);
    expect(customActionsOf(undefined)).toEqual([]);
  });
});

describe("the SFPlan CRD's rule for template actions", () => {
  type Schema = { properties: Record<string, Schema>; items: Schema; pattern: string; maxLength: number };
  const crd = parse(readFileSync('charts/interoperator/crds/osb.servicefabrik.io_sfplans.yaml', 'utf8')) as {
    spec: { versions: { schema: { openAPIV3Schema: Schema } }[] };
  };
  const action =
    crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec!.properties.templates!.items.properties
      .action!;
  const pattern = new RegExp(action.pattern);

  test('is the OSB actions and the custom action pattern of the code', () => {
    expect(action.pattern).toBe(
      `^(${OSB_TEMPLATE_ACTIONS.join('|')}|${CUSTOM_ACTION_PATTERN.source.slice(1, -1)})$`,
    );
    expect(action.maxLength).toBe(63);
  });

  test.each([
    'provision',
    'clusterSelector',
    'x-backup',
    'x-1',
    'update',
    'backup',
    'x-Backup',
    'x-',
    'x-a-',
  ])('%j is accepted exactly when the code accepts it', (name) => {
    expect(pattern.test(name)).toBe(isTemplateActionName(name));
  });
});

describe('when an instance can run a custom action', () => {
  const record = (status?: ActionTarget['status'], deletionTimestamp?: string): ActionTarget => ({
    metadata: deletionTimestamp ? { deletionTimestamp } : {},
    ...(status ? { status } : {}),
  });

  test.each<[string, ActionTarget | undefined, RegExp | undefined]>([
    ['provisioned', record({ operation: 'provision', state: 'succeeded' }), undefined],
    ['updated', record({ operation: 'update', state: 'succeeded' }), undefined],
    [
      'after a failed update, rolled back',
      record({ operation: 'update', state: 'failed', instanceUsable: true }),
      undefined,
    ],
    [
      'after a failed deprovision that left it usable',
      record({ operation: 'deprovision', state: 'failed', instanceUsable: true }),
      undefined,
    ],
    ['without a record', undefined, /does not exist/],
    [
      'being deleted',
      record({ operation: 'provision', state: 'succeeded' }, '2026-01-01T00:00:00Z'),
      /being deleted/,
    ],
    ['being deprovisioned', record({ operation: 'deprovision', state: 'delete' }), /being deleted/],
    [
      'whose provision failed',
      record({ operation: 'provision', state: 'failed' }),
      /provision of the service instance failed/,
    ],
    [
      'still being provisioned',
      record({ operation: 'provision', state: 'in progress' }),
      /still being provisioned/,
    ],
    [
      'unusable after a failed update',
      record({ operation: 'update', state: 'failed', instanceUsable: false }),
      /not usable since its update failed/,
    ],
  ])('%s', (_, target, expected) => {
    const refusal = actionRefusal(target);
    if (expected === undefined) expect(refusal).toBeUndefined();
    else expect(refusal).toMatch(expected);
  });
});
