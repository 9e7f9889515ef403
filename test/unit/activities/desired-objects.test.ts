/** What an operation applies, prunes and deletes, decided from what it read. Pure and table-driven. */
import {
  desiredObject,
  namespaceReach,
  namespaceRefusal,
  instanceResourcesOf,
  ownResourcesOf,
  afterPruning,
  recordedResources,
  unbindOwnResources,
  responseSecret,
  sameResource,
  staleResources,
  type ApplyingFor,
  type DesiredObject,
} from '../../../src/activities/desired-objects.js';
import { bindingFieldManager, FIELD_MANAGER } from '../../../src/resources/names.js';
import type { AppliedResource, KubeObject, SFServiceBinding } from '../../../src/resources/types.js';

const INSTANCE_LABEL = 'interoperator.servicefabrik.io/instance-id';
const BINDING_LABEL = 'interoperator.servicefabrik.io/binding-id';

const instanceRecord: KubeObject = {
  apiVersion: 'osb.servicefabrik.io/v1alpha1',
  kind: 'SFServiceInstance',
  metadata: { name: 'i-1', namespace: 'sf-i-1', uid: 'uid-i' },
};
const bindingRecord: KubeObject = {
  apiVersion: 'osb.servicefabrik.io/v1alpha1',
  kind: 'SFServiceBinding',
  metadata: { name: 'b-1', namespace: 'sf-i-1', uid: 'uid-b' },
};
const ownedByInstance = {
  apiVersion: 'osb.servicefabrik.io/v1alpha1',
  kind: 'SFServiceInstance',
  name: 'i-1',
  uid: 'uid-i',
};
const ownedByBinding = { ...ownedByInstance, kind: 'SFServiceBinding', name: 'b-1', uid: 'uid-b' };

const postgres = (metadata: Partial<KubeObject['metadata']> = {}): KubeObject => ({
  apiVersion: 'acid.zalan.do/v1',
  kind: 'Postgresql',
  metadata: { name: 'db', ...metadata },
  spec: { teamId: 'acid' },
});
const postgresRef: AppliedResource = {
  apiVersion: 'acid.zalan.do/v1',
  kind: 'Postgresql',
  name: 'db',
  namespace: 'sf-i-1',
};

const forInstance: ApplyingFor = {
  namespace: 'sf-i-1',
  clusterId: '1',
  masterId: '1',
  instanceId: 'i-1',
  record: instanceRecord,
};
const forBinding = (instanceResources: AppliedResource[]): ApplyingFor => ({
  ...forInstance,
  record: bindingRecord,
  binding: { bindingId: 'b-1', instanceResources },
});

describe('the object applied for one a template rendered', () => {
  test.each<[string, KubeObject, ApplyingFor, DesiredObject]>([
    [
      'an instance object without a namespace goes to the instance namespace, labelled and owned by the instance',
      postgres(),
      forInstance,
      {
        object: {
          ...postgres(),
          metadata: {
            name: 'db',
            namespace: 'sf-i-1',
            labels: { [INSTANCE_LABEL]: 'i-1' },
            ownerReferences: [ownedByInstance],
          },
        },
        ref: postgresRef,
      },
    ],
    [
      'the labels and owners the template set are kept, and a stale reference to the record is replaced',
      postgres({
        labels: { team: 'acid' },
        ownerReferences: [
          { apiVersion: 'v1', kind: 'ConfigMap', name: 'cm', uid: 'uid-cm' },
          { ...ownedByInstance, controller: true },
        ],
      }),
      forInstance,
      {
        object: {
          ...postgres(),
          metadata: {
            name: 'db',
            namespace: 'sf-i-1',
            labels: { team: 'acid', [INSTANCE_LABEL]: 'i-1' },
            ownerReferences: [
              { apiVersion: 'v1', kind: 'ConfigMap', name: 'cm', uid: 'uid-cm' },
              ownedByInstance,
            ],
          },
        },
        ref: postgresRef,
      },
    ],
    [
      'an object in another namespace is not owned (owner references hold within one namespace)',
      postgres({ namespace: 'shared' }),
      forInstance,
      {
        object: {
          ...postgres(),
          metadata: { name: 'db', namespace: 'shared', labels: { [INSTANCE_LABEL]: 'i-1' } },
        },
        ref: { ...postgresRef, namespace: 'shared' },
      },
    ],
    [
      'an object on a cluster other than the master is not owned (the record is in the master)',
      postgres(),
      { ...forInstance, clusterId: 'sister-1' },
      {
        object: {
          ...postgres(),
          metadata: { name: 'db', namespace: 'sf-i-1', labels: { [INSTANCE_LABEL]: 'i-1' } },
        },
        ref: postgresRef,
      },
    ],
    [
      'an object on a sister is owned by the record’s copy there',
      postgres(),
      {
        ...forInstance,
        clusterId: 'sister-1',
        copy: { ...instanceRecord, metadata: { ...instanceRecord.metadata, uid: 'uid-copy' } },
      },
      {
        object: {
          ...postgres(),
          metadata: {
            name: 'db',
            namespace: 'sf-i-1',
            labels: { [INSTANCE_LABEL]: 'i-1' },
            ownerReferences: [{ ...ownedByInstance, uid: 'uid-copy' }],
          },
        },
        ref: postgresRef,
      },
    ],
    [
      'an OSB id that is no label value is labelled with its digest',
      postgres(),
      { ...forInstance, instanceId: 'I/1' },
      {
        object: {
          ...postgres(),
          metadata: {
            name: 'db',
            namespace: 'sf-i-1',
            labels: { [INSTANCE_LABEL]: 'c6475a8cf6409a3c589b5eb873509381511111a772beb6e7fb47b294' },
            ownerReferences: [ownedByInstance],
          },
        },
        ref: postgresRef,
      },
    ],
    [
      'a binding’s own object carries the binding label and is owned by the binding',
      postgres({ name: 'user' }),
      forBinding([postgresRef]),
      {
        object: {
          ...postgres(),
          metadata: {
            name: 'user',
            namespace: 'sf-i-1',
            labels: { [INSTANCE_LABEL]: 'i-1', [BINDING_LABEL]: 'b-1' },
            ownerReferences: [ownedByBinding],
          },
        },
        ref: { ...postgresRef, name: 'user' },
      },
    ],
    [
      'an object of the instance that a binding changes stays the instance’s: no binding label, no owner',
      postgres(),
      forBinding([postgresRef]),
      {
        object: {
          ...postgres(),
          metadata: { name: 'db', namespace: 'sf-i-1', labels: { [INSTANCE_LABEL]: 'i-1' } },
        },
        ref: postgresRef,
      },
    ],
  ])('%s', (_name, rendered, applying, expected) => {
    expect(desiredObject(rendered, applying)).toEqual(expected);
  });
});

describe('the field managers', () => {
  test('GIVEN an instance or a binding WHEN they apply THEN each writes as its own field manager', () => {
    expect(FIELD_MANAGER).toBe('interoperator');
    expect(bindingFieldManager('b-1')).toBe('interoperator/binding/b-1');
  });
});

const ref = (name: string, namespace?: string): AppliedResource => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  name,
  ...(namespace ? { namespace } : {}),
});

describe('the objects recorded, pruned and deleted', () => {
  test.each<[string, AppliedResource, AppliedResource, boolean]>([
    ['the same identity', ref('a', 'n'), ref('a', 'n'), true],
    ['no namespace and an empty one', ref('a'), { ...ref('a'), namespace: '' }, true],
    ['another name', ref('a', 'n'), ref('b', 'n'), false],
    ['another namespace', ref('a', 'n'), ref('a', 'm'), false],
    ['another kind', ref('a', 'n'), { ...ref('a', 'n'), kind: 'Secret' }, false],
    ['another apiVersion', ref('a', 'n'), { ...ref('a', 'n'), apiVersion: 'v2' }, false],
  ])('%s: same resource is %s', (_name, a, b, same) => {
    expect(sameResource(a, b)).toBe(same);
  });

  test.each<[string, AppliedResource[], AppliedResource[], AppliedResource[]]>([
    ['nothing applied before', [], [ref('a', 'n')], []],
    ['the template renders the same', [ref('a', 'n')], [ref('a', 'n')], []],
    ['the template no longer renders one', [ref('a', 'n'), ref('b', 'n')], [ref('a', 'n')], [ref('b', 'n')]],
    ['the template renders nothing', [ref('a', 'n')], [], [ref('a', 'n')]],
  ])('GIVEN %s WHEN an instance applies THEN these are stale', (_name, previous, applied, stale) => {
    expect(staleResources(previous, applied)).toEqual(stale);
  });

  test.each<[string, AppliedResource[], AppliedResource[], boolean, AppliedResource[]]>([
    [
      'an instance lists what it applied now, then what it no longer renders (pruned only once an update succeeded)',
      [ref('a'), ref('b')],
      [ref('c'), ref('a')],
      false,
      [ref('c'), ref('a'), ref('b')],
    ],
    [
      'a binding lists what it applied before and now, without repeats',
      [ref('a'), ref('b')],
      [ref('c'), ref('a')],
      true,
      [ref('b'), ref('c'), ref('a')],
    ],
    ['a binding that applied nothing keeps its list', [ref('a')], [], true, [ref('a')]],
  ])('%s', (_name, previous, applied, forBinding, recorded) => {
    expect(recordedResources(previous, applied, forBinding)).toEqual(recorded);
  });

  test.each<[string, AppliedResource[], AppliedResource[], AppliedResource[]]>([
    ['nothing stale', [ref('a'), ref('b')], [], [ref('a'), ref('b')]],
    ['the stale ones pruned', [ref('c'), ref('a'), ref('b')], [ref('b')], [ref('c'), ref('a')]],
    ['a stale one listed no more', [ref('a')], [ref('b')], [ref('a')]],
  ])('GIVEN %s WHEN an update prunes THEN the instance lists the rest', (_name, listed, pruned, rest) => {
    expect(afterPruning(listed, pruned)).toEqual(rest);
  });

  test.each<[string, AppliedResource[], AppliedResource[], AppliedResource[], AppliedResource[]]>([
    ['a binding of its own objects only', [ref('u')], [ref('db')], [], [ref('u')]],
    [
      'a binding that changed the instance’s object',
      [ref('db'), ref('u')],
      [ref('db')],
      [ref('db')],
      [ref('u')],
    ],
    ['a binding that applied nothing', [], [ref('db')], [], []],
  ])(
    'GIVEN %s WHEN it unbinds THEN it releases its fields in the instance’s and deletes its own',
    (_name, binding, instance, shared, own) => {
      expect(instanceResourcesOf(binding, instance)).toEqual(shared);
      expect(ownResourcesOf(binding, instance)).toEqual(own);
    },
  );
});

describe('the objects of an unbind', () => {
  test.each<[string, AppliedResource[], AppliedResource[], AppliedResource[], AppliedResource[]]>([
    ['a Job of its own', [ref('job')], [ref('secret')], [ref('db')], [ref('job')]],
    ['only the instance’s object changed back', [ref('db')], [ref('secret')], [ref('db')], []],
    ['the bind’s own object applied again', [ref('secret'), ref('job')], [ref('secret')], [], [ref('job')]],
    ['nothing applied', [], [ref('secret')], [ref('db')], []],
  ])(
    'GIVEN an unbind that applied %s THEN its own objects are those neither the bind nor the instance made',
    (_name, applied, binding, instance, own) => {
      expect(unbindOwnResources(applied, binding, instance)).toEqual(own);
    },
  );
});

describe('the Secret of a binding’s response', () => {
  test('GIVEN a bind response WHEN it is kept THEN it is a Secret owned by the binding, the JSON in base64', () => {
    const binding = {
      ...bindingRecord,
      spec: { id: 'b-1', instanceId: 'i-1', serviceId: 's', planId: 'p' },
    } as SFServiceBinding;
    expect(responseSecret(binding, 'sf-binding-b-1', '{"credentials":{"user":"u"}}')).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: {
        name: 'sf-binding-b-1',
        namespace: 'sf-i-1',
        labels: { [BINDING_LABEL]: 'b-1' },
        ownerReferences: [ownedByBinding],
      },
      data: { response: Buffer.from('{"credentials":{"user":"u"}}').toString('base64') },
    });
  });
});

describe('the namespaces an instance’s templates may name', () => {
  const reach = (allowedNamespaces?: string[], own = 'sf-i-1') =>
    namespaceReach(own, 'interoperator', {
      metadata: { name: 'postgresql' },
      spec: {
        id: 'svc-1',
        name: 'pg',
        description: '',
        bindable: true,
        ...(allowedNamespaces ? { allowedNamespaces } : {}),
      },
    });
  const UNLISTED = (ns: string) =>
    `namespace ${ns}, which is not the instance's own: a service's owner allows a namespace by listing it in spec.allowedNamespaces of SFService postgresql`;
  const REGISTRY = "the registry's namespace interoperator, which no template may reach, listed or not";
  const OTHER = (ns: string) =>
    `${ns}, the namespace of another instance, which no template may reach, listed or not`;

  test.each<[string, string, string[] | undefined, string | undefined]>([
    ['its own', 'sf-i-1', undefined, undefined],
    ['its own, whatever the list', 'sf-i-1', ['shared'], undefined],
    ['one the service does not list (no list)', 'kube-system', undefined, UNLISTED('kube-system')],
    ['one the service does not list', 'kube-system', ['shared'], UNLISTED('kube-system')],
    ['one the service lists', 'shared', ['shared', 'monitoring'], undefined],
    ['a name that only starts like a listed one', 'shared-2', ['shared'], UNLISTED('shared-2')],
    ['another instance’s', 'sf-i-2', undefined, OTHER('sf-i-2')],
    ['another instance’s, listed', 'sf-i-2', ['sf-i-2'], OTHER('sf-i-2')],
    ['another instance’s, by a hashed name', 'sf-0f3a', undefined, OTHER('sf-0f3a')],
    ['the registry’s (the clusters’ credentials)', 'interoperator', undefined, REGISTRY],
    ['the registry’s, listed', 'interoperator', ['interoperator'], REGISTRY],
  ])('%s', (_name, namespace, allowed, refusal) => {
    expect(namespaceRefusal(namespace, reach(allowed))).toBe(refusal);
  });

  test('GIVEN all instances in one namespace THEN that one is every instance’s own', () => {
    expect(namespaceRefusal('sf-shared', reach(undefined, 'sf-shared'))).toBeUndefined();
    expect(namespaceRefusal('instances', reach(undefined, 'instances'))).toBeUndefined();
  });

  test('GIVEN a service without a list THEN its reach carries none', () => {
    expect(reach()).toEqual({ own: 'sf-i-1', registry: 'interoperator', service: { name: 'postgresql' } });
  });
});
