/**
 * The writes to the master a step on a cluster with a worker of its own asks for, and which of
 * them the landscape makes: only of the records of the step's own instance or binding, only the
 * fields such a step writes, and each kind only from the step that makes it. A worker on a sister
 * thus cannot have the landscape write anything else on the master.
 */
import { LABELS, bindingSecretName, handedOverPrefix } from './names.js';

/** A write to the master that a step on a cluster with a worker of its own asks for. */
export type MasterWrite =
  | {
      readonly kind: 'status';
      readonly record: 'instance' | 'binding';
      readonly namespace: string;
      readonly name: string;
      readonly status: Readonly<Record<string, unknown>>;
      /** Written only while the record is as read. */
      readonly resourceVersion?: string;
    }
  | {
      readonly kind: 'labels';
      readonly namespace: string;
      readonly name: string;
      readonly labels: Readonly<Record<string, string>>;
    }
  /** The bind's response is in the cluster's drop box on the master, in the Secret of this name. */
  | { readonly kind: 'response'; readonly secretName: string }
  /** The copies on the cluster are gone: the instance's records on the master go. */
  | { readonly kind: 'removeInstanceRecord' }
  /** The binding's copy on the cluster is gone: its record on the master goes. */
  | { readonly kind: 'removeBindingRecord' }
  /**
   * The instance is off the step's cluster: its reservation on that cluster goes, and its record's
   * leaving label when it names that cluster. Names no cluster: the landscape uses the step's.
   */
  | { readonly kind: 'leftCluster' }
  /**
   * A generated Secret of the instance that a move hands over is in the cluster's drop box on the
   * master, in the Secret of this name: the landscape moves it on to the drop box the step names.
   */
  | { readonly kind: 'handedOver'; readonly secretName: string };

/** The records a step works on, by name. */
export interface WriteSubject {
  readonly instance: { readonly namespace: string; readonly name: string };
  readonly binding?: { readonly namespace: string; readonly name: string };
}

/** The fields of a record's status the steps on a cluster write. */
export const STATUS_FIELDS: Readonly<Record<'instance' | 'binding', readonly string[]>> = {
  instance: ['resources', 'staleResources', 'references', 'planRevision', 'generatedSecrets'],
  binding: ['resources', 'unbindResources', 'generatedSecrets'],
};

/** Which step may ask for which kind of write. */
const STEPS_OF: Readonly<Record<MasterWrite['kind'], readonly string[] | 'any'>> = {
  status: 'any',
  labels: ['applyTemplate', 'applyTemplateWatched', 'applyTemplateAwaited'],
  response: ['checkStatus'],
  removeInstanceRecord: ['removeInstanceRecord'],
  removeBindingRecord: ['removeBindingRecord'],
  leftCluster: ['leaveCluster'],
  handedOver: ['handOverGeneratedSecrets'],
};

/**
 * Why the landscape refuses `write`, asked for by the step `step` on `subject`; undefined when it
 * makes it.
 */
export function masterWriteRefusal(
  step: string,
  subject: WriteSubject,
  write: MasterWrite,
): string | undefined {
  const steps = STEPS_OF[write.kind];
  if (steps !== 'any' && !steps.includes(step)) return `step ${step} may not ask for a ${write.kind} write`;
  const same = (a: { namespace: string; name: string }, b?: { namespace: string; name: string }) =>
    b !== undefined && a.namespace === b.namespace && a.name === b.name;
  switch (write.kind) {
    case 'status': {
      const record = write.record === 'binding' ? subject.binding : subject.instance;
      if (!same(write, record))
        return `step ${step} may not write the status of ${write.record} ${write.namespace}/${write.name}`;
      const other = Object.keys(write.status).find((key) => !STATUS_FIELDS[write.record].includes(key));
      return other
        ? `step ${step} may not write status.${other} of ${write.record} ${write.namespace}/${write.name}`
        : undefined;
    }
    case 'labels': {
      if (!same(write, subject.instance))
        return `step ${step} may not label instance ${write.namespace}/${write.name}`;
      const other = Object.keys(write.labels).find((key) => key !== LABELS.planRevision);
      return other ? `step ${step} may not write label ${other}` : undefined;
    }
    case 'response':
      if (!subject.binding) return `step ${step} on an instance has no binding response`;
      return write.secretName === bindingSecretName(subject.binding.name)
        ? undefined
        : `step ${step} may not name Secret ${write.secretName} as the binding’s response`;
    case 'removeBindingRecord':
      return subject.binding ? undefined : `step ${step} names no binding`;
    case 'removeInstanceRecord':
    case 'leftCluster':
      return undefined;
    case 'handedOver':
      return write.secretName.startsWith(handedOverPrefix(subject.instance.name))
        ? undefined
        : `step ${step} may not hand over Secret ${write.secretName}: it is not one of instance ${subject.instance.name}’s`;
  }
}
