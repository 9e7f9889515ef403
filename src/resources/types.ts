/**
 * The custom resources of the inter-operator, in one place. Field names follow the Service Fabrik
 * inter-operator (github.com/cloudfoundry-incubator/service-fabrik-broker, `interoperator/api`), so
 * existing SFService/SFPlan manifests keep working unchanged.
 *
 * Pure types and constants: no I/O, safe to import from workflows.
 */
import type { CustomAction, OsbTemplateAction } from './actions.js';
import type { PlanMigrate } from './migration.js';

/** Group/version of the OSB-facing resources. */
export const OSB_GROUP = 'osb.servicefabrik.io';
export const OSB_VERSION = 'v1alpha1';
export const OSB_API_VERSION = `${OSB_GROUP}/${OSB_VERSION}` as const;

/** Group/version of the cluster registry. */
export const RESOURCE_GROUP = 'resource.servicefabrik.io';
export const RESOURCE_VERSION = 'v1alpha1';
export const RESOURCE_API_VERSION = `${RESOURCE_GROUP}/${RESOURCE_VERSION}` as const;

/** Kind, plural and group of each custom resource, for generic Kubernetes clients. */
export interface ResourceKind {
  readonly group: string;
  readonly version: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly plural: string;
}

export const SFSERVICE: ResourceKind = {
  group: OSB_GROUP,
  version: OSB_VERSION,
  apiVersion: OSB_API_VERSION,
  kind: 'SFService',
  plural: 'sfservices',
};
export const SFPLAN: ResourceKind = {
  group: OSB_GROUP,
  version: OSB_VERSION,
  apiVersion: OSB_API_VERSION,
  kind: 'SFPlan',
  plural: 'sfplans',
};
export const SFSERVICEINSTANCE: ResourceKind = {
  group: OSB_GROUP,
  version: OSB_VERSION,
  apiVersion: OSB_API_VERSION,
  kind: 'SFServiceInstance',
  plural: 'sfserviceinstances',
};
export const SFSERVICEBINDING: ResourceKind = {
  group: OSB_GROUP,
  version: OSB_VERSION,
  apiVersion: OSB_API_VERSION,
  kind: 'SFServiceBinding',
  plural: 'sfservicebindings',
};
export const SFCLUSTER: ResourceKind = {
  group: RESOURCE_GROUP,
  version: RESOURCE_VERSION,
  apiVersion: RESOURCE_API_VERSION,
  kind: 'SFCluster',
  plural: 'sfclusters',
};

/** Minimal object metadata, as the apiserver returns it. */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** Any Kubernetes object: what templates render and what `sources` fetch. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

/** The status of a condition. */
export type ConditionStatus = 'True' | 'False' | 'Unknown';

/**
 * A condition as `metav1.Condition` writes it: what `status.conditions` of an SFServiceInstance,
 * an SFServiceBinding and an SFCluster hold (src/resources/conditions.ts decides them).
 */
export interface Condition {
  readonly type: string;
  readonly status: ConditionStatus;
  /** One CamelCase word, for machines. */
  readonly reason: string;
  /** A sentence, for people. */
  readonly message: string;
  /** When `status` last changed; unchanged while it holds. */
  readonly lastTransitionTime: string;
  /** The `metadata.generation` the condition describes. @default not said */
  readonly observedGeneration?: number;
}

// ---------------------------------------------------------------------------------------------
// SFService and SFPlan: the catalog, written by the service owner.

/** Actions a plan template can serve: the OSB ones, and the plan's custom actions (`x-<name>`, actions.ts). */
export type TemplateAction = OsbTemplateAction | CustomAction;

/** Template languages a plan template can be written in. */
export const TEMPLATE_TYPES = ['gotemplate', 'mustache', 'helm', 'jsonnet'] as const;
export type TemplateType = (typeof TEMPLATE_TYPES)[number];

/**
 * One template of a plan. Its text is `content` when not empty, else `contentEncoded` (base64) when
 * not empty, else fetched from `url`, as the original picks it.
 */
export interface PlanTemplate {
  action: TemplateAction;
  type: TemplateType;
  content?: string;
  contentEncoded?: string;
  url?: string;
}

export interface DashboardClient {
  id?: string;
  secret?: string;
  redirectURI?: string;
}

export interface MaintenanceInfo {
  version: string;
  description?: string;
}

/** Parameter schemas of a plan, as in the OSB catalog. */
export interface PlanSchemas {
  service_instance?: {
    create?: { parameters?: Record<string, unknown> };
    update?: { parameters?: Record<string, unknown> };
  };
  service_binding?: {
    create?: { parameters?: Record<string, unknown> };
  };
}

/** How the broker drives the operator for this plan. */
export interface PlanManager {
  /** Provision/update/deprovision answer 202 and run asynchronously. @default false */
  async?: boolean;
  /** Bind/unbind answer 202 and run asynchronously (OSB 2.14). @default false */
  asyncBinding?: boolean;
  /** Template (mustache syntax over instance/plan/service) of the dashboard URL. */
  dashboardUrlTemplate?: string;
  [key: string]: unknown;
}

export interface SFServiceSpec {
  name: string;
  id: string;
  description: string;
  tags?: string[];
  requires?: string[];
  bindable: boolean;
  instancesRetrievable?: boolean;
  bindingsRetrievable?: boolean;
  allowContextUpdates?: boolean;
  metadata?: Record<string, unknown>;
  dashboardClient?: DashboardClient;
  planUpdatable?: boolean;
  context?: Record<string, unknown>;
  /**
   * Namespaces besides each instance's own that the templates of the service's plans may apply
   * objects in and read sources and references from (one the service's instances share, an
   * operator's). The registry's namespace and another instance's are refused even when listed.
   * @default none: an instance's templates reach its own namespace only
   */
  allowedNamespaces?: string[];
  /**
   * The platforms whose catalog shows the service (Service Fabrik's field): `cf`, `k8s`, `sm`, as
   * the path prefix of a request names them (src/osb/platforms.ts). @default every platform
   */
  supported_platform?: string[];
}

export interface SFService extends KubeObject {
  spec: SFServiceSpec;
}

export interface SFPlanSpec {
  name: string;
  id: string;
  description: string;
  serviceId: string;
  metadata?: Record<string, unknown>;
  maintenance_info?: MaintenanceInfo;
  maximum_polling_duration?: number;
  free?: boolean;
  bindable?: boolean;
  planUpdatable?: boolean;
  /** Plan ids from which an instance may be updated to this plan (OSB `plan_updateable` refinement). */
  update_predecessors?: string[];
  /**
   * The original's flag: when the plan's spec changes, its instances are updated to the new
   * revision by the plan's rollout workflow.
   */
  autoUpdateInstances?: boolean;
  /**
   * Age after which the current version of each generated secret (SFSecret) of an instance of the
   * plan is rotated: a whole number and a unit, `s`, `m`, `h` or `d` (`90d`, `1h30m`). @default never
   */
  rotateAfter?: string;
  /** How the plan's instances move to another cluster (resources/migration.ts); absent: they never move. */
  migrate?: PlanMigrate;
  /** How the plan's rollouts proceed, unless a rollout says otherwise. */
  rollout?: {
    canary?: number;
    maxConcurrency?: number;
    soakSeconds?: number;
    maxFailures?: number;
  };
  schemas?: PlanSchemas;
  templates: PlanTemplate[];
  manager?: PlanManager;
  context?: Record<string, unknown>;
  /** How many instances of the plan one tenant may hold. @default no limit */
  quota?: PlanQuota;
  /**
   * Bindings of the plan can be rotated: a bind may name a `predecessor_binding_id` (the catalog's
   * `binding_rotatable`, advertised only when the plan is bindable). @default false
   */
  bindingRotatable?: boolean;
  /** How long the credentials of the plan's bindings last. @default no expiry */
  bindingLifetime?: BindingLifetime;
  /**
   * The platforms whose catalog shows the plan and that may provision it (Service Fabrik's
   * field): `cf`, `k8s`, `sm`, as the path prefix of a request names them
   * (src/osb/platforms.ts). @default every platform
   */
  supported_platform?: string[];
}

/**
 * The lifetime of a plan's bindings, as durations of whole days, hours, minutes and seconds
 * (`30d`, `720h`, `1h30m`): each binding answers `metadata.expires_at` = its creation time +
 * `expiresAfter`, and `metadata.renew_before` = that time - `renewBefore`.
 */
export interface BindingLifetime {
  /** How long after its creation a binding's credentials expire. */
  expiresAfter: string;
  /** How long before they expire the platform should rotate the binding; shorter than `expiresAfter`. @default not said */
  renewBefore?: string;
}

/** What a quota is per: the part of an instance's context that names its tenant. */
export const QUOTA_TENANTS = ['subaccount', 'organization', 'space'] as const;
export type QuotaTenant = (typeof QUOTA_TENANTS)[number];

/**
 * A limit of instances per tenant, checked when an instance is provisioned on the plan or moved to
 * it. The tenant of an instance is the context's `subaccount_id`, `organization_guid` (else the
 * request's `organization_guid`) or `space_guid` (else `space_guid`).
 */
export interface PlanQuota {
  /** Most instances one tenant may hold; 0 takes no new instances. */
  instances: number;
  /** What the limit is per. @default `subaccount` when the context names one, else `organization` */
  tenant?: QuotaTenant;
  /**
   * Plans of the same service with the same group share the limit: their instances count together,
   * against the limit of the plan a request names. @default the plan alone
   */
  group?: string;
}

export interface SFPlanStatus {
  /** The plan's revision: a digest of its spec, written by the workers when the spec changes. */
  specHash?: string;
  /**
   * The last revision whose rollout was started (with `autoUpdateInstances`), written by the
   * workers only once its rollout workflow runs or was told of it; its first revision, which has
   * nothing to roll out. A `specHash` ahead of it is a rollout still to start.
   */
  rolledOutRevision?: string;
}

export interface SFPlan extends KubeObject {
  spec: SFPlanSpec;
  status?: SFPlanStatus;
}

// ---------------------------------------------------------------------------------------------
// SFServiceInstance and SFServiceBinding: the record of each request, and what users see.

/** State of an instance or binding, as the original inter-operator names it. */
export const RESOURCE_STATES = [
  'in_queue',
  'in progress',
  'succeeded',
  'failed',
  'update',
  'delete',
] as const;
export type ResourceState = (typeof RESOURCE_STATES)[number];

/** A Kubernetes object applied for an instance or binding, recorded in its status. */
export interface AppliedResource {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
}

/**
 * An object the instance's references (`getValueFrom`) read when its objects were last applied:
 * where it is, never what it holds. A reference by labels names the object it found.
 */
export interface ReferencedObject {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  /** Its resourceVersion when it was read: a change seen later at this version is applied already. */
  resourceVersion?: string;
}

export interface SFServiceInstanceSpec {
  serviceId: string;
  planId: string;
  instanceId?: string;
  organizationGuid?: string;
  spaceGuid?: string;
  context?: Record<string, unknown>;
  parameters?: Record<string, unknown>;
  previousValues?: Record<string, unknown>;
  /** Cluster the instance is placed on; set by scheduling. */
  clusterId?: string;
  maintenanceInfo?: MaintenanceInfo;
}

export interface SFServiceInstanceStatus {
  state?: ResourceState;
  error?: string;
  description?: string;
  dashboardUrl?: string;
  instanceUsable?: boolean;
  updateRepeatable?: boolean;
  /** Last operation: provision, update or deprovision. */
  operation?: string;
  /** Namespace, in the instance's cluster, where its resources live. */
  namespace?: string;
  appliedSpec?: SFServiceInstanceSpec;
  /** Every object applied for it that may exist: those its template renders now, then the stale ones. */
  resources?: AppliedResource[];
  /**
   * The objects listed in `resources` that its template no longer rendered when last applied:
   * deleted once an update reports success; a failed update leaves them (its rollback applies
   * them again), and a deprovision deletes them with the rest.
   */
  staleResources?: AppliedResource[];
  /** The objects its references read when its resources were last applied (followed by the worker). */
  references?: ReferencedObject[];
  observedGeneration?: number;
  /** The revision of its plan (`status.specHash`) its resources were last rendered with. */
  planRevision?: string;
  /** Ready, Reconciling and Stalled, by the state of the last OSB operation (conditions.ts). */
  conditions?: Condition[];
  /**
   * The last custom action an admin ran on the instance. Kept apart from `state`, `operation` and
   * `description`, which tell of the last OSB operation only (what `last_operation` and the OSB
   * rules read).
   */
  lastAction?: InstanceActionStatus;
  /** The last backup that succeeded, by the plan's `migrate.backup` action: what a rebuild elsewhere restores. */
  lastBackup?: InstanceBackup;
  /** The instance's generated secrets (SFSecret, sfsecret.ts): their current and kept versions. */
  generatedSecrets?: GeneratedSecretStatus[];
}

/** What an SFSecret generates (src/resources/sfsecret.ts). */
export type GeneratedSecretType = 'password' | 'rsa' | 'ssh' | 'certificate';

/** One generated secret as the instance's record keeps it (`status.generatedSecrets`). */
export interface GeneratedSecretStatus {
  /** The SFSecret's name. */
  readonly name: string;
  readonly type: GeneratedSecretType;
  /** The base of the versioned Secrets' names. */
  readonly secretName: string;
  /** The current version: what the instance's objects are rendered with. */
  readonly version: number;
  /** The current version's Secret, `<secretName>-v<version>`. */
  readonly secret: string;
  /** Every version whose Secret is kept: the current one and those bindings still use. */
  readonly versions: readonly number[];
  /** When the current version was made (ISO time): when a `rotateAfter` makes the next. */
  readonly createdAt: string;
  /** The run of the rotation that made the current version, so that a repeated step makes no other. */
  readonly rotatedBy?: string;
}

/** A version of a generated secret a binding was made with (`status.generatedSecrets` of a binding). */
export interface BindingSecretVersion {
  readonly name: string;
  readonly version: number;
  readonly secret: string;
}

/** A custom action's run, as the instance's record shows it. */
/** A backup of an instance, taken by its plan's `migrate.backup` action. */
export interface InstanceBackup {
  /** The backup action, `x-<name>`. */
  readonly action: string;
  /** The backup's id: the run that took it, as its template saw it (`.action.id`). */
  readonly id: string;
  /** The cluster it was taken on. */
  readonly clusterId: string;
  readonly takenAt: string;
}

export interface InstanceActionStatus {
  /** The action, `x-<name>`, or `move`. */
  operation: string;
  state: 'in progress' | 'succeeded' | 'failed';
  description?: string;
  /** The run of the instance's workflow (`instance/<id>`) that ran it. */
  runId?: string;
  /** Who asked, as the admin API recorded it. */
  requestedBy?: string;
  startedAt?: string;
  finishedAt?: string;
}

export interface SFServiceInstance extends KubeObject {
  spec: SFServiceInstanceSpec;
  status?: SFServiceInstanceStatus;
}

export interface SFServiceBindingSpec {
  id: string;
  instanceId: string;
  serviceId: string;
  planId: string;
  bindResource?: Record<string, unknown>;
  context?: Record<string, unknown>;
  parameters?: Record<string, unknown>;
  acceptsIncomplete?: boolean;
  /** The binding this one rotates (OSB `predecessor_binding_id`), of the same instance. */
  predecessorBindingId?: string;
  /** When the binding's credentials expire, from its plan's `bindingLifetime` at its creation (RFC 3339). */
  expiresAt?: string;
  /** When the platform should have rotated the binding (RFC 3339). */
  renewBefore?: string;
}

export interface SFServiceBindingStatus {
  state?: ResourceState;
  error?: string;
  description?: string;
  /** The bind response (credentials) lives in this Secret; never in the status itself. */
  response?: { secretRef?: string };
  operation?: string;
  resources?: AppliedResource[];
  /**
   * What the unbind applied of its own (neither the bind's objects nor the instance's): kept while
   * the unbind runs, for its status template to read, and deleted once it reports success.
   */
  unbindResources?: AppliedResource[];
  /** The versions of the instance's generated secrets the binding was made with: kept while it exists. */
  generatedSecrets?: BindingSecretVersion[];
  /** The generation of the spec the conditions describe. */
  observedGeneration?: number;
  /** Ready, Reconciling and Stalled, by the state of the last OSB operation (conditions.ts). */
  conditions?: Condition[];
}

export interface SFServiceBinding extends KubeObject {
  spec: SFServiceBindingSpec;
  status?: SFServiceBindingStatus;
}

// ---------------------------------------------------------------------------------------------
// SFCluster: the cluster registry.

/**
 * Lifecycle of a registered cluster:
 * - `pending`: registered, not yet probed;
 * - `running`: its apiserver answers (or stopped answering less than the offline threshold ago);
 * - `offline`: unreachable for longer than the offline threshold; `running` again once it answers;
 * - `terminated`: its removal is requested (the SFCluster is being deleted).
 * Only running clusters receive new instances.
 */
export const CLUSTER_PHASES = ['pending', 'running', 'offline', 'terminated'] as const;
export type ClusterPhase = (typeof CLUSTER_PHASES)[number];

/** Types of the conditions in `SFCluster.status.conditions`, besides Reconciling and Stalled (conditions.ts). */
export const CLUSTER_CONDITIONS = {
  /** True while the cluster is running and its apiserver answers its probes. */
  ready: 'Ready',
  /** True while new instances may be placed on the cluster. */
  schedulable: 'Schedulable',
  /**
   * On a sister: True once our CRDs are established there (src/clusters/onboarding.ts); False,
   * with why, while they cannot be installed, and then no instance is placed on it.
   */
  crdsInstalled: 'CrdsInstalled',
  /**
   * Written by a drain of the cluster (src/clusters/drain.ts): False while it moves the instances
   * off the cluster (reason `Draining`), or when it ended with instances left there that it could
   * not move (`Blocked`), was aborted (`Aborted`) or halted (`Halted`); True once no instance is
   * left on the cluster.
   */
  drained: 'Drained',
} as const;

/** A condition of a cluster, as Kubernetes conditions are written. */
export interface ClusterCondition {
  type: string;
  status: ConditionStatus;
  /** When the condition was last checked. */
  lastProbeTime?: string;
  /** When `status` last changed; unchanged while it holds. */
  lastTransitionTime?: string;
  /** One CamelCase word, for machines. */
  reason?: string;
  /** A sentence, for people. */
  message?: string;
  /** The `metadata.generation` the condition describes. */
  observedGeneration?: number;
}

/** Quantities by resource name (`{ cpu: '4', memory: '16Gi' }`); the CRD accepts integers too. */
export type Quantities = Record<string, string | number>;

export interface SFClusterSpec {
  /**
   * Name of the Secret (in the cluster's namespace) whose `kubeconfig` key holds the kubeconfig.
   * A cluster with a worker of its own ({@link SFClusterSpec.taskQueue}) needs none.
   */
  secretRef?: string;
  /**
   * The task queue of a worker started for this cluster alone (`INTEROP_CLUSTER_ID`), which reaches
   * the cluster with its own credentials: the steps of operations on the cluster and its health
   * probe run there, so the master holds no credentials of it. Unset: the landscape's workers
   * reach the cluster with the kubeconfig in `secretRef`.
   */
  taskQueue?: string;
  /**
   * Capacity of the cluster (cpu, memory, ...): when set, it is the cluster's capacity and
   * allocatable, instead of the sum of its nodes'.
   */
  totalCapacity?: Quantities;
  /** Per cent of the allocatable capacity the resource-aware scheduler may fill. @default 100 */
  schedulingLimitPercentage?: number;
  /** Labels a clusterSelector can match, besides the SFCluster's own metadata labels. */
  labels?: Record<string, string>;
  /** Cordons the cluster: no new instances are placed on it; those there keep working. @default false */
  schedulingDisabled?: boolean;
  /** Cordons the cluster, like `schedulingDisabled`; either one set cordons it. @default false */
  unschedulable?: boolean;
}

export interface SFClusterStatus {
  phase?: ClusterPhase;
  /** The generation of the spec the status describes. */
  observedGeneration?: number;
  conditions?: ClusterCondition[];
  /** Version of the cluster's apiserver (`v1.31.0`), from its last answer. */
  version?: string;
  /** Capacity of the cluster: declared, or summed over its nodes. */
  capacity?: Record<string, string>;
  /** What the cluster offers to pods: declared, or summed over its schedulable nodes. */
  allocatable?: Record<string, string>;
  /**
   * Sum of the requests of the cluster's pods that have not finished, outside instance namespaces
   * (an instance is booked by its reservation alone).
   */
  requests?: Record<string, string>;
  /**
   * Requests booked by the instances placed on the cluster, from their placement until their
   * removal: instance id to its plan's requests.
   */
  reserved?: Record<string, Record<string, string>>;
  /** Number of instances placed on the cluster. */
  serviceInstanceCount?: number;
  /** When the cluster was last probed. */
  lastProbeTime?: string;
  /**
   * Since when its apiserver has answered every probe; absent while it does not answer. A cluster
   * that was offline is running again once this is older than the stabilization window. Written
   * as null (which a merge patch removes) when a probe gets no answer.
   */
  answeringSince?: string | null;
}

export interface SFCluster extends KubeObject {
  spec: SFClusterSpec;
  status?: SFClusterStatus;
}

/** The master cluster's id: where the broker's own records live. */
export const MASTER_CLUSTER_ID = '1';
