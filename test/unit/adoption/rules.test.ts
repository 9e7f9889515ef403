/**
 * The adoption rules over records as Service Fabrik leaves them (test/fixtures/service-fabrik,
 * made from its samples and what its broker and inter-operator write).
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import {
  ADOPTED_ANNOTATION,
  bindingAdoption,
  bindingSecretOf,
  instanceAdoption,
  isOurs,
  type AdoptionDecision,
  type AdoptionLandscape,
} from '../../../src/adoption/rules.js';
import { flagOf } from '../../../src/adoption/service-fabrik.js';
import { ANNOTATIONS, FINALIZER, LABELS } from '../../../src/resources/names.js';
import type { SFServiceBinding, SFServiceInstance } from '../../../src/resources/types.js';

const fixture = <T>(name: string): T =>
  parse(readFileSync(new URL(`../../fixtures/service-fabrik/${name}`, import.meta.url), 'utf8')) as T;

const INSTANCE_ID = '5f0c8d2e-7a41-4b6e-9c3d-1e2f3a4b5c6d';
const BINDING_ID = '8a9b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c2d';
const SERVICE_ID = '24731fb8-7b84-5f57-914f-c3d55d793dd4';
const PLAN_ID = '39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88';
const NOW = '2026-11-28T12:00:00.000Z';

const landscape = (overrides: Partial<AdoptionLandscape> = {}): AdoptionLandscape => ({
  serviceOfPlan: (planId) => (planId === PLAN_ID ? SERVICE_ID : undefined),
  clusterKnown: (clusterId) => clusterId === '1',
  namespaceLabelled: (namespace) => namespace.startsWith('sf-'),
  instanceDigest: (spec) => `instance-digest:${spec.planId}:${JSON.stringify(spec.parameters)}`,
  bindingDigest: (spec) => `binding-digest:${spec.id}`,
  now: NOW,
  ...overrides,
});

const instance = (): SFServiceInstance => fixture<SFServiceInstance>('instance.yaml');
const binding = (): SFServiceBinding => fixture<SFServiceBinding>('binding.yaml');

/** The reason of a refusal; fails the test for an adoption. */
const reasonOf = (decision: AdoptionDecision): string => {
  expect(decision.changes).toBeUndefined();
  return decision.item.reason!;
};

describe('instanceAdoption', () => {
  test('GIVEN a settled instance of a plan in the catalog WHEN decided THEN it is adopted with our labels, finalizer, digest and status fields', () => {
    const decision = instanceAdoption(instance(), landscape());

    expect(decision.item).toEqual({
      kind: 'instance',
      instanceId: INSTANCE_ID,
      namespace: `sf-${INSTANCE_ID}`,
      name: INSTANCE_ID,
      state: 'succeeded',
    });
    expect(decision.changes).toEqual({
      metadata: {
        labels: {
          [LABELS.instanceId]: INSTANCE_ID,
          [LABELS.serviceId]: SERVICE_ID,
          [LABELS.planId]: PLAN_ID,
          [LABELS.clusterId]: '1',
        },
        annotations: {
          [ANNOTATIONS.requestHash]: `instance-digest:${PLAN_ID}:{"foo":"bar"}`,
          [ADOPTED_ANNOTATION]: JSON.stringify({ at: NOW, state: 'succeeded', lastOperation: 'in_queue' }),
        },
        finalizers: [FINALIZER],
      },
      spec: {},
      status: {
        operation: 'provision',
        namespace: `sf-${INSTANCE_ID}`,
        instanceUsable: null,
        updateRepeatable: null,
      },
    });
  });

  test('GIVEN a failed update with Service Fabrik string flags WHEN decided THEN the operation is update and the flags are booleans', () => {
    const record = instance();
    record.metadata.labels!['interoperator.servicefabrik.io/lastoperation'] = 'update';
    record.status = {
      ...record.status,
      state: 'failed',
      instanceUsable: 'true' as unknown as boolean,
      updateRepeatable: 'false' as unknown as boolean,
    };

    const { changes } = instanceAdoption(record, landscape());

    expect(changes?.status).toEqual({
      operation: 'update',
      namespace: `sf-${INSTANCE_ID}`,
      instanceUsable: true,
      updateRepeatable: false,
    });
  });

  test('GIVEN finalizers of others besides Service Fabrik WHEN decided THEN those stay and Service Fabrik gives way to ours', () => {
    const record = instance();
    record.metadata.finalizers = [
      'broker.servicefabrik.io',
      'example.com/keep',
      'interoperator.servicefabrik.io',
    ];

    expect(instanceAdoption(record, landscape()).changes?.metadata.finalizers).toEqual([
      'example.com/keep',
      FINALIZER,
    ]);
  });

  test('GIVEN a record without spec.instanceId but named by the id WHEN decided THEN the id is the name and is written to the spec', () => {
    const record = instance();
    delete record.spec.instanceId;

    const decision = instanceAdoption(record, landscape());

    expect(decision.item.instanceId).toBe(INSTANCE_ID);
    expect(decision.changes?.spec).toEqual({ instanceId: INSTANCE_ID });
  });

  test.each([
    [
      'an operation still running',
      (r: SFServiceInstance) => (r.status!.state = 'in_queue'),
      'an operation is in progress (state "in_queue"): adopt it once Service Fabrik has finished it',
    ],
    [
      'a deprovision running',
      (r: SFServiceInstance) => (r.status!.state = 'delete'),
      'an operation is in progress (state "delete"): adopt it once Service Fabrik has finished it',
    ],
    [
      'a plan not in the catalog',
      (r: SFServiceInstance) => (r.spec.planId = 'unknown-plan'),
      "its plan unknown-plan is not in this broker's catalog",
    ],
    [
      'a plan of another service here',
      (r: SFServiceInstance) => (r.spec.serviceId = 'other-service'),
      `its plan ${PLAN_ID} is of service ${SERVICE_ID} here, not other-service`,
    ],
    [
      'an unregistered cluster',
      (r: SFServiceInstance) => (r.spec.clusterId = '7'),
      'it is placed on cluster 7, which this landscape does not register',
    ],
    [
      'no placement',
      (r: SFServiceInstance) => delete r.spec.clusterId,
      'it is placed on no cluster (spec.clusterId)',
    ],
    [
      'a deletion requested',
      (r: SFServiceInstance) => (r.metadata.deletionTimestamp = NOW),
      'it is being deleted',
    ],
    [
      'another namespace than ours',
      (r: SFServiceInstance) => (r.metadata.namespace = 'services'),
      `this broker finds instance ${INSTANCE_ID} at sf-${INSTANCE_ID}/${INSTANCE_ID}`,
    ],
    [
      'a digest name and no id',
      (r: SFServiceInstance) => {
        delete r.spec.instanceId;
        r.metadata.name = 'f'.repeat(56);
        r.metadata.name = `${r.metadata.name}.x`;
      },
      'it names no instance id (spec.instanceId) and its name is a digest',
    ],
    [
      'a missing plan id',
      (r: SFServiceInstance) => (r.spec.planId = ''),
      'its spec names no serviceId or planId',
    ],
  ])('GIVEN %s WHEN decided THEN it is not adoptable, and says why', (_what, change, reason) => {
    const record = instance();
    change(record);

    expect(reasonOf(instanceAdoption(record, landscape()))).toBe(reason);
  });

  test('GIVEN a namespace not labelled as an instance namespace WHEN decided THEN it is not adoptable, and says to label it', () => {
    expect(reasonOf(instanceAdoption(instance(), landscape({ namespaceLabelled: () => false })))).toBe(
      `its namespace sf-${INSTANCE_ID} is not labelled interoperator.servicefabrik.io/instance-namespace=true (on every cluster it is on): label it, then adopt`,
    );
  });

  test('GIVEN one shared instance namespace WHEN a record is in it THEN no label is asked for', () => {
    const record = instance();
    record.metadata.namespace = 'services';
    const decision = instanceAdoption(
      record,
      landscape({ instanceNamespace: 'services', namespaceLabelled: () => false }),
    );
    expect(decision.changes?.status.namespace).toBe('services');
  });

  test('GIVEN a landscape with one shared instance namespace WHEN a record is in its own THEN it is not adoptable', () => {
    expect(reasonOf(instanceAdoption(instance(), landscape({ instanceNamespace: 'services' })))).toBe(
      `this broker finds instance ${INSTANCE_ID} at services/${INSTANCE_ID}`,
    );
  });
});

describe('bindingAdoption', () => {
  const adoptedInstance = () => instanceAdoption(instance(), landscape());

  test('GIVEN a bound binding of an adoptable instance with its Secret WHEN decided THEN it is adopted, its Secret kept', () => {
    const decision = bindingAdoption(
      binding(),
      { instance: adoptedInstance(), secretFound: true, clusterId: '1' },
      landscape(),
    );

    expect(decision.item).toEqual({
      kind: 'binding',
      instanceId: INSTANCE_ID,
      bindingId: BINDING_ID,
      namespace: `sf-${INSTANCE_ID}`,
      name: BINDING_ID,
      state: 'succeeded',
    });
    expect(decision.changes).toEqual({
      metadata: {
        labels: {
          [LABELS.instanceId]: INSTANCE_ID,
          [LABELS.bindingId]: BINDING_ID,
          [LABELS.clusterId]: '1',
        },
        annotations: {
          [ANNOTATIONS.requestHash]: `binding-digest:${BINDING_ID}`,
          [ADOPTED_ANNOTATION]: JSON.stringify({ at: NOW, state: 'succeeded', lastOperation: 'in_queue' }),
        },
        finalizers: [FINALIZER],
      },
      spec: {},
      status: { operation: 'bind', response: { secretRef: `sf-${BINDING_ID}` } },
    });
  });

  test('GIVEN a binding whose instance is ours already WHEN decided THEN it is adopted', () => {
    expect(
      bindingAdoption(binding(), { instance: 'ours', secretFound: true }, landscape()).changes,
    ).toBeDefined();
  });

  test("GIVEN a binding without status.response WHEN its Secret is looked for THEN it is Service Fabrik's name for it", () => {
    const record = binding();
    delete record.status!.response;

    expect(bindingSecretOf(record)).toBe(`sf-${BINDING_ID}`);
  });

  test.each([
    [
      'its Secret missing',
      { secretFound: false },
      (_r: SFServiceBinding): void => undefined,
      `the Secret sf-${BINDING_ID} with its credentials is missing`,
    ],
    [
      'an unbind running',
      {},
      (r: SFServiceBinding) => (r.status!.state = 'delete'),
      'an operation is in progress (state "delete"): adopt it once Service Fabrik has finished it',
    ],
    [
      'no instance record',
      { instance: undefined },
      (_r: SFServiceBinding): void => undefined,
      `its instance ${INSTANCE_ID} has no record`,
    ],
    [
      'a plan not in the catalog',
      {},
      (r: SFServiceBinding) => (r.spec.planId = 'unknown-plan'),
      "its plan unknown-plan is not in this broker's catalog",
    ],
  ])('GIVEN %s WHEN decided THEN it is not adoptable, and says why', (_what, around, change, reason) => {
    const record = binding();
    change(record);

    const decision = bindingAdoption(
      record,
      { instance: adoptedInstance(), secretFound: true, ...around },
      landscape(),
    );

    expect(reasonOf(decision)).toBe(reason);
  });

  test('GIVEN an instance that cannot be adopted WHEN its binding is decided THEN the binding cannot either, and says why', () => {
    const record = instance();
    record.spec.clusterId = '7';
    const refusedInstance = instanceAdoption(record, landscape());

    expect(
      reasonOf(bindingAdoption(binding(), { instance: refusedInstance, secretFound: true }, landscape())),
    ).toBe(
      `its instance ${INSTANCE_ID} cannot be adopted: it is placed on cluster 7, which this landscape does not register`,
    );
  });
});

describe('isOurs', () => {
  test('GIVEN a Service Fabrik record THEN it is not ours; with our instance label or the adoption annotation THEN it is', () => {
    const record = instance();
    expect(isOurs(record)).toBe(false);
    record.metadata.labels![LABELS.instanceId] = INSTANCE_ID;
    expect(isOurs(record)).toBe(true);
    const adopted = binding();
    adopted.metadata.annotations = { [ADOPTED_ANNOTATION]: '{}' };
    expect(isOurs(adopted)).toBe(true);
  });
});

describe('flagOf', () => {
  test.each([
    ['true', true],
    ['false', false],
    [true, true],
    [false, false],
    ['', undefined],
    [undefined, undefined],
  ])('GIVEN %p THEN %p', (value, expected) => {
    expect(flagOf(value)).toBe(expected);
  });
});
