/**
 * The example operator's objects in each of its states, as a plan's `sources` see them: what the
 * twins of the design document's plan (mustache, jsonnet) are held to, state by state.
 */
import type { SFPlan, SFService } from '../../src/resources/types.js';
import { findTemplate, renderValues, type RenderData } from '../../src/templates/index.js';

/** What a PostgreSQL plan's status template says, for each action. */
export interface ExampleStatus {
  provision: { state: string; description: string };
  bind: { state: string; error: string; response: string };
  unbind: { state: string; error: string };
  deprovision: { state: string; error: string };
}

/** Expects a twin's status to say what the design document's plan says in the same state. */
export function expectSameStatus(ours: ExampleStatus, theirs: ExampleStatus): void {
  expect(Object.keys(ours).sort()).toEqual(['bind', 'deprovision', 'provision', 'unbind']);
  expect({
    provision: ours.provision.state,
    description: ours.provision.description,
    bind: ours.bind.state,
    unbind: ours.unbind.state,
    deprovision: ours.deprovision.state,
  }).toEqual({
    provision: theirs.provision.state,
    description: String(theirs.provision.description ?? ''),
    bind: theirs.bind.state,
    unbind: theirs.unbind.state,
    deprovision: theirs.deprovision.state,
  });
  expect([ours.bind.error, ours.unbind.error, ours.deprovision.error]).toEqual(['', '', '']);
}

export const EXAMPLE_INSTANCE_ID = '6f1c2a9e-4d3b-4a51-9a8e-0c2b7d4e5f60';
export const EXAMPLE_BINDING_ID = 'c0ffee00-1234-4abc-8def-001122334455';

/** The records of one instance of `plan` and one binding of it, and the operator's objects and states. */
export function exampleStates(plan: SFPlan, service: SFService) {
  const instanceId = EXAMPLE_INSTANCE_ID;
  const bindingId = EXAMPLE_BINDING_ID;
  const instance = {
    apiVersion: 'osb.servicefabrik.io/v1alpha1',
    kind: 'SFServiceInstance',
    metadata: { name: instanceId, namespace: `sf-${instanceId}` },
    spec: { serviceId: service.spec.id, planId: plan.spec.id, parameters: {} },
  };
  const binding = {
    apiVersion: 'osb.servicefabrik.io/v1alpha1',
    kind: 'SFServiceBinding',
    metadata: { name: bindingId, namespace: `sf-${instanceId}` },
    spec: { id: bindingId, instanceId },
  };
  /** The example operator's objects, named after a plan's prefix. */
  const objects = (prefix: string) => ({
    postgresql: (status?: Record<string, unknown>, meta: Record<string, unknown> = {}) => ({
      apiVersion: 'acid.zalan.do/v1',
      kind: 'postgresql',
      metadata: { name: `${prefix}-${instanceId}`, namespace: `sf-${instanceId}`, generation: 1, ...meta },
      spec: { teamId: prefix, users: { main: ['superuser', 'createdb'] } },
      ...(status ? { status } : {}),
    }),
    svc: {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: `${prefix}-${instanceId}`, namespace: `sf-${instanceId}` },
      spec: { clusterIP: '10.0.0.42', ports: [{ name: 'postgresql', port: 5432, targetPort: 5432 }] },
    },
    secret: {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `${bindingId}.${prefix}-${instanceId}.credentials.postgresql.acid.zalan.do` },
      data: {
        username: Buffer.from(bindingId.replace(/-/g, '_')).toString('base64'),
        password: Buffer.from('Zm9vYmFyYmF6cXV4cXV1eA').toString('base64'),
      },
    },
  });

  /** The example operator's states, as the sources of each plan see them. */
  const states = (prefix: string): [string, RenderData][] => {
    const { postgresql, svc, secret } = objects(prefix);
    const running = postgresql({ PostgresClusterStatus: 'Running' });
    return [
      ['nothing yet (or gone)', {}],
      ['created, no status yet', { postgresql: postgresql() }],
      ['Creating', { postgresql: postgresql({ PostgresClusterStatus: 'Creating' }) }],
      ['Running', { postgresql: running, svc }],
      [
        'CreateFailed',
        { postgresql: postgresql({ PostgresClusterStatus: 'CreateFailed', reason: 'no space left' }) },
      ],
      [
        'UpdateFailed',
        { postgresql: postgresql({ PostgresClusterStatus: 'UpdateFailed', reason: 'bad size' }), svc },
      ],
      [
        'being deleted',
        {
          postgresql: postgresql(
            { PostgresClusterStatus: 'Running' },
            { deletionTimestamp: '2026-11-23T00:00:00Z' },
          ),
          svc,
        },
      ],
      ['bound: the user’s Secret exists', { binding, postgresql: running, svc, secret }],
      ['binding: no Secret yet', { binding, postgresql: running, svc }],
    ];
  };
  /** What plan `p`'s status template says with these sources (and the binding). */
  const statusOf = async (p: SFPlan, sources: RenderData) =>
    (await renderValues(findTemplate(p, 'status')!, 'status', {
      instance,
      service,
      plan: p,
      binding,
      ...sources,
    })) as ExampleStatus;
  return { instanceId, bindingId, instance, binding, objects, states, statusOf };
}
