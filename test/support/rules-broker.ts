/**
 * The broker of the OSB rules files (test/integration/osb-rules*.test.ts), on the real servers: a
 * service of test plans in the run's namespace, each plan showing one rule; the example operator,
 * at the pace those files assert on (1.5 s to make a postgresql ready); and one broker and worker.
 * Each file starts its own; they apply the same service and plans.
 */
import { PatchStrategy, setHeaderOptions, type KubernetesObject } from '@kubernetes/client-node';
import { SFPLAN } from '../../src/resources/types.js';
import type { ClusterClient } from '../../src/kube/clients.js';
import { statusCodeOf } from '../../src/kube/errors.js';
import { clusters, environment, eventually } from './env.js';
import { osbClient, untilSettled, type OsbClient } from './osb.js';
import {
  startOperator,
  startProcess,
  systemSettings,
  type SystemProcess,
  type SystemSettings,
} from './system.js';

export const SERVICE = 'b6f3e0f4-rules-service';
export const plan = (id: string, extra: Record<string, unknown>, provision: string) => ({
  apiVersion: SFPLAN.apiVersion,
  kind: SFPLAN.kind,
  metadata: { name: id, namespace: environment().namespace },
  spec: {
    id,
    name: id,
    description: `test plan ${id}`,
    serviceId: SERVICE,
    bindable: true,
    planUpdatable: true,
    manager: { async: true },
    templates: [
      { action: 'provision', type: 'gotemplate', content: provision },
      {
        action: 'sources',
        type: 'gotemplate',
        content:
          'pg:\n  apiVersion: acid.zalan.do/v1\n  kind: postgresql\n  name: db\n  namespace: {{ .instance.metadata.namespace }}\n',
      },
      {
        action: 'status',
        type: 'gotemplate',
        content: [
          '{{- $s := "in progress" }}{{ $d := "" }}',
          '{{- with .pg.status }}{{ if eq .PostgresClusterStatus "Running" }}{{ $s = "succeeded" }}{{ end }}',
          '{{- if eq .PostgresClusterStatus "CreateFailed" }}{{ $s = "failed" }}{{ $d = .reason }}{{ end }}{{ end }}',
          'provision: {state: "{{ $s }}", description: {{ $d | quote }}}',
          'deprovision: {state: "{{ if .pg }}in progress{{ else }}succeeded{{ end }}"}',
        ].join('\n'),
      },
    ],
    ...extra,
  },
});
export const pgTemplate = (team: string) =>
  'apiVersion: acid.zalan.do/v1\nkind: postgresql\nmetadata:\n  name: db\nspec:\n  teamId: ' +
  team +
  '\n  users:\n    main: []\n  size: {{ default "s" .instance.spec.parameters.size }}\n';

/**
 * A postgresql whose team is a parameter (`team: fail` makes the operator fail it), and a status
 * that waits for the operator to have seen the latest change (`team: hang` never ends).
 */
export const teamPlan = (id: string, async: boolean, extra: Record<string, unknown> = {}) =>
  plan(
    id,
    {
      ...extra,
      manager: { async },
      templates: [
        {
          action: 'provision',
          type: 'gotemplate',
          content:
            'apiVersion: acid.zalan.do/v1\nkind: postgresql\nmetadata:\n  name: db\nspec:\n  teamId: {{ default "ok" .instance.spec.parameters.team }}\n  users:\n    main: []\n',
        },
        plan(id, {}, '').spec.templates[1]!,
        {
          action: 'status',
          type: 'gotemplate',
          content: [
            '{{- $s := "in progress" }}{{ $d := "" }}',
            '{{- with .pg.status }}{{ if eq (toString .observedGeneration) (toString $.pg.metadata.generation) }}',
            '{{- if eq .PostgresClusterStatus "Running" }}{{ $s = "succeeded" }}{{ end }}',
            '{{- if or (eq .PostgresClusterStatus "CreateFailed") (eq .PostgresClusterStatus "UpdateFailed") }}{{ $s = "failed" }}{{ $d = .reason }}{{ end }}{{ end }}{{ end }}',
            '{{- if eq (default "" .instance.spec.parameters.team) "hang" }}{{ $s = "in progress" }}{{ end }}',
            'provision: {state: "{{ $s }}", description: {{ $d | quote }}}',
            // `team: stuck` never lets a deprovision finish
            'deprovision: {state: "{{ if or .pg (eq (default "" .instance.spec.parameters.team) "stuck") }}in progress{{ else }}succeeded{{ end }}"}',
            // a binding's response with endpoints and metadata; `renew: late` renews after it expires;
            // `renew: never` never finishes the bind
            '{{- with .binding }}',
            'bind: {state: "{{ if eq (toString .spec.parameters.renew) "never" }}in progress{{ else }}succeeded{{ end }}", response: {credentials: {user: "{{ .metadata.name }}"}, endpoints: [{host: db.example, ports: ["5432"], protocol: tcp}], metadata: {expires_at: "2030-01-31T00:00:00.0Z", renew_before: "2030-0{{ if eq (toString .spec.parameters.renew) "late" }}2{{ else }}1{{ end }}-01T00:00:00.0Z"}}}',
            'unbind: {state: "{{ if eq (toString .spec.parameters.renew) "hang" }}in progress{{ else }}succeeded{{ end }}"}',
            '{{- end }}',
          ].join('\n'),
        },
      ],
    },
    '',
  );

export const PLANS = {
  ok: 'rules-plan-ok',
  team: 'rules-plan-team',
  teamSync: 'rules-plan-team-sync',
  teamQuick: 'rules-plan-team-quick',
  other: 'rules-plan-other',
  maintained: 'rules-plan-maintained',
  failing: 'rules-plan-failing',
  broken: 'rules-plan-broken',
  invalid: 'rules-plan-invalid',
  slow: 'rules-plan-slow',
  never: 'rules-plan-never',
  deadline: 'rules-plan-deadline',
};

/**
 * Creates the object unless it is there already: the other rules file installs the same ones, and
 * must not put back a plan that one of that file's tests changed meanwhile.
 */
async function install(cluster: ClusterClient, object: object): Promise<void> {
  try {
    await cluster.objects.create(object as KubernetesObject);
  } catch (err) {
    if (statusCodeOf(err) !== 409) throw err;
  }
}

/** What a rules file talks to, set in its beforeAll. */
export interface RulesBroker {
  /** The broker and worker (one process), and their settings. */
  readonly system: SystemProcess;
  readonly settings: SystemSettings;
  /** An OSB client of the broker. */
  readonly osb: OsbClient;
  /** The body of the settled last_operation at `path`. */
  until(path: string): Promise<Record<string, unknown>>;
  /** Deprovisions an instance: 202, then last_operation of that operation until it succeeded. */
  deprovision(path: string, planId: string): Promise<void>;
  /** Leaves a namespace being deleted: an object in it holds a finalizer. */
  holdNamespace(namespace: string): Promise<void>;
  /** Lets the namespace go. */
  releaseNamespace(namespace: string): Promise<unknown>;
}

/**
 * Installs the service and its plans, starts the operator and the broker before the file's tests
 * (and stops them after), and waits until the catalog shows every plan.
 */
export function rulesBroker(): RulesBroker {
  let operator: { stop(): Promise<void> } | undefined;
  const [master] = clusters();
  const broker = {} as { settings: SystemSettings; system: SystemProcess; osb: OsbClient };
  const osb: OsbClient = (...request) => broker.osb(...request);

  beforeAll(async () => {
    const ns = environment().namespace;
    await install(master!, {
      apiVersion: 'osb.servicefabrik.io/v1alpha1',
      kind: 'SFService',
      metadata: { name: SERVICE, namespace: ns },
      spec: {
        id: SERVICE,
        name: 'rules',
        description: 'rules',
        bindable: true,
        planUpdatable: true,
        instancesRetrievable: true,
        bindingsRetrievable: true,
      },
    });
    await install(
      master!,
      plan(
        PLANS.ok,
        {
          manager: {
            async: true,
            dashboardUrlTemplate: 'https://dashboard.example/{{instance.metadata.name}}',
          },
        },
        pgTemplate('ok'),
      ),
    );
    // synchronous, and the operator never reports success: only a time limit ends it
    await install(
      master!,
      plan(
        PLANS.never,
        {
          manager: { async: false },
          templates: [
            {
              action: 'provision',
              type: 'gotemplate',
              content: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n',
            },
            { action: 'status', type: 'gotemplate', content: 'provision: {state: in progress}\n' },
          ],
        },
        '',
      ),
    );
    // asynchronous, the operator never reports success, and the plan allows 3 s
    await install(
      master!,
      plan(
        PLANS.deadline,
        {
          maximum_polling_duration: 3,
          templates: [
            {
              action: 'provision',
              type: 'gotemplate',
              content: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n',
            },
            {
              action: 'status',
              type: 'gotemplate',
              content:
                'provision: {state: in progress, description: "still creating"}\ndeprovision: {state: succeeded}\n',
            },
          ],
        },
        '',
      ),
    );
    await install(master!, plan(PLANS.other, { update_predecessors: ['nothing'] }, pgTemplate('ok')));
    await install(
      master!,
      plan(PLANS.maintained, { maintenance_info: { version: '2.0.0' } }, pgTemplate('ok')),
    );
    await install(master!, plan(PLANS.failing, {}, pgTemplate('fail')));
    await install(master!, plan(PLANS.broken, {}, 'kind: x\n{{ fail "no such size" }}'));
    await install(
      master!,
      plan(
        PLANS.invalid,
        {},
        'apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\nspec:\n  type: NotAType\n  ports: [{port: 5432}]\n',
      ),
    );
    await install(master!, plan(PLANS.slow, {}, pgTemplate('slow')));
    await install(master!, teamPlan(PLANS.team, true));
    await install(master!, teamPlan(PLANS.teamSync, false));
    await install(master!, teamPlan(PLANS.teamQuick, true, { maximum_polling_duration: 4 }));
    operator = await startOperator(1500);
    broker.settings = await systemSettings();
    broker.system = await startProcess('all', broker.settings);
    broker.osb = osbClient(broker.system.url);
    await eventually('the test catalog', async () => {
      const res = await osb('GET', '/v2/catalog');
      const services = res.body.services as { id: string; plans: unknown[] }[];
      return services.find((s) => s.id === SERVICE)?.plans.length === Object.keys(PLANS).length
        ? true
        : undefined;
    });
  });
  afterAll(async () => {
    await broker.system?.stop();
    await operator?.stop();
  });

  /** The body of the settled last_operation at `path`. */
  const until = async (path: string) => (await untilSettled(osb, path)).body;

  /** Deprovisions an instance: 202, then last_operation of that operation until it succeeded. */
  const deprovision = async (path: string, planId: string) => {
    const del = await osb(
      'DELETE',
      `${path}?service_id=${SERVICE}&plan_id=${planId}&accepts_incomplete=true`,
    );
    expect(del.status).toBe(202);
    expect(
      await until(`${path}/last_operation?operation=${encodeURIComponent(String(del.body.operation))}`),
    ).toMatchObject({ state: 'succeeded' });
  };

  /** Leaves a namespace being deleted: an object in it holds a finalizer. */
  const HOLD = 'test.servicefabrik.io/hold';
  const holdNamespace = async (namespace: string) => {
    await master!.core.createNamespace({ body: { metadata: { name: namespace } } });
    await master!.core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'held', finalizers: [HOLD] } },
    });
    await master!.core.deleteNamespace({ name: namespace });
  };
  /** Lets the namespace go. */
  const releaseNamespace = (namespace: string) =>
    master!.core.patchNamespacedConfigMap(
      { namespace, name: 'held', body: [{ op: 'remove', path: '/metadata/finalizers' }] },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );

  return {
    get system() {
      return broker.system;
    },
    get settings() {
      return broker.settings;
    },
    osb,
    until,
    deprovision,
    holdNamespace,
    releaseNamespace,
  };
}
