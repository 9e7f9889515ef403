/**
 * The rule between an instance and its bindings: no bind or unbind while the instance is being
 * provisioned, updated or deprovisioned, and no update or deprovision while a bind or unbind of
 * the instance runs. Both sides write their claim to the instance's record, each on the condition
 * that the record is still the one it checked (its resourceVersion), so of two racing requests the
 * second one to write always sees the first and is refused with 422 `ConcurrencyError`.
 *
 * A claim holds while its workflow runs, as Temporal says, and before that, for a short grace
 * period, while its workflow is being started; stale claims are dropped by the next write. The
 * broker claims for a platform's requests, a plan's rollout for the updates it starts.
 */
import type { ClusterClient } from './clients.js';
import { getRecord, patchRecord } from './custom-objects.js';
import { statusCodeOf } from './errors.js';
import { concurrencyError, notFound } from '../osb/errors.js';
import {
  ANNOTATIONS,
  bindingWorkflowId,
  instanceNamespace,
  instanceWorkflowId,
  resourceName,
} from '../resources/names.js';
import {
  claimed,
  formatClaims,
  parseClaims,
  released,
  withinGrace,
  type ClaimSide,
  type OperationClaim,
  type OperationClaims,
} from '../resources/operation-claims.js';
import { SFSERVICEINSTANCE, type SFServiceInstance } from '../resources/types.js';

/** Writes lost to another writer of the record before the claim gives up (the request is retried). */
const MAX_ATTEMPTS = 8;

export interface ClaimDeps {
  readonly master: ClusterClient;
  readonly instanceNamespace?: string;
  /** The latest run of a workflow id, if there is one, with the operation its memo names. */
  readonly latest: (workflowId: string) => Promise<ClaimedRun | undefined>;
  readonly now?: () => number;
}

/** What a claim's workflow run tells of it. */
export interface ClaimedRun {
  readonly running: boolean;
  readonly startedAt: number;
  readonly memo?: { readonly operation: string };
}

/** How far the Temporal server's clock may be behind the brokers' when a run's start is compared with a claim. */
const CLOCK_SKEW_MS = 5_000;

/**
 * Whether a claim still holds: its workflow runs, or it is within its grace period and no run of
 * its operation has started and ended since it was made.
 */
export function holds(claim: OperationClaim, run: ClaimedRun | undefined, now: number): boolean {
  if (run?.running) return true;
  if (!withinGrace(claim, now)) return false;
  const ended =
    run !== undefined &&
    run.memo?.operation === claim.operation &&
    run.startedAt >= Date.parse(claim.at) - CLOCK_SKEW_MS;
  return !ended;
}

/** Undoes a claim whose workflow could not be started. */
export type ReleaseClaim = () => Promise<void>;

export class InstanceClaims {
  constructor(private readonly deps: ClaimDeps) {}

  /**
   * Claims the instance for `side`'s operation; `known` is its record if the caller has just read
   * it (the claim is written on the condition that the record has not changed since).
   *
   * @throws OsbError 422 `ConcurrencyError` while an operation of the other side runs (or is being
   *   started) on the instance; 404 for a binding's operation on an instance that has no record.
   */
  async claim(instanceId: string, side: ClaimSide, known?: SFServiceInstance): Promise<ReleaseClaim> {
    const at = await this.claimAt(instanceId, side, known);
    return at === undefined ? async () => undefined : () => this.release(instanceId, side, at);
  }

  /**
   * Claims the instance for `side`'s operation, as {@link claim} does: the time of the claim (its
   * key for {@link release}), or undefined when the instance has no record (nothing to hold).
   */
  async claimAt(instanceId: string, side: ClaimSide, known?: SFServiceInstance): Promise<string | undefined> {
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      // The record the caller has just read serves the first attempt; a lost write reads it again.
      const record = attempt === 1 && known ? known : await this.record(instanceId);
      if (!record) {
        if (side.kind === 'binding') throw notFound('The service instance does not exist.');
        // Nothing to hold: the operation finds that out itself.
        return undefined;
      }
      const claims = parseClaims(record.metadata.annotations?.[ANNOTATIONS.operationClaims]);
      const now = this.now();
      const stale =
        side.kind === 'binding'
          ? await this.checkInstanceSide(instanceId, record, claims, now)
          : await this.checkBindingSide(instanceId, claims, now);
      const next = claimed(claims, side, now, stale);
      if (await this.write(record, next)) return new Date(now).toISOString();
      await new Promise((resolve) => setTimeout(resolve, 20 * attempt * Math.random()));
    }
    throw concurrencyError('The service instance is busy with other operations; retry the request.');
  }

  /** For a binding's operation: refused while the instance's own operation runs or is being started. */
  private async checkInstanceSide(
    instanceId: string,
    record: SFServiceInstance,
    claims: OperationClaims,
    now: number,
  ) {
    if (record.metadata.deletionTimestamp) throw concurrencyError('The service instance is being deleted.');
    const run = await this.deps.latest(instanceWorkflowId(instanceId));
    if (run?.running) {
      const operation = run.memo?.operation ?? 'changed';
      throw concurrencyError(
        `The service instance is being ${operation === 'update' ? 'updated' : `${operation}ed`}; try again when that has finished.`,
      );
    }
    if (claims.instance && holds(claims.instance, run, now)) {
      throw concurrencyError(
        `An operation (${claims.instance.operation}) of the service instance is starting; try again when it has finished.`,
      );
    }
    return {
      instance: !!claims.instance,
      bindings: await this.staleBindings(instanceId, claims, now),
    };
  }

  /** For the instance's own operation: refused while a bind or unbind of it runs or is being started. */
  private async checkBindingSide(instanceId: string, claims: OperationClaims, now: number) {
    const stale = await this.staleBindings(instanceId, claims, now);
    for (const [bindingId, claim] of Object.entries(claims.bindings ?? {})) {
      if (!stale.has(bindingId)) {
        throw concurrencyError(
          `An operation (${claim.operation}) of binding ${bindingId} of this instance is in progress; try again when it has finished.`,
        );
      }
    }
    return { bindings: stale };
  }

  /** The binding claims that no longer hold. */
  private async staleBindings(
    instanceId: string,
    claims: OperationClaims,
    now: number,
  ): Promise<Set<string>> {
    const runs = await Promise.all(
      Object.entries(claims.bindings ?? {}).map(
        async ([id, claim]) =>
          [id, claim, await this.deps.latest(bindingWorkflowId(instanceId, id))] as const,
      ),
    );
    return new Set(runs.filter(([, claim, run]) => !holds(claim, run, now)).map(([id]) => id));
  }

  /** Takes back a claim made at `at`, unless something replaced it since. Best effort: a claim left behind goes stale. */
  async release(instanceId: string, side: ClaimSide, at: string): Promise<void> {
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const record = await this.record(instanceId).catch(() => undefined);
      if (!record) return;
      const claims = parseClaims(record.metadata.annotations?.[ANNOTATIONS.operationClaims]);
      const next = released(claims, side, at);
      if (formatClaims(next) === formatClaims(claims)) return;
      if (await this.write(record, next).catch(() => true)) return;
    }
  }

  /**
   * Writes the claims if the record is still the one read; false when another write came first
   * (or the record went away: the next read finds out).
   */
  private async write(record: SFServiceInstance, claims: OperationClaims): Promise<boolean> {
    try {
      await patchRecord(
        this.deps.master,
        SFSERVICEINSTANCE,
        record.metadata.namespace!,
        record.metadata.name,
        {
          metadata: {
            resourceVersion: record.metadata.resourceVersion,
            annotations: { [ANNOTATIONS.operationClaims]: formatClaims(claims) ?? null },
          },
        },
      );
      return true;
    } catch (err) {
      const status = statusCodeOf(err);
      if (status === 409 || status === 404) return false;
      throw err;
    }
  }

  private record(instanceId: string) {
    return getRecord<SFServiceInstance>(
      this.deps.master,
      SFSERVICEINSTANCE,
      instanceNamespace(instanceId, this.deps.instanceNamespace),
      resourceName(instanceId),
    );
  }

  private now(): number {
    return (this.deps.now ?? Date.now)();
  }
}
