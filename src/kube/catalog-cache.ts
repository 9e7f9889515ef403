/**
 * The catalog (SFServices and SFPlans of the broker's namespace) kept in memory by watches, so a
 * change to a plan shows in the next catalog call without a restart. A watch that fails is
 * restarted with backoff; until then the last known catalog is served.
 */
import {
  makeInformer,
  type Informer,
  type KubernetesObject,
  type ObjectCache,
} from '@kubernetes/client-node';
import type { CatalogSource } from '../osb/service-broker.js';
import { SFPLAN, SFSERVICE, type ResourceKind, type SFPlan, type SFService } from '../resources/types.js';
import type { ClusterClient } from './clients.js';

export interface CatalogCache extends CatalogSource {
  /** The plan with this OSB id. */
  plan(planId: string): SFPlan | undefined;
  /** The service with this OSB id. */
  service(serviceId: string): SFService | undefined;
  stop(): Promise<void>;
}

type Watched<T extends KubernetesObject> = Informer<T> & ObjectCache<T>;

async function watch<T extends KubernetesObject>(
  master: ClusterClient,
  kind: ResourceKind,
  namespace: string,
  onError: (err: unknown) => void,
): Promise<{ cache: Watched<T>; stop(): Promise<void> }> {
  const path = `/apis/${kind.group}/${kind.version}/namespaces/${namespace}/${kind.plural}`;
  const informer = makeInformer<T>(
    master.kubeConfig,
    path,
    async () =>
      (await master.custom.listNamespacedCustomObject({
        group: kind.group,
        version: kind.version,
        namespace,
        plural: kind.plural,
      })) as never,
  );
  let stopped = false;
  let delay = 500;
  let timer: NodeJS.Timeout | undefined;
  informer.on('connect', () => {
    delay = 500;
  });
  informer.on('error', (err) => {
    if (stopped) return;
    onError(err);
    timer = setTimeout(() => {
      if (!stopped) informer.start().catch(onError);
    }, delay);
    delay = Math.min(delay * 2, 30_000);
  });
  await informer.start();
  return {
    cache: informer,
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await informer.stop();
    },
  };
}

/**
 * Starts watching the catalog; resolves once the first list is in. `onPlan` hears of every plan
 * as it is listed, added or changed.
 */
export async function startCatalogCache(
  master: ClusterClient,
  namespace: string,
  onError: (err: unknown) => void = () => undefined,
  onPlan?: (plan: SFPlan) => void,
): Promise<CatalogCache> {
  const [services, plans] = await Promise.all([
    watch<KubernetesObject>(master, SFSERVICE, namespace, onError),
    watch<KubernetesObject>(master, SFPLAN, namespace, onError),
  ]);
  if (onPlan) {
    const heard = (obj: KubernetesObject) => onPlan(obj as unknown as SFPlan);
    plans.cache.on('add', heard);
    plans.cache.on('update', heard);
    for (const plan of plans.cache.list(namespace)) heard(plan);
  }
  // The informers hold the objects as the apiserver sent them (JSON), which is what our types describe.
  const serviceList = () => services.cache.list(namespace) as unknown as readonly SFService[];
  const planList = () => plans.cache.list(namespace) as unknown as readonly SFPlan[];
  return {
    services: serviceList,
    plans: planList,
    plan: (planId) => planList().find((p) => p.spec.id === planId),
    service: (serviceId) => serviceList().find((s) => s.spec.id === serviceId),
    stop: async () => {
      await Promise.all([services.stop(), plans.stop()]);
    },
  };
}
