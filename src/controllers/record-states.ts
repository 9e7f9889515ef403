/**
 * The state of every instance and binding record, one series each in each pair, as Service
 * Fabrik's interoperator exports them: the plain pair (`interoperator_service_instances_state`,
 * `interoperator_service_bindings_state`) and the detailed one
 * (`interoperator_service_instances_metrics_state`, `interoperator_service_bindings_metrics_state`,
 * labelled as record-state-labels.ts says), so that its dashboards and alerts keep working on a
 * landscape that switched. Off by default: a series per record is what our own metrics avoid.
 *
 * It reads the records a page at a time once, then follows them by a watch of each kind
 * (kind-watch.ts, which neither lists nor keeps the objects): each change is read again by name,
 * so what is reported is the record as it is, never an older event's copy. It keeps a number per
 * record and the few strings its labels need, not the record. A record that goes is reported as
 * gone (4) for {@link GONE_TTL_MS}, then forgotten. Only the records of this installation count
 * (the owner label).
 *
 * A controller, not an activity: it runs beside the activities in the worker.
 */
import type { ClusterClient } from '../kube/clients.js';
import { forEachRecord, getRecord } from '../kube/custom-objects.js';
import { watchKind, type ObjectKey } from '../kube/kind-watch.js';
import type { BindingStateLabels, InstanceStateLabels, RecordStateRecorder } from '../metrics/recorders.js';
import { isOwnedBy } from '../resources/record-labels.js';
import {
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type ResourceKind,
  type SFServiceBinding,
  type SFServiceInstance,
} from '../resources/types.js';
import { bindingStateLabels, instanceStateLabels } from './record-state-labels.js';

/** How long a record that went is still reported as gone. */
export const GONE_TTL_MS = 60 * 60_000;

/** Service Fabrik's number for a record that is gone. */
export const GONE = 4;

/**
 * Service Fabrik's number for a record's `status.state`: 0 succeeded, 1 failed, 2 in progress,
 * 3 waiting for its operator (`in_queue`, `update`, `delete`); undefined for a state it has no
 * number for (a record not yet picked up has none).
 */
export function serviceFabrikStateCode(state: string | undefined): number | undefined {
  switch (state) {
    case 'succeeded':
      return 0;
    case 'failed':
      return 1;
    case 'in progress':
      return 2;
    case 'in_queue':
    case 'update':
    case 'delete':
      return 3;
    default:
      return undefined;
  }
}

/** What is reported of one record: its ids, its state's number and its detailed series' labels. */
type Reported = (
  | { readonly kind: 'instance'; readonly labels?: InstanceStateLabels }
  | { readonly kind: 'binding'; readonly bindingId: string; readonly labels?: BindingStateLabels }
) & {
  readonly instanceId: string;
  readonly code: number;
  /** When a gone record is forgotten. */
  readonly forgetAt?: number;
};

export interface RecordStates {
  /** Resolves once every record has been read once. */
  readonly ready: Promise<void>;
  /** How many records are reported. */
  size(): number;
  stop(): void;
}

export interface RecordStateOptions {
  readonly master: ClusterClient;
  readonly recorder: RecordStateRecorder;
  /** The one namespace of all instances; all namespaces when unset. */
  readonly instanceNamespace?: string;
  readonly onError?: (err: unknown, what: string) => void;
  /** @default GONE_TTL_MS */
  readonly goneTtlMs?: number;
  /** The watch of one kind; kind-watch.ts's by default. */
  readonly watch?: typeof watchKind;
}

const keyOf = (kind: ResourceKind, object: ObjectKey) =>
  `${kind.kind}|${object.namespace ?? ''}|${object.name}`;

export function recordStates(options: RecordStateOptions): RecordStates {
  const { master, recorder, onError = () => undefined, watch = watchKind } = options;
  const goneTtlMs = options.goneTtlMs ?? GONE_TTL_MS;
  const namespace = options.instanceNamespace;
  const reported = new Map<string, Reported>();
  /** Keys read again now; a key changed meanwhile is read once more after. */
  const reading = new Map<string, boolean>();
  /** Keys a watch has reported: the first listing leaves them as the watch read them. */
  const heard = new Set<string>();
  let listing = true;

  const report = (key: string, next: Reported | undefined) => {
    const previous = reported.get(key);
    if (previous) {
      if (previous.kind === 'instance') recorder.instanceState(previous.instanceId, undefined);
      else recorder.bindingState(previous.bindingId, previous.instanceId, undefined);
    }
    if (!next) {
      reported.delete(key);
      return;
    }
    reported.set(key, next);
    if (next.kind === 'instance') recorder.instanceState(next.instanceId, next.code, next.labels);
    else recorder.bindingState(next.bindingId, next.instanceId, next.code, next.labels);
  };

  const reportedOf = (
    kind: ResourceKind,
    record: SFServiceInstance | SFServiceBinding,
  ): Reported | undefined => {
    if (!isOwnedBy(record.metadata.labels, master.owner)) return undefined;
    const code = serviceFabrikStateCode(record.status?.state);
    if (code === undefined) return undefined;
    if (kind === SFSERVICEINSTANCE) {
      const instance = record as SFServiceInstance;
      return {
        kind: 'instance',
        instanceId: instance.spec.instanceId ?? instance.metadata.name,
        code,
        labels: instanceStateLabels(instance),
      };
    }
    const binding = record as SFServiceBinding;
    return {
      kind: 'binding',
      instanceId: binding.spec.instanceId,
      bindingId: binding.spec.id,
      code,
      labels: bindingStateLabels(binding),
    };
  };

  const gone = (key: string) => {
    const previous = reported.get(key);
    if (!previous || previous.forgetAt) return;
    // A gone record's detailed series has its id alone, as Service Fabrik's.
    const { labels: _, ...ids } = previous;
    report(key, { ...ids, code: GONE, forgetAt: Date.now() + goneTtlMs });
  };

  async function readAgain(kind: ResourceKind, object: ObjectKey): Promise<void> {
    const key = keyOf(kind, object);
    if (reading.has(key)) {
      reading.set(key, true);
      return;
    }
    reading.set(key, false);
    try {
      do {
        reading.set(key, false);
        const record = object.namespace
          ? await getRecord<SFServiceInstance | SFServiceBinding>(master, kind, object.namespace, object.name)
          : undefined;
        if (!record) gone(key);
        else report(key, reportedOf(kind, record));
      } while (reading.get(key));
    } catch (err) {
      onError(err, `reading ${kind.kind} ${object.namespace ?? ''}/${object.name}`);
    } finally {
      reading.delete(key);
    }
  }

  const watches = [SFSERVICEINSTANCE, SFSERVICEBINDING].map((kind) =>
    watch(
      master,
      kind.apiVersion,
      kind.kind,
      namespace,
      (object) => {
        if (listing) heard.add(keyOf(kind, object));
        void readAgain(kind, object);
      },
      (err) => onError(err, `watching ${kind.kind}`),
    ),
  );

  const ready = (async () => {
    await Promise.all(watches.map((w) => w.opened));
    for (const kind of [SFSERVICEINSTANCE, SFSERVICEBINDING]) {
      await forEachRecord<SFServiceInstance | SFServiceBinding>(master, kind, namespace, '', (record) => {
        const key = keyOf(kind, { namespace: record.metadata.namespace!, name: record.metadata.name });
        if (!heard.has(key)) report(key, reportedOf(kind, record));
      });
    }
    listing = false;
    heard.clear();
  })().catch((err: unknown) => onError(err, 'reading the records'));

  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const [key, { forgetAt }] of reported)
        if (forgetAt !== undefined && forgetAt < now) report(key, undefined);
    },
    Math.min(60_000, goneTtlMs),
  );
  sweep.unref();

  return {
    ready,
    size: () => reported.size,
    stop() {
      clearInterval(sweep);
      for (const w of watches) w.stop();
    },
  };
}
