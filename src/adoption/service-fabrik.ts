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

/**
 * The last-operation label Service Fabrik's controllers would write for an instance's OSB
 * operation (the other way round of {@link instanceOperationOf}); undefined for another.
 */
export function lastOperationLabelOf(operation: string | undefined): string | undefined {
  if (operation === 'provision') return 'in_queue';
  if (operation === 'update') return 'update';
  if (operation === 'deprovision') return 'delete';
  return undefined;
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

/** The operation types Service Fabrik's broker names in the `operation` strings of its 202 answers. */
export type ServiceFabrikOperationType = 'create' | 'update' | 'delete';

const SERVICE_FABRIK_OPERATION_TYPES: readonly string[] = ['create', 'update', 'delete'];
/** The keys its operation objects hold: the type, and an update's serial service flow. */
const SERVICE_FABRIK_OPERATION_KEYS: readonly string[] = ['type', 'serviceflow_name', 'serviceflow_id'];
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * The type of an `operation` string Service Fabrik's broker handed out, undefined when it is not
 * one: base64 of a JSON object whose `type` is `create` (a provision or a bind), `update` or
 * `delete` (a deprovision or an unbind), as its broker encodes it (`encodeBase64({type})`); an
 * update run by a serial service flow also names the flow (`serviceflow_name`, `serviceflow_id`).
 * Its broker reads nothing else of the string: it answers the record's last operation, whatever
 * it is, and uses the type to answer a deletion's record that is gone (410).
 */
export function serviceFabrikOperationType(operation: string): ServiceFabrikOperationType | undefined {
  if (!BASE64.test(operation) || operation.length % 4 !== 0) return undefined;
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(operation, 'base64').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!decoded || typeof decoded !== 'object' || Array.isArray(decoded)) return undefined;
  const fields = decoded as Record<string, unknown>;
  if (Object.keys(fields).some((key) => !SERVICE_FABRIK_OPERATION_KEYS.includes(key))) return undefined;
  const type = fields.type;
  return typeof type === 'string' && SERVICE_FABRIK_OPERATION_TYPES.includes(type)
    ? (type as ServiceFabrikOperationType)
    : undefined;
}
