/**
 * The check of an SFPlan before it is applied (`interoperator plan check`): that the plan is
 * well-formed (its kind, ids, the SFPlan CRD's schema, its templates' actions and types, its
 * parameter schemas), that every template renders over sample data built as the workers build it,
 * and that the status template gives each operation of the plan an answer the workers can read.
 *
 * Offline: no cluster, no Temporal. It renders with the render threads of this layer and reads
 * what they render with the workers' own readers (values.ts); the caller reads the files.
 */
import type { ErrorObject } from 'ajv';
import { isTemplateActionName, isCustomAction, customActionsOf } from '../resources/actions.js';
import { migrationOf } from '../resources/migration.js';
import { instanceNamespace, LABELS, labelValue, resourceName } from '../resources/names.js';
import {
  generatedTemplateData,
  isGeneratedSecret,
  parseGeneratedSecret,
  type GeneratedSecretSpec,
} from '../resources/sfsecret.js';
import {
  SFPLAN,
  SFSERVICE,
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  TEMPLATE_TYPES,
  type KubeObject,
  type PlanTemplate,
  type SFPlan,
  type TemplateAction,
} from '../resources/types.js';
import { compileSchema, parameterSchema, SCHEMA_ACTIONS } from '../osb/schemas.js';
import { HELM_ACTIONS, renderObjects, renderValues, type RenderData } from './index.js';
import {
  bindResponseText,
  forTemplate,
  hasStatusSection,
  readStatusSection,
  sourceReferences,
  STATUS_STATES,
} from './values.js';

/** How bad a finding is: an error stops the plan from working; a warning is worth a look. */
export type FindingSeverity = 'error' | 'warning';

/** One thing the check found. */
export interface PlanFinding {
  readonly severity: FindingSeverity;
  /** The template's action the finding is about (`status`, `x-backup`), or `plan` for the plan itself. */
  readonly action: string;
  readonly message: string;
}

/** What the check of one plan found. */
export interface PlanCheckReport {
  /** The plan's `spec.name` (`?` when it has none). */
  readonly name: string;
  /** The plan's `spec.id` (`?` when it has none). */
  readonly id: string;
  readonly findings: readonly PlanFinding[];
  readonly errors: number;
  readonly warnings: number;
}

/** What to check. */
export interface PlanCheckInput {
  /** The SFPlan, as read from its file. */
  readonly plan: unknown;
  /** The plan's SFService. @default a sample SFService with the plan's `serviceId` */
  readonly service?: unknown;
  /** The SFPlan CRD's `openAPIV3Schema`. @default not checked (a warning says so) */
  readonly crdSchema?: Record<string, unknown>;
}

/** The ids of the sample records the templates render over. */
export const SAMPLE_IDS = {
  instanceId: 'plan-check-instance',
  bindingId: 'plan-check-binding',
  organizationGuid: 'plan-check-organization',
  spaceGuid: 'plan-check-space',
  actionRunId: 'plan-check-run',
} as const;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** An object as templates see it; one without metadata (a hand-written sample) as it is. */
const seen = (obj: unknown): KubeObject =>
  isRecord(obj) && isRecord(obj.metadata) ? forTemplate(obj as unknown as KubeObject) : (obj as KubeObject);

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** The `openAPIV3Schema` of an SFPlan CRD (its storage version's, else its first's). */
export function crdSchemaOf(crd: unknown): Record<string, unknown> | undefined {
  if (!isRecord(crd) || !isRecord(crd.spec) || !Array.isArray(crd.spec.versions)) return undefined;
  const versions = crd.spec.versions.filter(isRecord);
  const version = versions.find((v) => v.storage === true) ?? versions[0];
  const schema = isRecord(version?.schema) ? version.schema.openAPIV3Schema : undefined;
  return isRecord(schema) ? schema : undefined;
}

/** A JSON pointer as a path in the plan: `/spec/templates/0/action` is `spec.templates[0].action`. */
function pathOf(pointer: string, child?: string): string {
  const segments = pointer === '' ? [] : pointer.slice(1).split('/');
  if (child !== undefined) segments.push(child);
  const path = segments
    .map((raw) => raw.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((p, s) => (/^\d+$/.test(s) ? `${p}[${s}]` : p ? `${p}.${s}` : s), '');
  return path || 'the plan';
}

/** Ajv's errors against the CRD's schema, one sentence each, without those other checks say better. */
function crdFindings(errors: readonly ErrorObject[]): PlanFinding[] {
  const said = new Set<string>();
  const findings: PlanFinding[] = [];
  for (const e of errors) {
    // The template's action and type have checks of their own, with the rule in words.
    if (/^\/spec\/templates\/\d+\/(action|type)$/.test(e.instancePath)) continue;
    // The branches of anyOf fail one by one; the anyOf says it once.
    if (e.schemaPath.includes('/anyOf/')) continue;
    const params = e.params as Record<string, unknown>;
    const text =
      e.keyword === 'required'
        ? `${pathOf(e.instancePath, String(params.missingProperty))} is required`
        : e.keyword === 'anyOf' && /^\/spec\/templates\/\d+$/.test(e.instancePath)
          ? `${pathOf(e.instancePath)} has no text: give content, contentEncoded or url`
          : `${pathOf(e.instancePath)} ${e.message ?? 'is invalid'}`;
    if (said.has(text)) continue;
    said.add(text);
    findings.push({ severity: 'error', action: 'plan', message: `${text} (the SFPlan CRD's schema)` });
  }
  return findings;
}

/** A sample of the parameters a schema describes: its first example, else its properties' defaults or examples. */
export function sampleParameters(schema: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!schema) return {};
  const first = (values: unknown) => (Array.isArray(values) ? (values as unknown[])[0] : undefined);
  const example = first(schema.examples);
  if (isRecord(example)) return example;
  if (isRecord(schema.default)) return schema.default;
  const sample: Record<string, unknown> = {};
  for (const [key, property] of Object.entries(isRecord(schema.properties) ? schema.properties : {})) {
    if (!isRecord(property)) continue;
    const value = property.default !== undefined ? property.default : first(property.examples);
    if (value !== undefined) sample[key] = value;
  }
  return sample;
}

/** The well-formedness of the plan object: kind, ids, the CRD's schema, templates, parameter schemas. */
function formFindings(plan: Record<string, unknown>, crdSchema: Record<string, unknown> | undefined) {
  const findings: PlanFinding[] = [];
  const error = (action: string, text: string) => findings.push({ severity: 'error', action, message: text });
  const warning = (action: string, text: string) =>
    findings.push({ severity: 'warning', action, message: text });

  if (plan.apiVersion !== SFPLAN.apiVersion)
    error('plan', `apiVersion is ${JSON.stringify(plan.apiVersion)}, not ${SFPLAN.apiVersion}`);
  if (plan.kind !== SFPLAN.kind) error('plan', `kind is ${JSON.stringify(plan.kind)}, not ${SFPLAN.kind}`);
  const spec = isRecord(plan.spec) ? plan.spec : undefined;
  if (!spec) {
    error('plan', 'spec is missing');
    return findings;
  }
  for (const field of ['id', 'name', 'serviceId'])
    if (typeof spec[field] !== 'string' || !spec[field])
      error('plan', `spec.${field} is missing: the plan needs its OSB ${field}`);

  if (crdSchema) {
    try {
      const validate = compileSchema(crdSchema, undefined);
      if (!validate(plan)) findings.push(...crdFindings(validate.errors ?? []));
    } catch (err) {
      warning(
        'plan',
        `the SFPlan CRD's schema could not be used, so the plan was not checked against it: ${message(err)}`,
      );
    }
  } else {
    warning('plan', "the SFPlan CRD's schema was not found, so the plan was not checked against it");
  }

  const templates = Array.isArray(spec.templates) ? spec.templates : [];
  const seen = new Set<string>();
  templates.forEach((template: unknown, i) => {
    if (!isRecord(template)) return error('plan', `spec.templates[${i}] is not an object`);
    const action = typeof template.action === 'string' ? template.action : JSON.stringify(template.action);
    if (!isTemplateActionName(template.action))
      error(
        action,
        `spec.templates[${i}]: unknown action ${JSON.stringify(template.action)}: an OSB action (provision, bind, unbind, sources, status, clusterSelector) or a custom action x-<name> (lowercase letters, digits and dashes)`,
      );
    const type = String(template.type ?? '');
    if (!(TEMPLATE_TYPES as readonly string[]).includes(type))
      error(
        action,
        `spec.templates[${i}]: unknown template type ${JSON.stringify(template.type)}: one of ${TEMPLATE_TYPES.join(', ')}`,
      );
    else if (type === 'helm' && !HELM_ACTIONS.has(action))
      error(action, `spec.templates[${i}] is of type helm, which only provision and bind templates may be`);
    if (seen.has(action))
      warning(action, `spec.templates[${i}]: a second ${action} template; the workers use only the first`);
    seen.add(action);
  });
  if (!seen.has('status'))
    error('status', 'the plan has no status template: no operation of it could ever finish');
  if (!seen.has('provision'))
    warning('provision', 'the plan has no provision template: a provision applies nothing');
  if (spec.bindable === true && !seen.has('bind'))
    warning('bind', 'the plan is bindable but has no bind template: a bind applies nothing');
  if (spec.migrate !== undefined) {
    const how = migrationOf(plan as unknown as SFPlan);
    if ('refusal' in how && !(isRecord(spec.migrate) && spec.migrate.movable === false))
      error('plan', `spec.migrate: ${how.refusal}`);
  }

  for (const schemaAction of SCHEMA_ACTIONS) {
    const where = `spec.schemas.${schemaAction}.parameters`;
    const schema = parameterSchema(plan as unknown as SFPlan, schemaAction) as unknown;
    if (schema === undefined) continue;
    if (!isRecord(schema)) {
      error('plan', `${where} is not an object`);
      continue;
    }
    try {
      const validate = compileSchema(schema);
      const sample = sampleParameters(schema);
      if (!validate(sample))
        warning(
          'plan',
          `${where}: the sample parameters the templates rendered with (${JSON.stringify(sample)}) do not match it; give the schema examples, or its properties defaults`,
        );
    } catch (err) {
      error('plan', `${where} is not a valid JSON Schema: ${message(err)}`);
    }
  }
  return findings;
}

/** A template the check can render offline: its text is in the plan (not at a URL, not a chart). */
function offlineProblem(template: PlanTemplate): string | undefined {
  if (String(template.type).toLowerCase() === 'helm')
    return 'a helm template renders its chart, which is fetched from its url; it was not rendered offline';
  if (!template.content && !template.contentEncoded && template.url)
    return 'its text is at a url, which is fetched by the workers; it was not rendered offline';
  return undefined;
}

/** Which of the plan's operations the status template must answer for, by the data they render over. */
function statusOperations(
  plan: SFPlan,
): { readonly operation: string; readonly of: 'instance' | 'binding' }[] {
  const operations: { operation: string; of: 'instance' | 'binding' }[] = [
    { operation: 'provision', of: 'instance' },
    { operation: 'deprovision', of: 'instance' },
  ];
  if (plan.spec.planUpdatable !== false) operations.push({ operation: 'update', of: 'instance' });
  const hasTemplate = (action: string) => plan.spec.templates?.some((t) => t.action === action);
  if (plan.spec.bindable || hasTemplate('bind')) operations.push({ operation: 'bind', of: 'binding' });
  if (plan.spec.bindable || hasTemplate('unbind')) operations.push({ operation: 'unbind', of: 'binding' });
  for (const action of customActionsOf(plan.spec.templates))
    operations.push({ operation: action, of: 'instance' });
  return operations;
}

/** The sample of an object the sources template names: what a template of the plan renders for it, else its name. */
function sampleSource(
  ref: { apiVersion: string; kind: string; name: string; namespace?: string },
  rendered: readonly KubeObject[],
): KubeObject {
  const made = rendered.find(
    (o) => o.apiVersion === ref.apiVersion && o.kind === ref.kind && o.metadata?.name === ref.name,
  );
  const metadata = { ...(made?.metadata ?? {}), name: ref.name, namespace: ref.namespace };
  return forTemplate({ ...(made ?? {}), apiVersion: ref.apiVersion, kind: ref.kind, metadata } as KubeObject);
}

/**
 * Checks a plan: its form, then (when its templates can be found) every template rendered over
 * sample data, then the status template's answer for each of the plan's operations, over sample
 * data without sources (nothing made yet) and with sample sources.
 */
export async function checkPlan(input: PlanCheckInput): Promise<PlanCheckReport> {
  const findings: PlanFinding[] = [];
  const planObject = isRecord(input.plan) ? input.plan : undefined;
  if (!planObject) {
    findings.push({ severity: 'error', action: 'plan', message: 'the file holds no object (an SFPlan)' });
    return report(undefined, findings);
  }
  findings.push(...formFindings(planObject, input.crdSchema));
  const spec = isRecord(planObject.spec) ? planObject.spec : undefined;
  if (spec && Array.isArray(spec.templates) && spec.templates.every(isRecord))
    findings.push(...(await renderFindings(planObject as unknown as SFPlan, input.service)));
  return report(spec, findings);
}

function report(spec: Record<string, unknown> | undefined, findings: PlanFinding[]): PlanCheckReport {
  const text = (value: unknown) => (typeof value === 'string' && value ? value : '?');
  return {
    name: text(spec?.name),
    id: text(spec?.id),
    findings,
    errors: findings.filter((f) => f.severity === 'error').length,
    warnings: findings.filter((f) => f.severity === 'warning').length,
  };
}

/** The sample records, plan and service, as templates see them. */
function sampleRecords(plan: SFPlan, service: unknown) {
  const { instanceId, bindingId, organizationGuid, spaceGuid } = SAMPLE_IDS;
  const namespace = instanceNamespace(instanceId);
  const serviceId = String(plan.spec.serviceId ?? '');
  const planId = String(plan.spec.id ?? '');
  const context = { platform: 'cloudfoundry', organization_guid: organizationGuid, space_guid: spaceGuid };
  const instance = {
    apiVersion: SFSERVICEINSTANCE.apiVersion,
    kind: SFSERVICEINSTANCE.kind,
    metadata: {
      name: resourceName(instanceId),
      namespace,
      labels: {
        [LABELS.instanceId]: labelValue(instanceId),
        [LABELS.serviceId]: labelValue(serviceId),
        [LABELS.planId]: labelValue(planId),
      },
    },
    spec: {
      instanceId,
      serviceId,
      planId,
      organizationGuid,
      spaceGuid,
      context,
      parameters: sampleParameters(parameterSchema(plan, 'service_instance.create')),
    },
    status: { state: 'in progress', operation: 'provision' },
  };
  const binding = {
    apiVersion: SFSERVICEBINDING.apiVersion,
    kind: SFSERVICEBINDING.kind,
    metadata: {
      name: resourceName(bindingId),
      namespace,
      labels: { [LABELS.instanceId]: labelValue(instanceId), [LABELS.bindingId]: labelValue(bindingId) },
    },
    spec: {
      id: bindingId,
      instanceId,
      serviceId,
      planId,
      context,
      parameters: sampleParameters(parameterSchema(plan, 'service_binding.create')),
    },
    status: { state: 'in progress', operation: 'bind' },
  };
  const serviceObject = isRecord(service)
    ? service
    : {
        apiVersion: SFSERVICE.apiVersion,
        kind: SFSERVICE.kind,
        metadata: { name: serviceId },
        spec: { id: serviceId, name: 'plan-check-service', bindable: plan.spec.bindable === true },
      };
  return {
    namespace,
    instance: seen(instance),
    binding: seen(binding),
    plan: seen(plan),
    service: seen(serviceObject),
  };
}

/** Renders every template over the samples, and reads the status template for each operation. */
async function renderFindings(plan: SFPlan, service: unknown): Promise<PlanFinding[]> {
  const findings: PlanFinding[] = [];
  const error = (action: string, text: string) => findings.push({ severity: 'error', action, message: text });
  const warning = (action: string, text: string) =>
    findings.push({ severity: 'warning', action, message: text });

  if (isRecord(service) && isRecord(service.spec) && service.spec.id !== plan.spec.serviceId)
    error(
      'plan',
      `spec.serviceId ${JSON.stringify(plan.spec.serviceId)} is not the id of the SFService given (${JSON.stringify(service.spec.id)})`,
    );

  const templates = new Map<string, PlanTemplate>();
  for (const template of plan.spec.templates ?? []) {
    if (templates.has(template.action) || !isTemplateActionName(template.action)) continue;
    if (!(TEMPLATE_TYPES as readonly string[]).includes(String(template.type))) continue;
    const problem = offlineProblem(template);
    if (problem) warning(template.action, problem);
    else templates.set(template.action, template);
  }
  const samples = sampleRecords(plan, service);
  const base = { instance: samples.instance, plan: samples.plan, service: samples.service };

  // A provision not rendered here (a helm chart) leaves what it makes, its generated secrets among
  // them, out of the samples: another template that reads those cannot be judged, only warned of.
  const provisionNotRendered = plan.spec.templates?.some(
    (t) => t.action === 'provision' && offlineProblem(t) !== undefined,
  );
  const failures = new Set<string>();
  /** Renders, reporting a failure as an error of the action; undefined when it failed or there is no template. */
  async function attempt<T>(
    action: string,
    situation: string,
    render: (template: PlanTemplate) => Promise<T>,
  ): Promise<T | undefined> {
    const template = templates.get(action);
    if (!template) return undefined;
    try {
      return await render(template);
    } catch (err) {
      // A template that fails the same way over several samples is said to fail once.
      const said = `${action}\n${message(err)}`;
      if (failures.has(said)) return undefined;
      if (provisionNotRendered && action !== 'provision')
        warning(
          action,
          `does not render ${situation}: ${message(err)} (the provision template was not rendered offline, so the objects and generated secrets it makes are not among the samples)`,
        );
      else error(action, `does not render ${situation}: ${message(err)}`);
      failures.add(said);
      return undefined;
    }
  }

  /** Objects as the workers render them: SFSecrets declared are named by their version 1, then rendered again. */
  async function objectsOf(action: TemplateAction, data: RenderData, situation: string) {
    return attempt(action, situation, async (template) => {
      let objects = await renderObjects(template, action, data);
      const declared = objects
        .filter(isGeneratedSecret)
        .map(parseGeneratedSecret)
        .filter((s): s is GeneratedSecretSpec => !('problem' in s));
      if (declared.length > 0) {
        const generated = generatedTemplateData(undefined, declared);
        objects = await renderObjects(template, action, { ...data, generated });
      }
      return objects;
    });
  }

  /** The sources the template names over `data`, each as a sample object, by key. */
  async function sourcesOver(data: RenderData, rendered: readonly KubeObject[], situation: string) {
    const values = await attempt('sources', situation, (template) => renderValues(template, 'sources', data));
    if (values === undefined) return {};
    if (isRecord(values))
      for (const [key, ref] of Object.entries(values))
        if (!sourceReferences({ [key]: ref }, samples.namespace).length)
          warning(
            'sources',
            `the entry ${key} is passed over: ${['instance', 'binding', 'action'].includes(key) ? 'its key is reserved' : 'it needs apiVersion, kind and name'}`,
          );
    return Object.fromEntries(
      sourceReferences(values, samples.namespace).map(([key, ref]) => [key, sampleSource(ref, rendered)]),
    );
  }

  // Nothing exists yet at the first provision: the sources template names objects that are not there.
  const generated0 = generatedTemplateData(undefined);
  const firstProvision = await objectsOf(
    'provision',
    { ...base, generated: generated0 },
    'over the sample instance (a first provision, no sources yet)',
  );
  await attempt('clusterSelector', 'over the sample instance', (template) =>
    renderValues(template, 'clusterSelector', base),
  );
  const provisioned = firstProvision ?? [];
  const generated = generatedTemplateData(
    undefined,
    provisioned
      .filter(isGeneratedSecret)
      .map(parseGeneratedSecret)
      .filter((s): s is GeneratedSecretSpec => !('problem' in s)),
  );
  const instanceBase = { ...base, generated };
  const instanceSources = await sourcesOver(instanceBase, provisioned, 'over the sample instance');
  const instanceData = { ...instanceBase, ...instanceSources };
  await objectsOf('provision', instanceData, 'over the sample instance and its sample sources (an update)');

  const bindingBase = { ...instanceBase, binding: samples.binding };
  const bindSources = await sourcesOver(bindingBase, provisioned, 'over the sample binding');
  const bound =
    (await objectsOf(
      'bind',
      { ...bindingBase, ...bindSources },
      'over the sample binding and its sample sources',
    )) ?? [];
  const bindingData = {
    ...bindingBase,
    ...(await sourcesOver(bindingBase, [...provisioned, ...bound], 'over the sample binding')),
  };
  await objectsOf('unbind', bindingData, 'over the sample binding and its sample sources');
  // A move runs the plan's restore with the backup it restores; an admin's run may pass nothing.
  const restore = plan.spec.migrate?.restore;
  const runOf = (name: string) => ({
    name,
    id: SAMPLE_IDS.actionRunId,
    parameters: name === restore ? { backup: SAMPLE_IDS.actionRunId, fromClusterId: '1' } : {},
  });
  for (const action of customActionsOf(plan.spec.templates))
    await objectsOf(
      action,
      { ...instanceData, action: runOf(action) },
      'over the sample instance, its sample sources and a sample run',
    );

  // The status template's values by the data it rendered over; undefined when it failed.
  const statusValues = new Map<string, unknown>();
  if (templates.has('status'))
    for (const { operation, of } of statusOperations(plan)) {
      const withSources = of === 'binding' ? bindingData : instanceData;
      const without = of === 'binding' ? bindingBase : instanceBase;
      const run = isCustomAction(operation) ? { action: runOf(operation) } : {};
      for (const [situation, data] of [
        ['without sources', without],
        ['with sample sources', withSources],
      ] as const) {
        const key = `${of} ${situation}${isCustomAction(operation) ? ` and a sample run of ${operation}` : ''}`;
        if (!statusValues.has(key))
          statusValues.set(
            key,
            await attempt('status', `over the sample ${key}`, (template) =>
              renderValues(template, 'status', { ...data, ...run }),
            ),
          );
        const values = statusValues.get(key);
        if (values !== undefined) statusAnswer(operation, situation, values);
      }
    }

  /** Reads the status template's answer for `operation` as the workers read it. */
  function statusAnswer(operation: string, situation: string, values: unknown): void {
    const sectionKey =
      operation === 'update' && !hasStatusSection(values, 'update') ? 'provision' : operation;
    if (!hasStatusSection(values, sectionKey)) {
      if (operation === 'update') return; // the provision's absence is reported of the provision
      const said = `has no ${operation} section`;
      if (findings.some((f) => f.action === 'status' && f.message.startsWith(said))) return;
      if (operation === 'deprovision' || operation === 'unbind')
        warning(
          'status',
          `${said}: a ${operation} succeeds once the objects it deletes are gone, whatever the operator says`,
        );
      else
        error(
          'status',
          `${said} ${situation}: ${isCustomAction(operation) ? 'the action fails at once' : `a ${operation} stays in progress until its deadline`}; add ${operation}: {state, description}`,
        );
      return;
    }
    const declared = (values as Record<string, Record<string, unknown>>)[sectionKey]!.state;
    const state = typeof declared === 'string' ? declared.trim() : declared;
    if (
      !(STATUS_STATES as readonly unknown[]).includes(state) &&
      !(state === undefined && (operation === 'deprovision' || operation === 'unbind'))
    )
      error(
        'status',
        `the ${sectionKey} section ${situation} says state ${JSON.stringify(declared ?? null)}, not one of ${STATUS_STATES.join(', ')}; the workers read it as in progress`,
      );
    const section = readStatusSection(values, operation);
    if (operation === 'bind' && section.state === 'succeeded') {
      const response = bindResponseText(section.response);
      if ('error' in response) error('status', `the bind section ${situation}: ${response.error}`);
    }
  }

  return findings;
}

/** One line of a finding: `error: status: …`. */
export const findingLine = (finding: PlanFinding): string =>
  `${finding.severity}: ${finding.action}: ${finding.message}`;

/** The last line of a report: `plan <name> (<id>): N errors, M warnings`. */
export const reportSummary = (checked: PlanCheckReport): string =>
  `plan ${checked.name} (${checked.id}): ${checked.errors} error${checked.errors === 1 ? '' : 's'}, ${checked.warnings} warning${checked.warnings === 1 ? '' : 's'}`;
