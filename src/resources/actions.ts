/**
 * The names of a plan's template actions: the OSB ones the inter-operator drives itself
 * (`provision`, `bind`, `status`, ...) and the plan's own custom actions, `x-<name>`, which an admin
 * runs on an instance (a backup, a restart). The rule is the same in the SFPlan CRD (a pattern),
 * in the admin API and in the workflows.
 *
 * Pure: no I/O, safe to import from workflows.
 */

/** OSB actions a plan template can serve. */
export const OSB_TEMPLATE_ACTIONS = [
  'provision',
  'bind',
  'unbind',
  'sources',
  'status',
  'clusterSelector',
] as const;
export type OsbTemplateAction = (typeof OSB_TEMPLATE_ACTIONS)[number];

/** A custom action of a plan: `x-` and a name of lowercase letters, digits and dashes. */
export type CustomAction = `x-${string}`;

/**
 * What a custom action's name looks like: `x-`, then lowercase letters, digits and dashes, starting
 * and ending with a letter or digit (a DNS label, so it fits in labels, field managers and URLs).
 */
export const CUSTOM_ACTION_PATTERN = /^x-[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** The longest name of a custom action (a Kubernetes label value's limit). */
export const CUSTOM_ACTION_MAX_LENGTH = 63;

/** What the rule says, in the words of errors and of the CRD's message. */
export const CUSTOM_ACTION_RULE =
  'a custom action is named x-<name>: lowercase letters, digits and dashes, starting and ending with a letter or digit, at most 63 characters';

/** Whether `name` is a well-formed custom action name. */
export function isCustomAction(name: unknown): name is CustomAction {
  return (
    typeof name === 'string' && name.length <= CUSTOM_ACTION_MAX_LENGTH && CUSTOM_ACTION_PATTERN.test(name)
  );
}

/** Whether `name` is an action a plan template may serve: an OSB one or a custom one. */
export function isTemplateActionName(name: unknown): boolean {
  return (OSB_TEMPLATE_ACTIONS as readonly unknown[]).includes(name) || isCustomAction(name);
}

/**
 * Why `name` cannot be a custom action an admin runs, or undefined when it can: an OSB action is
 * the platform's to run, and anything else must follow {@link CUSTOM_ACTION_RULE}.
 */
export function customActionProblem(name: string): string | undefined {
  const shown = JSON.stringify(name.length > 80 ? `${name.slice(0, 80)}…` : name);
  if ((OSB_TEMPLATE_ACTIONS as readonly string[]).includes(name))
    return `${shown} is an OSB action, run by the platform; ${CUSTOM_ACTION_RULE}.`;
  if (!isCustomAction(name)) return `${shown} is not a custom action: ${CUSTOM_ACTION_RULE}.`;
  return undefined;
}

/** The custom actions a plan has templates for, in the order of its templates. */
export function customActionsOf(
  templates: readonly { readonly action: string }[] | undefined,
): CustomAction[] {
  return [...new Set((templates ?? []).map((t) => t.action).filter(isCustomAction))];
}

/** What {@link actionRefusal} reads of an instance's record (an SFServiceInstance). */
export interface ActionTarget {
  readonly metadata: { readonly deletionTimestamp?: string };
  readonly status?: {
    readonly operation?: string;
    readonly state?: string;
    readonly instanceUsable?: boolean;
  };
}

/**
 * Why a custom action cannot run on the instance of this record, or undefined when it can: there
 * must be an instance, not being deleted, whose provision succeeded, and that no failed operation
 * left unusable.
 */
export function actionRefusal(record: ActionTarget | undefined): string | undefined {
  if (!record) return 'the service instance does not exist';
  const status = record.status;
  if (record.metadata.deletionTimestamp) return 'the service instance is being deleted';
  if (status?.operation === 'deprovision' && status.state !== 'failed')
    return 'the service instance is being deleted';
  if (status?.operation !== 'provision' && status?.state === 'failed' && status.instanceUsable === false)
    return `the service instance is not usable since its ${status.operation ?? 'last operation'} failed`;
  if (status?.operation === 'provision' && status.state !== 'succeeded')
    return status.state === 'failed'
      ? 'the provision of the service instance failed; there is nothing to run the action on'
      : 'the service instance is still being provisioned';
  return undefined;
}
