/**
 * How Service Fabrik (github.com/cloudfoundry-incubator/service-fabrik-broker: its Node broker,
 * `broker/applications/osb-broker`, and its Go inter-operator, `interoperator/`) writes the records
 * it leaves behind: the same kinds as ours (SFServiceInstance, SFServiceBinding of
 * osb.servicefabrik.io/v1alpha1), its own finalizers, labels and credentials Secret. Facts only,
 * as adoption (rules.ts) reads them.
 *
 * Pure: names and constants.
 */

/**
 * The finalizers Service Fabrik puts on its records: its broker's (at creation) and its
 * inter-operator's controllers' (at the first reconcile). Nothing of ours removes them, so an
 * adopted record gives them up for ours.
 */
export const SERVICE_FABRIK_FINALIZERS: readonly string[] = [
  'broker.servicefabrik.io',
  'interoperator.servicefabrik.io',
];

/**
 * The label Service Fabrik's controllers write when they start an operation: the state the
 * broker asked for (`in_queue` a provision or bind, `update`, `delete` a deprovision or unbind).
 */
export const LAST_OPERATION_LABEL = 'interoperator.servicefabrik.io/lastoperation';

/** The label Service Fabrik's broker copies `status.state` into when it writes a record. */
export const STATE_LABEL = 'state';

/** Service Fabrik's states of a record that tell of an operation still running. */
export const SERVICE_FABRIK_RUNNING_STATES: readonly string[] = [
  'in_queue',
  'in progress',
  'update',
  'delete',
];

/** The Secret Service Fabrik's inter-operator keeps a binding's response in (`data.response`, JSON). */
export const serviceFabrikBindingSecretName = (bindingId: string): string => `sf-${bindingId}`;

/** The OSB operation a Service Fabrik instance record last ran, by its last-operation label. */
export function instanceOperationOf(
  lastOperation: string | undefined,
): 'provision' | 'update' | 'deprovision' {
  if (lastOperation === 'update') return 'update';
  if (lastOperation === 'delete') return 'deprovision';
  return 'provision';
}

/** The OSB operation a Service Fabrik binding record last ran, by its last-operation label. */
export const bindingOperationOf = (lastOperation: string | undefined): 'bind' | 'unbind' =>
  lastOperation === 'delete' ? 'unbind' : 'bind';

/**
 * A flag of Service Fabrik's status (`instanceUsable`, `updateRepeatable`), a string there
 * (`"true"`, `"false"`) and a boolean in ours; undefined when it says nothing.
 */
export function flagOf(value: unknown): boolean | undefined {
  if (typeof value === 'boolean') return value;
  if (value === 'true') return true;
  if (value === 'false') return false;
  return undefined;
}
