/**
 * `plan check`'s checks of a plan (src/templates/plan-check.ts), with the real render threads: the
 * repository's example plans pass, and each kind of mistake gives its error.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { closeRenderer } from '../../../src/templates/index.js';
import {
  checkPlan,
  crdSchemaOf,
  type PlanCheckReport,
  type PlanFinding,
} from '../../../src/templates/plan-check.js';

const crdSchema = crdSchemaOf(
  parse(readFileSync('charts/interoperator/crds/osb.servicefabrik.io_sfplans.yaml', 'utf8')),
);
const errors = (checked: PlanCheckReport): PlanFinding[] =>
  checked.findings.filter((f) => f.severity === 'error');

/** A well-formed plan whose templates work, with `templates` changed. */
const planWith = (templates: Record<string, unknown>[], spec: Record<string, unknown> = {}) => ({
  apiVersion: 'osb.servicefabrik.io/v1alpha1',
  kind: 'SFPlan',
  metadata: { name: 'p-1' },
  spec: {
    id: 'p-1',
    name: 'small',
    serviceId: 's-1',
    description: 'a plan',
    bindable: false,
    templates,
    ...spec,
  },
});
const provision = {
  action: 'provision',
  type: 'gotemplate',
  content: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "{{ .instance.metadata.name }}"}\n',
};
const status = (content: string) => ({ action: 'status', type: 'gotemplate', content });
const GOOD_STATUS = status('provision: {state: succeeded}\ndeprovision: {state: succeeded}\n');

afterAll(() => closeRenderer());

describe('GIVEN the example plans of the repository', () => {
  const examples = readdirSync('examples', { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) =>
      readdirSync(path.join('examples', entry.name))
        .filter((name) => /^sfplan.*\.yaml$/.test(name))
        .map((name) => path.join('examples', entry.name, name)),
    );

  test('THEN there are the postgresql and certificates plans among them', () => {
    expect(examples).toEqual(
      expect.arrayContaining(['examples/postgresql/sfplan.yaml', 'examples/certificates/sfplan.yaml']),
    );
  });

  test.each(examples)('WHEN %s is checked THEN it has no error', async (file) => {
    const checked = await checkPlan({ plan: parse(readFileSync(file, 'utf8')), crdSchema });
    expect(errors(checked)).toEqual([]);
  });
});

describe('GIVEN a plan with a mistake WHEN it is checked THEN the mistake is an error of its template', () => {
  test.each([
    {
      name: 'a template that does not parse',
      plan: planWith([{ ...provision, content: 'kind: {{ .instance.metadata.name ' }, GOOD_STATUS]),
      action: 'provision',
      message: /^does not render over the sample instance .*unclosed action/,
    },
    {
      name: 'an unknown action',
      plan: planWith([provision, GOOD_STATUS, { action: 'backup', type: 'gotemplate', content: 'x' }]),
      action: 'backup',
      message: /unknown action "backup"/,
    },
    {
      name: 'an unknown template type',
      plan: planWith([{ ...provision, type: 'velocity' }, GOOD_STATUS]),
      action: 'provision',
      message: /unknown template type "velocity": one of gotemplate, mustache, helm, jsonnet/,
    },
    {
      name: 'a status template without a provision section',
      plan: planWith([provision, status('deprovision: {state: succeeded}\n')]),
      action: 'status',
      message: /^has no provision section .*stays in progress until its deadline/,
    },
    {
      name: 'a status template that says a state the workers do not know',
      plan: planWith([provision, status('provision: {state: Running}\ndeprovision: {state: succeeded}\n')]),
      action: 'status',
      message: /the provision section .* says state "Running", not one of in progress, succeeded, failed/,
    },
    {
      name: 'a status template that does not render',
      plan: planWith([provision, status('{{ fail "no" }}')]),
      action: 'status',
      message: /^does not render over the sample instance without sources: .*no/,
    },
    {
      name: 'a custom action without its status section',
      plan: planWith([provision, GOOD_STATUS, { ...provision, action: 'x-restart' }]),
      action: 'status',
      message: /^has no x-restart section .*the action fails at once/,
    },
    {
      name: 'a bind that succeeds with a response that is not JSON',
      plan: planWith(
        [
          provision,
          status(
            'provision: {state: succeeded}\nbind: {state: succeeded, response: "{not json"}\nunbind: {state: succeeded}\n',
          ),
        ],
        { bindable: true },
      ),
      action: 'status',
      message: /the bind section .*not JSON/,
    },
    {
      name: 'an invalid parameters schema',
      plan: planWith([provision, GOOD_STATUS], {
        schemas: { service_instance: { create: { parameters: { type: 'objekt' } } } },
      }),
      action: 'plan',
      message: /^spec\.schemas\.service_instance\.create\.parameters is not a valid JSON Schema: /,
    },
    {
      name: 'no status template',
      plan: planWith([provision]),
      action: 'status',
      message: /no status template/,
    },
    {
      name: 'a field the CRD requires missing',
      plan: planWith([provision, GOOD_STATUS], { description: undefined }),
      action: 'plan',
      message: /^spec\.description is required \(the SFPlan CRD's schema\)$/,
    },
    {
      name: 'a template with no text',
      plan: planWith([provision, GOOD_STATUS, { action: 'unbind', type: 'gotemplate' }]),
      action: 'plan',
      message: /^spec\.templates\[2\] has no text: give content, contentEncoded or url/,
    },
  ])('$name', async ({ plan, action, message }) => {
    const checked = await checkPlan({ plan: JSON.parse(JSON.stringify(plan)) as unknown, crdSchema });
    expect(errors(checked)).toEqual(
      expect.arrayContaining([{ severity: 'error', action, message: expect.stringMatching(message) }]),
    );
    expect(checked.errors).toBe(errors(checked).length);
  });
});

describe('GIVEN a plan whose provision is a helm chart, not rendered offline', () => {
  const helmProvision = { action: 'provision', type: 'helm', url: 'https://charts.example.org/db-1.0.0.tgz' };
  const bindReadingWhatTheChartMakes = {
    action: 'bind',
    type: 'gotemplate',
    content:
      '{{ if not .key }}{{ fail "the instance has no key" }}{{ end }}apiVersion: v1\nkind: Secret\nmetadata: {name: x}\n',
  };
  const statusOfBoth = status(
    'provision: {state: succeeded}\ndeprovision: {state: succeeded}\nbind: {state: succeeded}\nunbind: {state: succeeded}\n',
  );

  test('WHEN another template fails for lack of what the chart makes THEN that is a warning saying why, not an error', async () => {
    const checked = await checkPlan({
      plan: planWith([helmProvision, bindReadingWhatTheChartMakes, statusOfBoth], { bindable: true }),
      crdSchema,
    });
    expect(errors(checked)).toEqual([]);
    expect(checked.findings).toEqual(
      expect.arrayContaining([
        {
          severity: 'warning',
          action: 'bind',
          message: expect.stringMatching(
            /the instance has no key.*the provision template was not rendered offline, so the objects and generated secrets it makes are not among the samples/,
          ),
        },
      ]),
    );
  });

  test('WHEN the provision is a gotemplate THEN the same failure is an error', async () => {
    const checked = await checkPlan({
      plan: planWith([provision, bindReadingWhatTheChartMakes, statusOfBoth], { bindable: true }),
      crdSchema,
    });
    expect(errors(checked)).toEqual([
      { severity: 'error', action: 'bind', message: expect.stringMatching(/the instance has no key/) },
    ]);
  });
});

describe('GIVEN a plan file with __proto__ and constructor keys', () => {
  test('WHEN it is checked THEN they are plain keys: no object prototype changes, the plan is judged as it is', async () => {
    const text = [
      'apiVersion: osb.servicefabrik.io/v1alpha1',
      'kind: SFPlan',
      'metadata: {name: p-1}',
      'spec:',
      '  id: p-1',
      '  name: small',
      '  serviceId: s-1',
      '  description: a plan',
      '  bindable: false',
      '  __proto__: {polluted: true}',
      '  context:',
      '    __proto__: {isAdmin: true}',
      '    constructor: {prototype: {polluted: true}}',
      '  templates:',
      '    - action: provision',
      '      type: gotemplate',
      `      content: "apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: x}\\ndata: {a: '{{ .plan.spec.context.isAdmin }}'}\\n"`,
      '    - action: status',
      '      type: gotemplate',
      '      content: "provision: {state: succeeded}\\ndeprovision: {state: succeeded}\\n"',
      '  schemas:',
      '    service_instance:',
      '      create:',
      '        parameters:',
      '          type: object',
      '          properties:',
      '            __proto__: {type: string, default: x}',
      '',
    ].join('\n');
    const checked = await checkPlan({ plan: parse(text) as unknown, crdSchema });
    expect(errors(checked)).toEqual([]);
    const probe = {} as Record<string, unknown>;
    expect([probe.polluted, probe.isAdmin]).toEqual([undefined, undefined]);
  });
});

describe('GIVEN a plan that works', () => {
  test('WHEN it is checked THEN it has no finding', async () => {
    const checked = await checkPlan({ plan: planWith([provision, GOOD_STATUS]), crdSchema });
    expect(checked).toEqual({ name: 'small', id: 'p-1', findings: [], errors: 0, warnings: 0 });
  });

  test('WHEN its create schema has examples THEN the templates render with them', async () => {
    const plan = planWith(
      [
        provision,
        status(
          '{{ if eq .instance.spec.parameters.size "L" }}provision: {state: succeeded}{{ end }}\ndeprovision: {state: succeeded}\n',
        ),
      ],
      {
        schemas: {
          service_instance: {
            create: {
              parameters: { type: 'object', required: ['size'], examples: [{ size: 'L' }] },
            },
          },
        },
      },
    );
    const checked = await checkPlan({ plan, crdSchema });
    expect(checked.findings).toEqual([]);
  });

  test('WHEN the SFService given is of another service THEN that is an error', async () => {
    const checked = await checkPlan({
      plan: planWith([provision, GOOD_STATUS]),
      service: { kind: 'SFService', spec: { id: 's-2' } },
      crdSchema,
    });
    expect(errors(checked)).toEqual([
      {
        severity: 'error',
        action: 'plan',
        message: 'spec.serviceId "s-1" is not the id of the SFService given ("s-2")',
      },
    ]);
  });
});

describe('GIVEN a plan that says how its instances move', () => {
  const action = (name: string, content: string) => ({ action: name, type: 'gotemplate', content });
  const restoring = action(
    'x-restore',
    '{{- if not .action.parameters.backup }}{{ fail "no backup named" }}{{ end }}\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: "restore-{{ .action.parameters.backup }}"}\n',
  );
  const backup = action('x-backup', 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: backup}\n');

  test('WHEN its restore needs the backup a move hands it THEN it renders with a sample one', async () => {
    const statusOfAll = status(
      'provision: {state: succeeded}\ndeprovision: {state: succeeded}\nx-backup: {state: succeeded}\nx-restore: {state: succeeded}\n',
    );
    const plan = planWith([provision, statusOfAll, backup, restoring], {
      migrate: { backup: 'x-backup', restore: 'x-restore' },
    });
    expect(errors(await checkPlan({ plan, crdSchema }))).toEqual([]);
  });

  test('WHEN it names an action it does not have, or a restore without a backup THEN that is an error', async () => {
    const unknown = planWith([provision, GOOD_STATUS, backup], { migrate: { backup: 'x-snapshot' } });
    expect(errors(await checkPlan({ plan: unknown, crdSchema })).map((f) => f.message)).toContain(
      'spec.migrate: plan small names "x-snapshot" as its backup, which is none of its custom actions (x-backup)',
    );
    const alone = planWith([provision, GOOD_STATUS, restoring], { migrate: { restore: 'x-restore' } });
    expect(errors(await checkPlan({ plan: alone, crdSchema })).map((f) => f.message)).toContain(
      'spec.migrate: plan small names a restore but no backup to restore from',
    );
  });

  test('WHEN it says its instances never move THEN that is no finding', async () => {
    const plan = planWith([provision, GOOD_STATUS], { migrate: { movable: false, reason: 'local disks' } });
    expect(errors(await checkPlan({ plan, crdSchema }))).toEqual([]);
  });
});
