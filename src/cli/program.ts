/**
 * The `interoperator` command line: the service owner's `template render`, the operator's
 * commands over the admin API (instances, bindings, rollouts), the workers' versions over
 * Temporal (`worker-version`), and the keys of a cluster's own worker (`payload-key derive`). Parsing, help and usage errors are commander's; each command is a
 * small function over the AdminClient (or the WorkerVersions); `plan check` runs offline.
 *
 * Exit statuses: 0 done; 1 failed (the API refused, the render failed, the rollout watched halted,
 * was aborted or left instances failed, the action waited for failed); 2 the command line is wrong
 * or incomplete; 3 a dry run ran but some instances could not be dry run (each is printed with its
 * error).
 */
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import type { RolloutProgress, RolloutSettings } from '../admin/contract.js';
import type { PlanDryRunReport } from '../admin/dry-run.js';
import type { Page, PageRequest, RecordFilter } from '../admin/service.js';
import type { AdminClientConfig, RendererConfig } from '../config.js';
import { RESOURCE_STATES, type TemplateAction, type TemplateType } from '../resources/types.js';
import { closeRenderer, configureRenderer, parseDataFile, renderTemplate } from '../templates/index.js';
import { checkPlan, crdSchemaOf, findingLine, reportSummary } from '../templates/plan-check.js';
import {
  deriveClusterKey,
  formatPayloadKeys,
  parsePayloadKeys,
  payloadKeysRefusal,
  type PayloadKey,
} from '../temporal/codec.js';
import type { WorkerVersions } from '../temporal/worker-versions.js';
import { retirable, summaryText } from '../temporal/worker-version-status.js';
import { AdminApiError, AdminClient, type AdminEndpoint } from './admin-client.js';
import { planSpecOf, reportText, summaryLine } from './dry-run-format.js';
import {
  BINDING_COLUMNS,
  adoptionText,
  FINAL_STATES,
  INSTANCE_COLUMNS,
  exitStatusOf,
  progressBar,
  progressSummary,
  table,
  type Columns,
} from './format.js';

export const EXIT = { ok: 0, failed: 1, usage: 2, incomplete: 3 } as const;
export type Exit = (typeof EXIT)[keyof typeof EXIT];

/** Where the command line reads its settings and writes its output. */
export interface CliIo {
  readonly stdout: { write(text: string): unknown; readonly isTTY?: boolean };
  readonly stderr: { write(text: string): unknown };
  /** The admin API's settings from the environment (src/config.ts); flags override them. */
  readonly adminConfig: AdminClientConfig;
  readonly rendererConfig: RendererConfig;
  /**
   * The worker deployment's versions (`worker-version`), connected when a command needs them: to
   * Temporal as the workers' settings say (src/config.ts, loadWorkerDeploymentTarget).
   */
  readonly workerVersions?: () => Promise<WorkerVersions>;
  /** Waits between two reads of a rollout's progress. @default setTimeout */
  readonly sleep?: (ms: number) => Promise<void>;
  /** INTEROP_PAYLOAD_KEYS from the environment: the master keys `payload-key derive` derives from. */
  readonly payloadKeys?: string;
}

/** A usage error found after parsing: printed like commander's, exit status 2. */
class UsageError extends Error {}

/** Consecutive failed reads `rollout watch` tolerates (a broker restarting) before it gives up. */
const WATCH_READ_ATTEMPTS = 5;

const wholeNumber =
  (min: number) =>
  (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < min) throw new InvalidArgumentError(`a whole number, ${min} or more`);
    return n;
  };

const positiveSeconds = (value: string): number => {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('a positive number of seconds');
  return n;
};

function defaultRequester(): string | undefined {
  try {
    return os.userInfo().username || undefined;
  } catch {
    return undefined;
  }
}

/** Runs the command line `argv` (without node and the script); resolves to the exit status. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<Exit> {
  let exit: Exit = EXIT.ok;
  const print = (text: string) => io.stdout.write(text);
  const sleep = io.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));

  const program = new Command('interoperator')
    .description(
      "The inter-operator's command line: render plan templates, and run a landscape over the admin API.",
    )
    .exitOverride()
    .showHelpAfterError()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      outputError: (text, write) => write(`interoperator: ${text.replace(/^error: /, '')}`),
    })
    .option('--url <url>', 'the broker (env INTEROP_ADMIN_URL)')
    .option('--username <name>', "the admin API's user (env INTEROP_ADMIN_USERNAME)")
    .option(
      '--password <password>',
      "the admin API's password (env INTEROP_ADMIN_PASSWORD; prefer it to the flag)",
    )
    .option('--as <name>', 'who you are, for the audit (X-Requested-By) (default: your login name)');

  /** The admin client, from the flags over the environment. */
  const client = (): AdminClient => {
    const flags = program.opts<{ url?: string; username?: string; password?: string; as?: string }>();
    const { adminConfig } = io;
    const requestedBy = flags.as ?? defaultRequester();
    const missing = (what: string, flag: string, env: string) =>
      new UsageError(`the admin API's ${what} is missing: give ${flag} or set ${env}`);
    const endpoint: AdminEndpoint = {
      url: flags.url ?? adminConfig.url ?? '',
      username: flags.username ?? adminConfig.username ?? '',
      password: flags.password ?? adminConfig.password ?? '',
      ...(requestedBy ? { requestedBy } : {}),
    };
    if (!endpoint.url) throw missing('URL', '--url', 'INTEROP_ADMIN_URL');
    if (!/^https?:\/\//.test(endpoint.url))
      throw new UsageError(`--url must be an http(s) URL, not "${endpoint.url}"`);
    if (!endpoint.username) throw missing('user', '--username', 'INTEROP_ADMIN_USERNAME');
    if (!endpoint.password) throw missing('password', '--password', 'INTEROP_ADMIN_PASSWORD');
    return new AdminClient(endpoint);
  };

  // template render -------------------------------------------------------------------------
  program
    .command('template')
    .description('plan templates')
    .command('render')
    .description('render TEMPLATE_FILE over DATA_FILE as the inter-operator renders plan templates')
    .argument('<TEMPLATE_FILE>', "the template ('-' for stdin)")
    .argument(
      '<DATA_FILE>',
      'JSON or YAML object: instance, plan, service, binding and source objects by key',
    )
    .addOption(
      new Option('--type <type>', 'the template language (helm: TEMPLATE_FILE renders the values)')
        .choices(['gotemplate', 'mustache', 'jsonnet', 'helm'])
        .default('gotemplate'),
    )
    .option('--chart <URL_OR_PATH>', "with --type helm: the chart's .tgz, an http(s) URL or a file")
    .option('--action <name>', 'the action the template serves, as errors name it', 'provision')
    .action(async (templateFile: string, dataFile: string, opts: RenderOpts) => {
      if (opts.type === 'helm' && !opts.chart) throw new UsageError('--type helm needs --chart URL_OR_PATH');
      if (opts.chart && opts.type !== 'helm') throw new UsageError('--chart goes with --type helm');
      exit = await render(templateFile, dataFile, opts, io);
    });

  // instances and bindings --------------------------------------------------------------------
  const listing = (parent: Command, what: string): Command =>
    parent
      .command('list')
      .description(`list the ${what}, as a table (or JSON)`)
      .option('--service <id>', 'of this service')
      .option('--plan <id>', 'of this plan')
      .option('--cluster <id>', 'on this cluster')
      .addOption(new Option('--state <state>', 'in this state').choices(RESOURCE_STATES))
      .option('--limit <n>', 'records read a page', wholeNumber(1))
      .option('--continue <token>', 'the page after the one that gave this token')
      .option('--all', 'every page, not only the first')
      .addOption(
        new Option('-o, --output <format>', 'table or json').choices(['table', 'json']).default('table'),
      );
  type ListOptions = {
    service?: string;
    plan?: string;
    cluster?: string;
    state?: RecordFilter['state'];
    revision?: string;
    limit?: number;
    continue?: string;
    all?: boolean;
    output: 'table' | 'json';
  };
  const list = async <T>(
    opts: ListOptions,
    read: (filter: RecordFilter, page: PageRequest) => Promise<Page<T>>,
    columns: Columns<T>,
  ) => {
    const filter: RecordFilter = {
      ...(opts.service ? { serviceId: opts.service } : {}),
      ...(opts.plan ? { planId: opts.plan } : {}),
      ...(opts.cluster ? { clusterId: opts.cluster } : {}),
      ...(opts.state ? { state: opts.state } : {}),
      ...(opts.revision ? { revision: opts.revision } : {}),
    };
    const items: T[] = [];
    let next = opts.continue;
    do {
      const page = await read(filter, {
        ...(opts.limit ? { limit: opts.limit } : {}),
        ...(next ? { continue: next } : {}),
      });
      items.push(...page.items);
      next = page.continue;
    } while (next && opts.all);
    if (opts.output === 'json')
      print(`${JSON.stringify({ items, ...(next ? { continue: next } : {}) }, null, 2)}\n`);
    else print(table(items, columns));
    if (next && opts.output === 'table') io.stderr.write(`more records: add --continue ${next} (or --all)\n`);
  };

  const forceRemove = async (kind: 'instance' | 'binding', id: string) => {
    const removed = await client().forceRemove(kind, id);
    print(
      `${kind} ${id}: record ${removed.namespace}/${removed.name} released` +
        `${removed.deletionRequested ? ', deletion requested' : ''}` +
        `${removed.finalizerRemoved ? ', finalizer removed' : ''}` +
        `${removed.operationStopped ? ', its running operation terminated' : ''}` +
        `${removed.reservationsReleased?.length ? `, reservation released on ${removed.reservationsReleased.join(', ')}` : ''}` +
        ` (by ${removed.requestedBy})\n`,
    );
  };

  const instances = program.command('instances').alias('instance').description('service instances');
  listing(instances, 'instance records')
    .option('--revision <revision>', 'last updated to this plan revision')
    .action((opts: ListOptions) => list(opts, (f, p) => client().listInstances(f, p), INSTANCE_COLUMNS));
  instances
    .command('update')
    .description("update an instance to its plan's current revision, with the request it holds")
    .argument('<INSTANCE_ID>')
    .action(async (id: string) => {
      const started = await client().updateInstance(id);
      print(
        `update of ${started.instanceId} started: operation ${started.operation}` +
          `${started.revision ? `, to revision ${started.revision}` : ''}\n`,
      );
    });
  instances
    .command('force-remove')
    .description('remove the record of an instance whose deletion cannot finish (its cluster is gone)')
    .argument('<INSTANCE_ID>')
    .action(async (id: string) => forceRemove('instance', id));
  instances
    .command('action')
    .description("run a custom action of the instance's plan (x-<name>, e.g. x-backup) on the instance")
    .argument('<INSTANCE_ID>')
    .argument('<ACTION>', 'the action, x-<name>')
    .option('--param <key=value>', 'a parameter of the action (a string; repeat for more)', collectParam, {})
    .option('--parameters <file>', "the action's parameters: a JSON or YAML object ('-' for stdin)")
    .option('--wait', 'wait until the action ends; exit 0 when it succeeded, 1 when it failed')
    .option('--interval <seconds>', 'between two reads while waiting', positiveSeconds, 2)
    .action(
      async (
        id: string,
        action: string,
        opts: { param: Record<string, string>; parameters?: string; wait?: boolean; interval: number },
      ) => {
        exit = await runAction(client(), id, action, opts);
      },
    );

  instances
    .command('rotate-secret')
    .description('rotate a generated secret of the instance (an SFSecret of its plan): its next version')
    .argument('<INSTANCE_ID>')
    .argument('<NAME>', "the SFSecret's name, as the record's status.generatedSecrets lists it")
    .option('--wait', 'wait until the rotation ends; exit 0 when it succeeded, 1 when it failed')
    .option('--interval <seconds>', 'between two reads while waiting', positiveSeconds, 2)
    .action(async (id: string, secret: string, opts: { wait?: boolean; interval: number }) => {
      const admin = client();
      const started = await admin.rotateSecret(id, secret);
      print(
        `rotation of ${secret} on ${id} started: run ${started.runId} of workflow ${started.workflowId}\n`,
      );
      exit = opts.wait ? await follow(admin, id, started.action, started.runId, opts.interval) : EXIT.ok;
    });

  instances
    .command('move')
    .description('move the instance to another cluster, as its plan says its instances move')
    .argument('<INSTANCE_ID>')
    .option('--to <cluster>', "the cluster to move to; else the plan's scheduler chooses among the others")
    .option('--wait', 'wait until the move ends; exit 0 when it succeeded, 1 when it failed')
    .option('--interval <seconds>', 'between two reads while waiting', positiveSeconds, 2)
    .action(async (id: string, opts: { to?: string; wait?: boolean; interval: number }) => {
      const admin = client();
      const started = await admin.moveInstance(id, opts.to);
      print(
        `move of ${id}${opts.to ? ` to cluster ${opts.to}` : ''} started: run ${started.runId} of workflow ${started.workflowId}\n`,
      );
      exit = opts.wait ? await follow(admin, id, started.action, started.runId, opts.interval) : EXIT.ok;
    });

  const bindings = program.command('bindings').description('service bindings');
  listing(bindings, 'binding records').action((opts: ListOptions) =>
    list(opts, (f, p) => client().listBindings(f, p), BINDING_COLUMNS),
  );
  bindings
    .command('force-remove')
    .description('remove the record of a binding whose deletion cannot finish (its cluster is gone)')
    .argument('<BINDING_ID>')
    .action(async (id: string) => forceRemove('binding', id));

  program
    .command('adopt')
    .description(
      'adopt in place the instance and binding records a Service Fabrik landscape left in the master (docs/migrating-from-service-fabrik.md); exit 1 when any cannot be adopted',
    )
    .option('--dry-run', 'only list what would be adopted, and why the others cannot be')
    .option('-o, --output <format>', 'table or json', 'table')
    .action(async (opts: { dryRun?: boolean; output: string }) => {
      const report = await client().adoptServiceFabrik(Boolean(opts.dryRun));
      print(opts.output === 'json' ? `${JSON.stringify(report, null, 2)}\n` : adoptionText(report));
      if (report.refused.length > 0) exit = EXIT.failed;
    });

  // rollouts -----------------------------------------------------------------------------------
  const rollout = program
    .command('rollout')
    .description("rollouts of a plan's current revision to its instances");
  rollout
    .command('start')
    .description("start the rollout of the plan's current revision (or redirect the running one to it)")
    .argument('<PLAN_ID>')
    .option('--canary <n>', 'instances updated first, alone', wholeNumber(0))
    .option('--max-concurrency <n>', 'most updates at once in a wave', wholeNumber(1))
    .option('--soak-seconds <n>', 'pause after the canary batch and after each wave', wholeNumber(0))
    .option('--max-failures <n>', 'failed updates tolerated; one more halts the rollout', wholeNumber(0))
    .action(async (planId: string, opts: Partial<RolloutSettings>) => {
      const progress = await client().startRollout(planId, opts);
      print(`rollout of ${planId} to revision ${progress.revision}: ${progressSummary(progress)}\n`);
    });
  for (const action of ['pause', 'resume', 'abort'] as const) {
    rollout
      .command(action)
      .description(`${action} the plan's rollout`)
      .argument('<PLAN_ID>')
      .action(async (planId: string) => {
        const progress = await client().steerRollout(planId, action);
        print(`rollout of ${planId} to revision ${progress.revision}: ${progressSummary(progress)}\n`);
      });
  }
  rollout
    .command('status')
    .description("the plan's rollout: where it stands, and its failed instances")
    .argument('<PLAN_ID>')
    .addOption(new Option('-o, --output <format>', 'text or json').choices(['text', 'json']).default('text'))
    .action(async (planId: string, opts: { output: 'text' | 'json' }) => {
      const progress = await client().rolloutProgress(planId);
      if (!progress) throw new AdminApiError(404, `the plan ${planId} has no rollout`);
      if (opts.output === 'json') print(`${JSON.stringify(progress, null, 2)}\n`);
      else
        print(
          `rollout of ${planId} to revision ${progress.revision}: ${progressSummary(progress)}\n${failures(progress)}`,
        );
    });
  rollout
    .command('list')
    .description(
      "every rollout, of plans, of referenced objects' changes and drains of clusters, newest first, with its id",
    )
    .addOption(new Option('-o, --output <format>', 'text or json').choices(['text', 'json']).default('text'))
    .action(async (opts: { output: 'text' | 'json' }) => {
      const items = await client().listRollouts();
      if (opts.output === 'json') {
        print(`${JSON.stringify(items, null, 2)}\n`);
        return;
      }
      for (const r of items) {
        const of = r.drain
          ? `cluster ${r.drain.clusterId}`
          : r.reference
            ? `${r.reference.kind} ${r.reference.namespace}/${r.reference.name} for plan ${r.planId}`
            : `plan ${r.planId}`;
        print(
          `${r.kind}\t${of}\t${r.progress ? progressSummary({ ...r.progress, results: {} }) : '-'}\t${r.id}\n`,
        );
      }
    });
  for (const action of ['pause', 'resume', 'abort'] as const)
    rollout
      .command(`${action}-id`)
      .description(
        `${action} any rollout by its id (as rollout list shows it), a referenced object's change too`,
      )
      .argument('<ROLLOUT_ID>')
      .action(async (rolloutId: string) => {
        const progress = await client().steerRolloutById(rolloutId, action);
        print(`rollout ${rolloutId}: ${progressSummary(progress)}\n`);
      });
  rollout
    .command('watch')
    .description(
      'follow the rollout until it ends; exit 0 when done, 1 when halted, aborted or with failed instances',
    )
    .argument('<PLAN_ID>')
    .option('--interval <seconds>', 'between two reads', positiveSeconds, 2)
    .action(async (planId: string, opts: { interval: number }) => {
      const admin = client();
      exit = await watch(
        () => admin.rolloutProgress(planId),
        `the plan ${planId} has no rollout`,
        opts.interval * 1000,
      );
    });

  // clusters -----------------------------------------------------------------------------------
  const cluster = program.command('cluster').description('the clusters instances are placed on');
  cluster
    .command('drain')
    .description(
      'cordon the cluster and move every instance placed there to other clusters, as a rollout (pause, resume, abort it with rollout pause-id and the like)',
    )
    .argument('<CLUSTER_ID>')
    .option('--canary <n>', 'instances moved first, alone', wholeNumber(0))
    .option('--max-concurrency <n>', 'most moves at once in a wave', wholeNumber(1))
    .option('--soak-seconds <n>', 'pause after the canary batch and after each wave', wholeNumber(0))
    .option('--max-failures <n>', 'failed moves tolerated; one more halts the drain', wholeNumber(0))
    .option(
      '--wait',
      'follow the drain until it ends; exit 0 when the cluster is drained, 1 when it halted, was aborted or is blocked',
    )
    .option('--interval <seconds>', 'between two reads while waiting', positiveSeconds, 2)
    .action(
      async (clusterId: string, opts: Partial<RolloutSettings> & { wait?: boolean; interval: number }) => {
        const { wait, interval, ...settings } = opts;
        const admin = client();
        const progress = await admin.drainCluster(clusterId, settings);
        print(`drain of cluster ${clusterId}: ${progressSummary(progress)}\n`);
        if (!wait) return;
        const drain = (await admin.listRollouts()).find(
          (r) => r.kind === 'drain' && r.drain?.clusterId === clusterId,
        );
        if (!drain) throw new AdminApiError(404, `the drain of cluster ${clusterId} is not listed`);
        print(`drain ${drain.id}\n`);
        exit = await watch(
          () => admin.rolloutProgressById(drain.id),
          `there is no rollout ${drain.id}`,
          interval * 1000,
        );
      },
    );

  planCommands(program, client, print, (status) => (exit = status));
  workerVersionCommands(program, io, sleep, (status) => (exit = status));
  payloadKeyCommands(program, io, print);

  /**
   * Follows a rollout, read by `read` (`missing` says what it is when there is none): a bar
   * redrawn in place on a terminal, else a line at each change.
   */
  async function watch(
    read: () => Promise<RolloutProgress | undefined>,
    missing: string,
    intervalMs: number,
  ): Promise<Exit> {
    const tty = Boolean(io.stdout.isTTY);
    let last = '';
    let failedReads = 0;
    for (;;) {
      let progress: RolloutProgress | undefined;
      try {
        progress = await read();
        failedReads = 0;
      } catch (err) {
        const transient = err instanceof AdminApiError && (err.status === 0 || err.status >= 500);
        if (!transient || ++failedReads >= WATCH_READ_ATTEMPTS) throw err;
        await sleep(intervalMs);
        continue;
      }
      if (!progress) throw new AdminApiError(404, missing);
      const line = tty ? progressBar(progress) : progressSummary(progress);
      if (tty) print(`\r\u001b[2K${line}`);
      else if (line !== last) print(`${line}\n`);
      last = line;
      if (FINAL_STATES.has(progress.state)) {
        if (tty) print('\n');
        print(failures(progress));
        return exitStatusOf(progress);
      }
      await sleep(intervalMs);
    }
  }

  /** `instances action`: starts the action, and with `--wait` follows it to its end. */
  async function runAction(
    admin: AdminClient,
    instanceId: string,
    action: string,
    opts: { param: Record<string, string>; parameters?: string; wait?: boolean; interval: number },
  ): Promise<Exit> {
    const parameters = {
      ...(opts.parameters ? parametersFile(opts.parameters) : {}),
      ...opts.param,
    };
    const started = await admin.runAction(
      instanceId,
      action,
      Object.keys(parameters).length > 0 ? parameters : undefined,
    );
    print(`${action} on ${instanceId} started: run ${started.runId} of workflow ${started.workflowId}\n`);
    if (!opts.wait) return EXIT.ok;
    return follow(admin, instanceId, action, started.runId, opts.interval);
  }

  /** Follows a run of an action (or a rotation) to its end: exit 0 when it succeeded, 1 when it failed. */
  async function follow(
    admin: AdminClient,
    instanceId: string,
    action: string,
    runId: string,
    interval: number,
  ): Promise<Exit> {
    let failedReads = 0;
    for (;;) {
      await sleep(interval * 1000);
      let state;
      try {
        state = await admin.actionState(instanceId, action, runId);
        failedReads = 0;
      } catch (err) {
        const transient = err instanceof AdminApiError && (err.status === 0 || err.status >= 500);
        if (!transient || ++failedReads >= WATCH_READ_ATTEMPTS) throw err;
        continue;
      }
      if (state.state === 'in progress') continue;
      print(
        `${action} on ${instanceId} ${state.state}${state.description ? `: ${state.description}` : ''}\n`,
      );
      return state.state === 'succeeded' ? EXIT.ok : EXIT.failed;
    }
  }

  try {
    await program.parseAsync([...argv], { from: 'user' });
    return exit;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    if (err instanceof UsageError) {
      io.stderr.write(`interoperator: ${err.message}\n`);
      return EXIT.usage;
    }
    if (err instanceof AdminApiError) {
      io.stderr.write(
        `interoperator: ${err.description}${err.status ? ` (${err.status}${err.code ? ` ${err.code}` : ''})` : ''}\n`,
      );
      return EXIT.failed;
    }
    throw err;
  }
}

/** `plan check` and `plan dry-run`: a plan before it is applied, and what a plan change would do to its instances. */
function planCommands(
  program: Command,
  client: () => AdminClient,
  print: (text: string) => void,
  setExit: (exit: Exit) => void,
): void {
  const plan = program.command('plan').description('plans');
  plan
    .command('check')
    .description(
      'check an SFPlan before applying it, offline: its form, its templates rendered over sample data, and ' +
        "the status template's answer for each operation (exit 1 when it has errors)",
    )
    .requiredOption(
      '-f, --file <file>',
      "the SFPlan, YAML or JSON; again for the plan's SFService (both may be in one file)",
      collectFile,
      [],
    )
    .addOption(new Option('-o, --output <format>', 'text or json').choices(['text', 'json']).default('text'))
    .action(async (opts: { file: string[]; output: 'text' | 'json' }) => {
      setExit(await checkPlans(opts.file, opts.output, print));
    });
  plan
    .command('dry-run')
    .description(
      "what a new spec of the plan would change in each of its instances' objects; nothing is applied " +
        '(exit 3 when some instances could not be dry run)',
    )
    .argument('<PLAN_ID>')
    .requiredOption(
      '-f, --file <file>',
      "the plan's new spec: an SFPlan or its spec, YAML or JSON ('-' for stdin)",
    )
    .option('--limit <n>', 'instances a page (at most 200)', wholeNumber(1))
    .addOption(new Option('-o, --output <format>', 'text or json').choices(['text', 'json']).default('text'))
    .action(async (planId: string, opts: { file: string; limit?: number; output: 'text' | 'json' }) => {
      let spec: Record<string, unknown>;
      try {
        spec = planSpecOf(readInput(opts.file, 'spec file'));
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
      const admin = client();
      const pages: PlanDryRunReport[] = [];
      let next: string | undefined;
      do {
        const page = await admin.dryRunPlan(planId, spec, {
          ...(opts.limit ? { limit: opts.limit } : {}),
          ...(next ? { continue: next } : {}),
        });
        pages.push(page);
        if (opts.output === 'text') print(reportText(page));
        next = page.continue;
      } while (next);
      const summary = {
        changed: pages.reduce((n, p) => n + p.summary.changed, 0),
        unchanged: pages.reduce((n, p) => n + p.summary.unchanged, 0),
        failed: pages.reduce((n, p) => n + p.summary.failed, 0),
      };
      const last = pages[pages.length - 1]!;
      if (opts.output === 'json')
        print(
          `${JSON.stringify({ ...last, instances: pages.flatMap((p) => p.instances), summary, continue: undefined }, null, 2)}\n`,
        );
      else print(summaryLine(planId, last.revision, summary, last.currentRevision));
      setExit(summary.failed > 0 ? EXIT.incomplete : EXIT.ok);
    });
}

/**
 * `payload-key derive --cluster ID`: the payload keys of a cluster with a worker of its own,
 * derived from the master keys in INTEROP_PAYLOAD_KEYS (src/temporal/codec.ts), printed as that
 * worker's INTEROP_PAYLOAD_KEYS, in the same order (the first encrypts). Offline.
 */
function payloadKeyCommands(program: Command, io: CliIo, print: (text: string) => void): void {
  program
    .command('payload-key')
    .description('the payload encryption keys of the workflows’ histories')
    .command('derive')
    .description(
      'print the keys of a cluster with a worker of its own, derived from the master keys in ' +
        'INTEROP_PAYLOAD_KEYS, as that worker’s INTEROP_PAYLOAD_KEYS',
    )
    .requiredOption('--cluster <id>', 'the cluster’s id in the registry (its INTEROP_CLUSTER_ID)')
    .action((opts: { cluster: string }) => {
      const clusterId = opts.cluster.trim();
      if (!clusterId) throw new UsageError('--cluster needs the cluster’s id');
      if (!io.payloadKeys)
        throw new UsageError('INTEROP_PAYLOAD_KEYS is not set: set it to the landscape’s master keys');
      let keys: PayloadKey[];
      try {
        keys = parsePayloadKeys(io.payloadKeys);
      } catch (err) {
        throw new UsageError(`INTEROP_PAYLOAD_KEYS: ${(err as Error).message}`);
      }
      const refusal = payloadKeysRefusal(keys);
      if (refusal) throw new UsageError(`INTEROP_PAYLOAD_KEYS: ${refusal}`);
      print(`${formatPayloadKeys(keys.map((key) => deriveClusterKey(key, clusterId)))}\n`);
    });
}

/** Seconds between two looks at a version's drainage. */
const DRAINAGE_CHECK_SECONDS = 10;

/**
 * `worker-version`: the worker deployment's versions (Worker Versioning, docs/operations.md):
 * where each build stands, making a build current (or ramping it), and whether an old build's
 * workers are still needed. Over Temporal, not the admin API: the chart's upgrade hook runs them
 * beside the workers, with the workers' settings.
 */
function workerVersionCommands(
  program: Command,
  io: CliIo,
  sleep: (ms: number) => Promise<void>,
  setExit: (exit: Exit) => void,
): void {
  /** Runs `work` on the deployment's versions; a failure prints its message, exit 1. */
  const withVersions = async (work: (versions: WorkerVersions) => Promise<Exit>): Promise<void> => {
    if (!io.workerVersions) throw new UsageError('worker-version needs the Temporal settings of the workers');
    let versions: WorkerVersions | undefined;
    try {
      versions = await io.workerVersions();
      setExit(await work(versions));
    } catch (err) {
      if (err instanceof UsageError) throw err;
      io.stderr.write(`interoperator: ${err instanceof Error ? err.message : String(err)}\n`);
      setExit(EXIT.failed);
    } finally {
      await versions?.close();
    }
  };
  const percent = (value: string): number => {
    const n = Number(value);
    if (!Number.isFinite(n) || n <= 0 || n >= 100)
      throw new InvalidArgumentError('a percentage above 0 and below 100 (without --ramp: all of them)');
    return n;
  };
  const versionCommand = program
    .command('worker-version')
    .description("the workers' versions (Worker Versioning): which build runs what, upgrades and drainage");
  versionCommand
    .command('status')
    .description('the current build, the ramping one, and where every build of the worker deployment stands')
    .addOption(new Option('-o, --output <format>', 'text or json').choices(['text', 'json']).default('text'))
    .action((opts: { output: 'text' | 'json' }) =>
      withVersions(async (versions) => {
        const summary = await versions.describe();
        io.stdout.write(
          opts.output === 'json' ? `${JSON.stringify(summary, null, 2)}\n` : summaryText(summary),
        );
        return EXIT.ok;
      }),
    );
  versionCommand
    .command('set-current')
    .description(
      'send the new operations and the long-lived workflows to BUILD_ID (or, with --ramp, that share of ' +
        'the new operations); operations already running stay on their build',
    )
    .argument('<BUILD_ID>')
    .option('--ramp <percent>', 'only this share of the new operations (above 0, below 100)', percent)
    .option('--wait-seconds <n>', "how long to wait for the build's workers to poll", wholeNumber(0), 300)
    .action((buildId: string, opts: { ramp?: number; waitSeconds: number }) =>
      withVersions(async (versions) => {
        await versions.promote(buildId, {
          ...(opts.ramp !== undefined ? { rampPercent: opts.ramp } : {}),
          waitMs: opts.waitSeconds * 1000,
        });
        const summary = await versions.describe();
        io.stdout.write(
          `${summary.deploymentName}.${buildId} is ${opts.ramp !== undefined ? `ramping (${opts.ramp}% of new operations)` : 'current'}\n`,
        );
        return EXIT.ok;
      }),
    );
  versionCommand
    .command('drained')
    .description(
      "whether BUILD_ID's workers may be removed: exit 0 when no open workflow needs them, 1 while " +
        'operations pinned to it are still open',
    )
    .argument('<BUILD_ID>')
    .option('--wait-seconds <n>', 'wait up to this long for it to drain', wholeNumber(0), 0)
    .action((buildId: string, opts: { waitSeconds: number }) =>
      withVersions(async (versions) => {
        const deadline = Date.now() + opts.waitSeconds * 1000;
        for (;;) {
          const summary = await versions.describe();
          const state = summary.versions.find((v) => v.buildId === buildId)?.state ?? 'unknown';
          if (retirable(summary, buildId)) {
            io.stdout.write(`${summary.deploymentName}.${buildId} is ${state}: its workers may be removed\n`);
            return EXIT.ok;
          }
          if (Date.now() + DRAINAGE_CHECK_SECONDS * 1000 > deadline) {
            io.stdout.write(`${summary.deploymentName}.${buildId} is ${state}: keep its workers\n`);
            return EXIT.failed;
          }
          await sleep(DRAINAGE_CHECK_SECONDS * 1000);
        }
      }),
    );
}

/** The failed instances of a rollout (and a drain's unmovable ones), one line each with why. */
function failures(progress: RolloutProgress): string {
  return Object.entries(progress.results)
    .filter(([, r]) => r.state === 'failed' || r.state === 'unmovable')
    .map(([id, r]) => `${r.state}: ${id}${r.description ? `: ${r.description}` : ''}\n`)
    .join('');
}

/** Adds one `-f FILE` to those given before. */
function collectFile(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Where the SFPlan CRD is, from this file in src/cli or dist/src/cli: the chart's crds. */
function sfplanCrdFile(): string | undefined {
  const tail = 'charts/interoperator/crds/osb.servicefabrik.io_sfplans.yaml';
  for (const up of ['../../', '../../../']) {
    const file = fileURLToPath(new URL(`${up}${tail}`, import.meta.url));
    if (existsSync(file)) return file;
  }
  return undefined;
}

/**
 * `plan check`: reads the files (every SFPlan in them, and an SFService), checks each plan, and
 * prints its findings and a summary line (or JSON). Exit 1 when a plan has errors; an unreadable
 * file is a usage error.
 */
async function checkPlans(
  files: readonly string[],
  output: 'text' | 'json',
  print: (text: string) => void,
): Promise<Exit> {
  const plans: unknown[] = [];
  let service: unknown;
  for (const file of files) {
    let docs: unknown[];
    try {
      docs = parseAllDocuments(readInput(file, 'file')).map((doc) => {
        if (doc.errors.length > 0) throw new Error(`${file} is not YAML or JSON: ${doc.errors[0]!.message}`);
        return doc.toJS({ maxAliasCount: 100 }) as unknown;
      });
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    for (const doc of docs) {
      const kind = (doc as { kind?: unknown } | null)?.kind;
      if (kind === 'SFService') service = doc;
      else if (doc !== null && doc !== undefined) plans.push(doc);
    }
  }
  if (plans.length === 0) throw new UsageError(`no SFPlan in ${files.join(', ')}`);
  const crdFile = sfplanCrdFile();
  const crdSchema = crdFile ? crdSchemaOf(parseYaml(readFileSync(crdFile, 'utf8'))) : undefined;
  const reports = [];
  try {
    for (const plan of plans)
      reports.push(
        await checkPlan({ plan, ...(service ? { service } : {}), ...(crdSchema ? { crdSchema } : {}) }),
      );
  } finally {
    await closeRenderer();
  }
  if (output === 'json') print(`${JSON.stringify(reports.length === 1 ? reports[0] : reports, null, 2)}\n`);
  else
    for (const checked of reports)
      print(
        [...checked.findings.map(findingLine), reportSummary(checked)].map((line) => `${line}\n`).join(''),
      );
  return reports.some((r) => r.errors > 0) ? EXIT.failed : EXIT.ok;
}

/** Adds one `--param key=value` to those given before. */
function collectParam(value: string, previous: Record<string, string>): Record<string, string> {
  const at = value.indexOf('=');
  if (at < 1) throw new InvalidArgumentError('key=value, with a key');
  return { ...previous, [value.slice(0, at)]: value.slice(at + 1) };
}

/** The parameters file of an action: one JSON or YAML object. */
function parametersFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readInput(file, 'parameters file');
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  let value: unknown;
  try {
    value = parseYaml(text, { maxAliasCount: 100 }) as unknown;
  } catch (err) {
    throw new UsageError(`the parameters file ${file} is not JSON or YAML: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new UsageError(`the parameters file ${file} must hold an object`);
  return value as Record<string, unknown>;
}

function readChart(file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new Error(`cannot read the chart ${file}: ${(err as Error).message}`);
  }
}

function readInput(file: string, what: string): string {
  try {
    return readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read the ${what} ${file}: ${(err as Error).message}`);
  }
}

/** Options of `template render`. */
interface RenderOpts {
  readonly type: TemplateType;
  readonly action: string;
  readonly chart?: string;
}

/**
 * `template render`: prints the output byte for byte; a failed render prints its error, exit 1.
 * With `--type helm`, the template renders the values of the chart (`--chart`: a URL, fetched as
 * the worker fetches it, or a file), whose manifests are printed.
 */
async function render(templateFile: string, dataFile: string, opts: RenderOpts, io: CliIo): Promise<Exit> {
  try {
    if (Object.keys(io.rendererConfig).length > 0) await configureRenderer(io.rendererConfig);
    const content = readInput(templateFile, 'template file');
    const data = parseDataFile(readInput(dataFile, 'data file'));
    // The action only names the template in errors; any name is fine here.
    const action = opts.action as TemplateAction;
    const chartUrl = opts.chart && /^https?:\/\//i.test(opts.chart) ? opts.chart : undefined;
    const chart = opts.chart && !chartUrl ? readChart(opts.chart) : undefined;
    const template = { action, type: opts.type, content, ...(chartUrl ? { url: chartUrl } : {}) };
    io.stdout.write(await renderTemplate(template, action, data, chart ? { chart } : {}));
    return EXIT.ok;
  } catch (err) {
    io.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    return EXIT.failed;
  } finally {
    await closeRenderer();
  }
}
