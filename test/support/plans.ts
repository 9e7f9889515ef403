/**
 * Plans of a landscape of its own (a registry namespace) as the plan-change tests use them:
 * copies of the design document's plan, instances of them provisioned through the OSB API, spec
 * changes, and what the operator's resource says of `context.maxConnections`.
 */
import { randomUUID } from 'node:crypto';
import { installCatalog } from '../../dev/catalog.js';
import type { ClusterClient } from '../../src/kube/clients.js';
import { getRecord, patchRecord } from '../../src/kube/custom-objects.js';
import { applyObject, ensureNamespace, readObject } from '../../src/kube/objects.js';
import { planRevision, resourceName } from '../../src/resources/names.js';
import {
  SFPLAN,
  SFSERVICEINSTANCE,
  type KubeObject,
  type SFPlan,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import { eventually } from './env.js';
import { provisionBody, untilSettled, type OsbClient } from './osb.js';

/** The service of the design document's plan. */
export const DESIGN_SERVICE_ID = '24731fb8-7b84-5f57-914f-c3d55d793dd4';

/** Makes the registry namespace and installs the example catalog there; resolves with the design document's plan. */
export async function installDesignPlan(master: ClusterClient, registry: string): Promise<SFPlan> {
  await ensureNamespace(master, registry);
  const installed = await installCatalog(master, registry, ['examples/postgresql']);
  return installed.find((o) => o.kind === 'SFPlan') as SFPlan;
}

/** Applies a copy of the design document's plan with the id `planId`, named `name`, with `fields` over its spec. */
export function applyPlanCopy(
  master: ClusterClient,
  registry: string,
  design: SFPlan,
  planId: string,
  name: string,
  fields: Partial<SFPlan['spec']> = {},
): Promise<KubeObject> {
  return applyObject(master, {
    apiVersion: design.apiVersion,
    kind: design.kind,
    metadata: { name: planId, namespace: registry },
    spec: { ...design.spec, id: planId, name, ...fields },
  } as KubeObject);
}

/** What the helpers work on; read when called, so a test may set them in its `beforeAll`. */
export interface PlanLandscape {
  readonly master: ClusterClient;
  readonly registry: string;
  readonly osb: () => OsbClient;
  /** The design document's plan, as installed. */
  readonly design: () => SFPlan;
}

export function planHelpers({ master, registry, osb, design }: PlanLandscape) {
  const readPlan = (planId: string) => getRecord<SFPlan>(master, SFPLAN, registry, planId);

  return {
    readPlan,

    /** A copy of the design document's plan, named `name`, with `fields` over its spec; once it has a revision and is in the catalog. */
    async planCopy(name: string, fields: Partial<SFPlan['spec']> = {}): Promise<string> {
      const planId = randomUUID();
      const { apiVersion, kind, spec } = design();
      await applyObject(master, {
        apiVersion,
        kind,
        metadata: { name: planId, namespace: registry },
        spec: { ...spec, id: planId, name, ...fields },
      } as KubeObject);
      // The workers record its first revision (which starts no rollout).
      await eventually('the plan’s first revision', async () => (await readPlan(planId))?.status?.specHash);
      await eventually('the plan in the catalog', async () => {
        const services = (await osb()('GET', '/v2/catalog')).body.services as { plans: { id: string }[] }[];
        return services?.some((s) => s.plans.some((p) => p.id === planId)) ? true : undefined;
      });
      return planId;
    },

    /** Provisions `count` instances of the plan at once; resolves with their ids once all succeeded. */
    provisionMany(planId: string, count: number): Promise<string[]> {
      return Promise.all(
        Array.from({ length: count }, async () => {
          const instanceId = randomUUID();
          const path = `/v2/service_instances/${instanceId}`;
          const accepted = await osb()(
            'PUT',
            `${path}?accepts_incomplete=true`,
            provisionBody(DESIGN_SERVICE_ID, planId, { foo: 'bar' }),
          );
          expect(accepted.status).toBe(202);
          const done = await untilSettled(
            osb(),
            `${path}/last_operation?operation=${encodeURIComponent(String(accepted.body.operation))}`,
            120_000,
          );
          expect(done.body.state).toBe('succeeded');
          return instanceId;
        }),
      );
    },

    /** Changes the plan's spec by a merge patch; returns the new revision. */
    async changePlan(planId: string, change: Partial<SFPlan['spec']>): Promise<string> {
      await patchRecord(master, SFPLAN, registry, planId, { spec: change });
      const plan = (await readPlan(planId))!;
      return planRevision(plan.spec);
    },

    recordOf: (instanceId: string) =>
      getRecord<SFServiceInstance>(master, SFSERVICEINSTANCE, `sf-${instanceId}`, resourceName(instanceId)),

    /** The operator's resource of the instance (the design plan's `postgresql`), as its cluster (by default the master) holds it. */
    postgresqlOf: async (instanceId: string, cluster: ClusterClient = master) =>
      (await readObject(cluster, {
        apiVersion: 'acid.zalan.do/v1',
        kind: 'postgresql',
        name: `sapcp-${instanceId}`,
        namespace: `sf-${instanceId}`,
      })) as KubeObject & { spec: { postgresql: { parameters: { max_connections: string } } } },
  };
}
