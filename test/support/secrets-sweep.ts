/**
 * The secrets sweep: after a run, looks for every credential the run made or used in everything
 * the run left readable: each workflow history of the run's task queue, decoded with the run's
 * payload codec (a plain grep of encrypted history proves nothing), the search attributes and
 * memos of its executions, the processes' logs, and the records (their statuses' descriptions and
 * annotations) and Kubernetes Events of the namespaces named. A hit names the credential and where
 * it was found, never the value.
 */
import { readFileSync } from 'node:fs';
import type { Payload } from '@temporalio/common';
import { parsePayloadKeys } from '../../src/temporal/codec.js';
import { payloadCodec } from '../../src/temporal/connection.js';
import type { ClusterClient } from '../../src/kube/clients.js';
import { listRecordsAnywhere } from '../../src/kube/custom-objects.js';
import { SFSERVICEBINDING, SFSERVICEINSTANCE } from '../../src/resources/types.js';
import { environment, temporalClient } from './env.js';

/** A credential to look for: what it is (for the report) and its value. */
export type Credential = readonly [what: string, value: string];

export interface SweepInput {
  /** The run's task queue: every execution on it is read. */
  readonly taskQueue: string;
  /** The run's `INTEROP_PAYLOAD_KEYS`, to decode what the workflows stored. */
  readonly payloadKeys: string;
  /** The credentials to look for (each at least 8 characters, so a hit is no coincidence). */
  readonly credentials: readonly Credential[];
  /** Log files of the run's processes. */
  readonly logFiles?: readonly string[];
  /** The master, and the label selector of the run's records (their statuses and annotations are read). */
  readonly records?: { readonly master: ClusterClient; readonly labelSelector: string };
  /** Namespaces whose Kubernetes Events are read (descriptions of what happened). */
  readonly eventNamespaces?: readonly string[];
  /** More texts the run's clients saw (last_operation descriptions, error bodies), by name. */
  readonly texts?: Readonly<Record<string, string>>;
}

export interface SweepResult {
  /** `<credential> in <where>` for every credential found. */
  readonly hits: string[];
  /** How many executions were read, and how many payloads decoded in their histories. */
  readonly executions: number;
  readonly payloads: number;
  /** Everything read, decoded, by where it came from: for checks that the sweep saw what it should. */
  readonly corpus: ReadonlyMap<string, string>;
}

const isPayload = (value: unknown): value is Payload =>
  typeof value === 'object' &&
  value !== null &&
  (value as Payload).data instanceof Uint8Array &&
  typeof (value as Payload).metadata === 'object' &&
  (value as Payload).metadata !== null;

/** Every Payload in a decoded protobuf message (history events, descriptions), depth first. */
function payloadsIn(value: unknown, found: Payload[] = [], seen = new Set<object>()): Payload[] {
  if (typeof value !== 'object' || value === null || value instanceof Uint8Array || seen.has(value))
    return found;
  seen.add(value);
  if (isPayload(value)) {
    found.push(value);
    return found;
  }
  for (const child of Object.values(value as Record<string, unknown>)) payloadsIn(child, found, seen);
  return found;
}

/** A protobuf message as text, its bytes as UTF-8 (what a grep of the stored history would see). */
const asText = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    v instanceof Uint8Array ? Buffer.from(v).toString('utf8') : typeof v === 'bigint' ? String(v) : v,
  ) ?? '';

/**
 * Reads everything of the run and returns where each credential is found. Decodes every payload of
 * each history with the codec (inputs, results, memos, headers, failures' encoded attributes); an
 * encrypted payload it cannot decode fails the sweep, since a key that does not fit would hide
 * everything.
 */
export async function sweepForSecrets(input: SweepInput): Promise<SweepResult> {
  for (const [what, value] of input.credentials)
    if (value.length < 8) throw new Error(`${what} is too short to look for without coincidences`);
  const codec = payloadCodec({ payloadKeys: parsePayloadKeys(input.payloadKeys) });
  const corpus = new Map<string, string>();
  let executions = 0;
  let payloads = 0;

  const temporal = await temporalClient(input.payloadKeys);
  try {
    const { namespace } = environment().temporal;
    for await (const execution of temporal.client.workflow.list({
      query: `TaskQueue = "${input.taskQueue}"`,
    })) {
      executions++;
      const where = `workflow ${execution.workflowId} (${execution.runId})`;
      const history = await temporal.client.workflow
        .getHandle(execution.workflowId, execution.runId)
        .fetchHistory();
      const decoded: string[] = [asText(history)];
      const pending = payloadsIn(history);
      while (pending.length > 0) {
        const [plain] = await codec.decode([pending.pop()!]);
        payloads++;
        decoded.push(Buffer.from(plain!.data ?? new Uint8Array()).toString('utf8'));
      }
      // The execution as visibility lists it: search attributes and memo, as stored.
      const described = await temporal.client.workflowService.describeWorkflowExecution({
        namespace,
        execution: { workflowId: execution.workflowId, runId: execution.runId },
      });
      decoded.push(asText(described.workflowExecutionInfo?.searchAttributes));
      for (const memo of payloadsIn(described.workflowExecutionInfo?.memo)) {
        const [plain] = await codec.decode([memo]);
        decoded.push(Buffer.from(plain!.data ?? new Uint8Array()).toString('utf8'));
      }
      corpus.set(where, decoded.join('\n'));
    }
  } finally {
    await temporal.close();
  }

  for (const file of input.logFiles ?? []) corpus.set(`log ${file}`, readFileSync(file, 'utf8'));
  if (input.records) {
    const { master, labelSelector } = input.records;
    for (const kind of [SFSERVICEINSTANCE, SFSERVICEBINDING]) {
      for (const record of await listRecordsAnywhere(master, kind, undefined, labelSelector)) {
        corpus.set(`${kind.kind} ${record.metadata.namespace}/${record.metadata.name}`, asText(record));
      }
    }
  }
  for (const namespace of input.eventNamespaces ?? []) {
    const master = input.records?.master;
    if (!master) throw new Error('reading Events needs the master (records.master)');
    const events = await master.core.listNamespacedEvent({ namespace });
    corpus.set(`Events of ${namespace}`, asText(events.items));
  }
  for (const [name, text] of Object.entries(input.texts ?? {})) corpus.set(name, text);

  const hits: string[] = [];
  for (const [what, value] of input.credentials) {
    for (const [where, text] of corpus) if (text.includes(value)) hits.push(`${what} in ${where}`);
  }
  return { hits, executions, payloads, corpus };
}
