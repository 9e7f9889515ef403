/** Kubernetes Events about an object, so that `kubectl get events` and `kubectl describe` show them. */
import type { KubeObject } from '../resources/types.js';
import type { ClusterClient } from './clients.js';

/** What an Event says about its object. */
export interface EventNote {
  /** One CamelCase word, for machines. */
  readonly reason: string;
  /** A sentence, for people. */
  readonly message: string;
  readonly type: 'Normal' | 'Warning';
  /** Who reports it. */
  readonly component: string;
}

/** Records an Event about `object` in its namespace. */
export async function recordEvent(
  cluster: ClusterClient,
  object: KubeObject,
  note: EventNote,
): Promise<void> {
  const namespace = object.metadata.namespace ?? 'default';
  const now = new Date();
  await cluster.core.createNamespacedEvent({
    namespace,
    body: {
      metadata: { generateName: `${object.metadata.name}.`, namespace },
      involvedObject: {
        apiVersion: object.apiVersion,
        kind: object.kind,
        name: object.metadata.name,
        namespace,
        ...(object.metadata.uid ? { uid: object.metadata.uid } : {}),
        ...(object.metadata.resourceVersion ? { resourceVersion: object.metadata.resourceVersion } : {}),
      },
      reason: note.reason,
      message: note.message,
      type: note.type,
      source: { component: note.component },
      reportingComponent: note.component,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    },
  });
}
