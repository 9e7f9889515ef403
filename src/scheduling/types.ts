/**
 * The contract of placement: what a scheduler sees of each cluster and of the instance, the
 * plugins it is made of, and the decision it returns. Shaped after the Kubernetes scheduler
 * framework: pre-filter (once per decision), filter (per cluster, with a reason when it rejects),
 * pre-score, score (bounded 0-100, optionally normalised over all clusters), and a deterministic
 * tie break by cluster id.
 *
 * Everything here is plain JSON-safe data: a workflow can hold it in its history.
 */
import type { ResourceList, ResourceListInput } from '../clusters/quantity.js';
import type { ClusterPhase } from '../resources/types.js';

/** What a scheduler knows of one registered cluster (see `clusterSnapshot`). */
export interface ClusterSnapshot {
  /** The SFCluster's name. */
  readonly id: string;
  /** Labels a cluster selector matches: the SFCluster's metadata labels and `spec.labels`. */
  readonly labels: Readonly<Record<string, string>>;
  readonly phase: ClusterPhase;
  /** Cordoned: no new instances. */
  readonly schedulingDisabled: boolean;
  /** Capacity, declared or from the nodes. */
  readonly capacity: ResourceList;
  /** What pods may use, declared or from the nodes. */
  readonly allocatable: ResourceList;
  /** Requests of the cluster's pods that have not finished, outside instance namespaces. */
  readonly requests: ResourceList;
  /** Requests booked by the instances placed on the cluster (their only booking), summed. */
  readonly reserved: ResourceList;
  /** Instances placed on the cluster. */
  readonly instances: number;
  /** Per cent of allocatable the resource-aware scheduler may fill. @default 100 */
  readonly schedulingLimitPercentage?: number;
  /** Why our CRDs are not installed on the cluster (its `CrdsInstalled` condition is False); never chosen then. */
  readonly withoutCrds?: string;
  /** Why the cluster's record cannot be read (an invalid quantity); such a cluster is never chosen. */
  readonly problem?: string;
}

/** What is being placed: one instance. */
export interface PlacementRequest {
  readonly instanceId: string;
  readonly planId: string;
  /**
   * The plan's `clusterSelector` template, rendered with the instance's data: a Kubernetes label
   * selector (`plan=small,tier in (gold,silver)`). Absent or blank matches every cluster.
   */
  readonly clusterSelector?: string;
  /** Resources the instance will request (the plan's `context.requests`): `{ cpu: '2', memory: '4Gi' }`. */
  readonly requests?: ResourceListInput;
}

/** What the scheduler remembers between decisions; kept by the caller (round robin's turn). */
export interface SchedulingState {
  /** The cluster chosen last by this scheduler. */
  readonly lastClusterId?: string;
}

/**
 * The outcome of one plugin phase for one cluster (or, in pre-filter, for the whole decision):
 * `Success`; `Unschedulable` with the reason, for people; `Error` when the input cannot be read
 * (an invalid quantity or selector), also with its reason.
 */
export type Verdict =
  { readonly code: 'Success' } | { readonly code: 'Unschedulable' | 'Error'; readonly reason: string };

/** The verdict that lets a cluster through. */
export const SUCCESS: Verdict = Object.freeze({ code: 'Success' });
/** A rejection, with its reason for people. */
export const unschedulable = (reason: string): Verdict => ({ code: 'Unschedulable', reason });
/** A rejection because the input cannot be read. */
export const invalid = (reason: string): Verdict => ({ code: 'Error', reason });

/** One decision in progress: the request, the caller's state, and what plugins keep meanwhile. */
export interface Cycle {
  readonly request: PlacementRequest;
  readonly state: SchedulingState;
  /** Data a plugin keeps for the rest of this decision, under a key of its own (its name). */
  readonly data: Map<string, unknown>;
}

/**
 * A scheduling plugin: a name and any of the phases. A plugin with `filter` rejects clusters; one
 * with `score` ranks those left. Scores are within 0-100 after `normalizeScores` (when given);
 * the framework refuses others.
 */
export interface Plugin {
  readonly name: string;
  /** Once per decision, before any cluster: checks and prepares the request. */
  preFilter?(cycle: Cycle): Verdict;
  /** Whether the cluster may take the instance, and why not. */
  filter?(cycle: Cycle, cluster: ClusterSnapshot): Verdict;
  /** Once per decision, over the clusters that passed every filter (in id order). */
  preScore?(cycle: Cycle, feasible: readonly ClusterSnapshot[]): void;
  /** The cluster's score; higher is better. */
  score?(cycle: Cycle, cluster: ClusterSnapshot): number;
  /** Maps the raw scores of the feasible clusters (in id order) into 0-100. */
  normalizeScores?(cycle: Cycle, scores: readonly number[]): number[];
  /** A few words on why an eligible cluster scores as it does (`6.5 CPU free`, `2 instances`). */
  explain?(cycle: Cycle, cluster: ClusterSnapshot): string | undefined;
}

/** What one scheduler decided about one cluster. */
export type ClusterVerdict =
  | {
      readonly clusterId: string;
      readonly eligible: false;
      /** The plugin that rejected it. */
      readonly plugin: string;
      readonly code: 'Unschedulable' | 'Error';
      readonly reason: string;
    }
  | {
      readonly clusterId: string;
      readonly eligible: true;
      /** Weighted score, 0-100, rounded to two decimals. */
      readonly score: number;
    };

/** A placement decision and its reasons. */
export interface Decision {
  /** The scheduler that decided. */
  readonly scheduler: string;
  /** The chosen cluster; absent when no cluster is eligible. */
  readonly clusterId?: string;
  /** Every cluster's verdict, in cluster id order. */
  readonly reasons: readonly ClusterVerdict[];
  /**
   * For people: `chose 3: 6.5 CPU free; 4: 2 CPU free; 2: offline; 1: cordoned`, or
   * `no eligible cluster: 1: cordoned; 2: offline`.
   */
  readonly summary: string;
}

/** Settings every plugin factory receives; each reads those it needs. */
export interface PluginOptions {
  /** The master cluster's id, for the `default` scheduler. @default '1' */
  readonly masterClusterId?: string;
  /** Clusters not probed yet (phase `pending`) may take instances. @default false */
  readonly acceptPending?: boolean;
}
