/**
 * Keeping each plan's revision and the rollouts of its changes: every plan the worker's catalog
 * watch lists (at the worker's start) or hears change is reconciled as plan-revision-work.ts reads
 * it: its revision written to `status.specHash` when its spec changed, and, for a plan with
 * `autoUpdateInstances` whose `status.rolledOutRevision` is behind, the rollout of its revision
 * started (signal-with-start: one rollout workflow per plan, so a rollout already running is only
 * told again) and only then written as rolled out. A worker that stops, or a Temporal error, between
 * the two writes leaves the plan with a revision not rolled out, which the next reconcile (the next
 * change, another worker, a retry after {@link RETRY_MS}, this worker's next start) takes up.
 *
 * `status.rolledOutRevision` is where a started rollout is recorded, rather than the rollout
 * workflow's own state: it comes with the plan each event brings (no call to Temporal for a plan
 * with nothing to do), and it outlives the workflow's history, which Temporal drops after the
 * namespace's retention, when a rollout that ended would look like one never started.
 *
 * Every worker reconciles every plan; the writes are idempotent and the rollout workflow ignores a
 * revision it already rolls out. In one worker, one plan is reconciled at a time, on the newest
 * object heard.
 *
 * A controller, not an activity: the worker runs it beside the activities; the writes and the
 * rollout's start are given as functions.
 */
import type { SFPlan, SFPlanStatus } from '../resources/types.js';
import { planRevisionWork, type PlanRevisionWork } from './plan-revision-work.js';

/** How long before a plan whose reconcile failed is tried again. */
export const RETRY_MS = 10_000;

export interface PlanRolloutOptions {
  /** Merges `status` into the plan's status; false when the plan is gone. */
  readonly writeStatus: (plan: SFPlan, status: Partial<SFPlanStatus>) => Promise<boolean>;
  /** Starts the plan's rollout towards `revision`, or tells the running one (signal-with-start). */
  readonly startRollout: (plan: SFPlan, revision: string) => Promise<void>;
  /** The revision the plan's latest rollout run works or worked on, as its memo says; none without one. */
  readonly latestRollout: (plan: SFPlan) => Promise<string | undefined>;
  /** Told of what was done for a plan: its revision written, its rollout started or found. */
  readonly onDone?: (plan: SFPlan, work: PlanRevisionWork, started: boolean) => void;
  readonly onError?: (err: unknown, what: string) => void;
  /** @default RETRY_MS */
  readonly retryMs?: number;
}

export interface PlanRollouts {
  /** A plan as listed, added or changed. */
  heard(plan: SFPlan): void;
  /** Resolves once no reconcile runs and none waits (a retry scheduled aside). */
  idle(): Promise<void>;
  stop(): void;
}

const keyOf = (plan: SFPlan) => `${plan.metadata.namespace ?? ''}/${plan.metadata.name}`;

export function planRollouts(options: PlanRolloutOptions): PlanRollouts {
  const { writeStatus, startRollout, latestRollout, onDone = () => undefined } = options;
  const { onError = () => undefined, retryMs = RETRY_MS } = options;
  /** The newest object heard of each plan not reconciled yet. */
  const pending = new Map<string, SFPlan>();
  const running = new Map<string, Promise<void>>();
  const retries = new Map<string, NodeJS.Timeout>();
  /**
   * The status this worker wrote last, per plan, with the plan's uid and generation then: an event
   * of the same spec that the watch brings before the write's own gets it laid over, so the plan is
   * not reconciled (nor its rollout told) twice.
   */
  const written = new Map<string, { uid?: string; generation?: number; status: SFPlanStatus }>();
  let stopped = false;

  const withWritten = (plan: SFPlan): SFPlan => {
    const mine = written.get(keyOf(plan));
    if (!mine || mine.uid !== plan.metadata.uid || mine.generation !== plan.metadata.generation) return plan;
    return { ...plan, status: { ...plan.status, ...mine.status } };
  };

  const write = async (plan: SFPlan, status: Partial<SFPlanStatus>): Promise<boolean> => {
    if (!(await writeStatus(plan, status))) return false;
    const key = keyOf(plan);
    const before = written.get(key);
    const same = before?.uid === plan.metadata.uid && before?.generation === plan.metadata.generation;
    written.set(key, {
      ...(plan.metadata.uid ? { uid: plan.metadata.uid } : {}),
      ...(plan.metadata.generation !== undefined ? { generation: plan.metadata.generation } : {}),
      status: { ...(same ? before?.status : {}), ...status },
    });
    return true;
  };

  async function reconcile(heardPlan: SFPlan): Promise<void> {
    const plan = withWritten(heardPlan);
    const work = planRevisionWork(plan);
    if (!work.record && !work.rollout) return;
    if (work.record && !(await write(plan, work.record))) return;
    let started = false;
    if (work.rollout) {
      const found = work.askRolloutFirst ? await latestRollout(plan) : undefined;
      if (found !== work.rollout) {
        await startRollout(plan, work.rollout);
        started = true;
      }
      if (!(await write(plan, { rolledOutRevision: work.rollout }))) return;
    }
    onDone(plan, work, started);
  }

  async function drain(key: string): Promise<void> {
    while (!stopped) {
      const plan = pending.get(key);
      if (!plan) return;
      pending.delete(key);
      try {
        await reconcile(plan);
      } catch (err) {
        onError(err, `reconciling the revision of plan ${plan.spec?.id ?? key}`);
        // A newer object heard meanwhile is reconciled at once; else this one, later.
        if (!pending.has(key) && !stopped) {
          clearTimeout(retries.get(key));
          const timer = setTimeout(() => {
            retries.delete(key);
            if (!pending.has(key)) heard(plan);
          }, retryMs);
          timer.unref();
          retries.set(key, timer);
        }
      }
    }
  }

  function heard(plan: SFPlan): void {
    if (stopped) return;
    const key = keyOf(plan);
    pending.set(key, plan);
    clearTimeout(retries.get(key));
    retries.delete(key);
    if (running.has(key)) return;
    const run = drain(key).finally(() => {
      running.delete(key);
      const newer = pending.get(key);
      if (newer) heard(newer);
    });
    running.set(key, run);
  }

  return {
    heard,
    async idle() {
      while (running.size > 0) await Promise.all(running.values());
    },
    stop() {
      stopped = true;
      for (const timer of retries.values()) clearTimeout(timer);
      retries.clear();
      pending.clear();
      written.clear();
    },
  };
}
