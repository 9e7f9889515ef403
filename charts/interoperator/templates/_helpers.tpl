{{/* The chart's name. */}}
{{- define "interoperator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name: prefix of every object. */}}
{{- define "interoperator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "interoperator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "interoperator.labels" -}}
helm.sh/chart: {{ include "interoperator.chart" . }}
app.kubernetes.io/name: {{ include "interoperator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels of one component (broker or worker): call with (list $ "broker"). */}}
{{- define "interoperator.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "interoperator.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{- define "interoperator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "interoperator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret with username, password and payloadKeys. */}}
{{- define "interoperator.secretName" -}}
{{- default (include "interoperator.fullname" .) .Values.auth.existingSecret }}
{{- end }}

{{/* Namespace of the SF resources (INTEROP_NAMESPACE). */}}
{{- define "interoperator.sfNamespace" -}}
{{- default .Release.Namespace .Values.settings.namespace }}
{{- end }}

{{- /*
The drop box namespace of a cluster with a worker of its own (dict "registry" "id"), as the
inter-operator computes it: <registry>-drop-<id>, or sf-drop- and a hash of both when that is no
DNS label.
*/}}
{{- define "interoperator.dropBoxNamespace" -}}
{{- $dropBox := printf "%s-drop-%s" .registry .id }}
{{- if or (gt (len $dropBox) 63) (not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" $dropBox)) }}
{{- $dropBox = printf "sf-drop-%s" (sha256sum (printf "%s/%s" .registry .id) | trunc 20) }}
{{- end }}
{{- $dropBox }}
{{- end }}

{{- define "interoperator.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
The worker pool's build id under Worker Versioning (worker.versioning): the value set, or the
image's tag (or the chart's appVersion); empty when versioning is off.
*/}}
{{- define "interoperator.workerBuildId" -}}
{{- if .Values.worker.versioning.enabled }}
{{- $id := default (default .Chart.AppVersion .Values.image.tag) .Values.worker.versioning.buildId | toString }}
{{- if not (regexMatch "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$" $id) }}
{{- fail (printf "worker.versioning: the build id %q must be letters, digits, -, _ and . (at most 128): set worker.versioning.buildId" $id) }}
{{- end }}
{{- $id }}
{{- end }}
{{- end }}

{{/*
The worker pool's Deployment: one per build under Worker Versioning (its build id in the name, so
the previous build's pods stay while its operations drain), else one.
*/}}
{{- define "interoperator.workerName" -}}
{{- $buildId := include "interoperator.workerBuildId" . }}
{{- if $buildId }}
{{- printf "%s-worker-%s" (include "interoperator.fullname" .) ($buildId | lower | replace "_" "-" | replace "." "-") | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-worker" (include "interoperator.fullname" .) }}
{{- end }}
{{- end }}

{{/*
INTEROP_PAYLOAD_KEYS. Call with (list $ false) for the landscape's processes: the master keys, from
the release's Secret. Call with (list $ true) for a cluster worker: only the keys derived for its
cluster (clusterWorker.payloadKeys, or clusterWorker.payloadKeysSecret).
*/}}
{{- define "interoperator.payloadKeysEnv" -}}
{{- $root := index . 0 -}}
- name: INTEROP_PAYLOAD_KEYS
  valueFrom:
    secretKeyRef:
      name: {{ if index . 1 }}{{ include "interoperator.clusterWorkerKeysSecretName" $root }}{{ else }}{{ include "interoperator.secretName" $root }}{{ end }}
      key: payloadKeys
{{- end }}

{{/* The Secret with the cluster worker's payload keys (those derived for its cluster). */}}
{{- define "interoperator.clusterWorkerKeysSecretName" -}}
{{- default (printf "%s-cluster-worker-keys" (include "interoperator.fullname" .)) .Values.clusterWorker.payloadKeysSecret }}
{{- end }}

{{/* Settings both processes read besides the ConfigMap and the payload keys. */}}
{{- define "interoperator.commonEnv" -}}
{{- with .Values.temporal.apiKeySecret }}
{{- if .name }}
- name: INTEROP_TEMPORAL_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .name }}
      key: {{ .key }}
{{- end }}
{{- end }}
{{- range $name, $value := .Values.settings.extraEnv }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end }}

{{/* Volumes for a read-only root file system: Node and the Temporal worker need a writable /tmp. */}}
{{- define "interoperator.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: 256Mi
{{- end }}

{{/* The Secret of the Temporal frontend's CA and the client's certificate (temporal.tls), when one is named. */}}
{{- define "interoperator.temporalTlsMount" -}}
{{- if and .Values.temporal.tls.enabled .Values.temporal.tls.secretName }}
- name: temporal-tls
  mountPath: /etc/interoperator/temporal-tls
  readOnly: true
{{- end }}
{{- end }}
{{- define "interoperator.temporalTlsVolume" -}}
{{- if and .Values.temporal.tls.enabled .Values.temporal.tls.secretName }}
- name: temporal-tls
  secret:
    secretName: {{ .Values.temporal.tls.secretName }}
{{- end }}
{{- end }}

{{/*
Checksums that roll the pods when their configuration changes. The credentials are not in them:
the broker re-reads them from the mounted Secret, so changing them needs no restart. Turning the
admin API on or off does.
*/}}
{{- define "interoperator.configChecksums" -}}
checksum/config: {{ include (print .Template.BasePath "/configmap.yaml") . | sha256sum }}
{{- if not .Values.auth.existingSecret }}
checksum/auth-input: {{ printf "%s|%t" .Values.auth.payloadKeys (not (empty .Values.auth.adminUsername)) | sha256sum }}
{{- end }}
{{- end }}

{{/*
RBAC rules of the broker and the workers. Call with (list $ "registry" "instances"): the rules for
a namespace holding the registry (the catalog, the SFClusters and their kubeconfig Secrets, read
only), the instances (their records, the binding responses the workers write into Secrets, and the
objects the plans render), or both (a ClusterRole, or one namespace for everything).
*/}}
{{- define "interoperator.rules" -}}
{{- $root := index . 0 -}}
{{- $instances := has "instances" . -}}
# Our own resources: the catalog, the records and the cluster registry; statuses by merge patch.
# The verbs are those the code calls (test/unit/charts/rbac-code.test.ts reads them from src/).
- apiGroups: [osb.servicefabrik.io]
  resources: [sfservices, sfplans, sfserviceinstances, sfservicebindings]
  verbs: [get, list, watch, create, patch, delete]
- apiGroups: [osb.servicefabrik.io]
  resources: [sfserviceinstances/status, sfservicebindings/status, sfservices/status, sfplans/status]
  verbs: [patch]
- apiGroups: [resource.servicefabrik.io]
  resources: [sfclusters]
  verbs: [get, list, watch, create, patch, delete]
- apiGroups: [resource.servicefabrik.io]
  resources: [sfclusters/status]
  verbs: [patch]
- apiGroups: ['']
  resources: [events]
  verbs: [create]
{{- if $instances }}
# Secrets by name only, never listed: the clusters' kubeconfigs, the credentials an operator writes
# for a binding (read by the status template), the binding responses and what the plans render.
# (Server-side apply is a patch, and a create where the object is missing.)
- apiGroups: ['']
  resources: [secrets]
  verbs: [get, create, patch, delete]
# What the plans render in the core group; the schedulers' state ConfigMap is also updated.
- apiGroups: ['']
  resources: [services]
  verbs: [get, create, patch, delete]
- apiGroups: ['']
  resources: [configmaps]
  verbs: [get, create, update, patch, delete]
{{- range $root.Values.rbac.operatorResources }}
{{- if not (and .apiGroups .resources) }}
{{- fail (printf "rbac.operatorResources: every entry needs apiGroups and resources (plural names), not %s" (toJson .)) }}
{{- end }}
# Custom resources of an operator that the plans render (watched: a change wakes the status check).
- apiGroups: {{ toJson .apiGroups }}
  resources: {{ toJson .resources }}
  verbs: [get, list, watch, create, patch, delete]
{{- end }}
{{- range $root.Values.rbac.referencedResources }}
{{- if not (and .apiGroups .resources) }}
{{- fail (printf "rbac.referencedResources: every entry needs apiGroups and resources (plural names), not %s" (toJson .)) }}
{{- end }}
# Objects that the plans' references read: listed to select by labels, watched to follow a change.
- apiGroups: {{ toJson .apiGroups }}
  resources: {{ toJson .resources }}
  verbs: [get, list, watch]
{{- end }}
{{- with $root.Values.rbac.operatorApiGroups }}
# Every resource of these operators' API groups (watched: a change wakes the status check).
- apiGroups: {{ toJson . }}
  resources: ['*']
  verbs: [get, list, watch, create, patch, delete]
{{- end }}
{{- else }}
# The clusters' kubeconfigs, read by name.
- apiGroups: ['']
  resources: [secrets]
  verbs: [get]
# The schedulers' state (a ConfigMap of the registry's namespace).
- apiGroups: ['']
  resources: [configmaps]
  verbs: [get, create, update]
{{- end }}
{{- end }}

{{/*
Settings of the operations server (metrics and probes) and of tracing, for every process. The
metrics token is a file of its mounted Secret (interoperator.metricsTokenVolume), re-read when the
Secret changes: a rotated token takes effect without a restart.
*/}}
{{- define "interoperator.operationsEnv" -}}
{{- if .Values.metrics.tokenSecret.name }}
- name: INTEROP_METRICS_TOKEN_FILE
  value: /etc/interoperator/metrics/token
{{- end }}
{{- end }}

{{/* The mount of the metrics token's Secret, when there is one: call with the root context. */}}
{{- define "interoperator.metricsTokenMount" -}}
{{- if .Values.metrics.tokenSecret.name }}
- name: metrics-token
  mountPath: /etc/interoperator/metrics
  readOnly: true
{{- end }}
{{- end }}

{{/* The metrics token's Secret as a volume, when there is one: call with the root context. */}}
{{- define "interoperator.metricsTokenVolume" -}}
{{- with .Values.metrics.tokenSecret.name }}
- name: metrics-token
  secret:
    secretName: {{ . }}
    items:
      - key: {{ $.Values.metrics.tokenSecret.key }}
        path: token
{{- end }}
{{- end }}

{{/* The operations port and the probes on it: call with the root context. */}}
{{- define "interoperator.operationsPort" -}}
- name: metrics
  containerPort: {{ .Values.metrics.port | int }}
  protocol: TCP
{{- end }}

{{/*
Probes of every process, on the operations port: /livez while the process works (a worker that can
no longer poll Temporal fails it), /readyz while it should get work (a stopping broker fails it first).
*/}}
{{- define "interoperator.probes" -}}
startupProbe:
  httpGet: { path: /livez, port: metrics }
  periodSeconds: 2
  failureThreshold: 60
livenessProbe:
  httpGet: { path: /livez, port: metrics }
  periodSeconds: 10
  failureThreshold: 3
readinessProbe:
  httpGet: { path: /readyz, port: metrics }
  periodSeconds: 5
  failureThreshold: 2
{{- end }}

{{/* Pod annotations for Prometheus's pod discovery, when enabled. */}}
{{- define "interoperator.scrapeAnnotations" -}}
{{- if .Values.metrics.scrapeAnnotations }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .Values.metrics.port | int | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- end }}

{{/*
Spread of one component's pods: the values' constraints, or else over zones and nodes, preferred
(a cluster without zones, or with fewer nodes than replicas, still schedules them). Call with
(list $ "broker" .Values.broker.topologySpreadConstraints).
*/}}
{{- define "interoperator.topologySpread" -}}
{{- $root := index . 0 -}}
{{- $component := index . 1 -}}
{{- $given := index . 2 -}}
{{- if $given }}
{{- toYaml $given }}
{{- else }}
{{- range $key := list "topology.kubernetes.io/zone" "kubernetes.io/hostname" }}
- maxSkew: 1
  topologyKey: {{ $key }}
  whenUnsatisfiable: ScheduleAnyway
  labelSelector:
    matchLabels:
      {{- include "interoperator.selectorLabels" (list $root $component) | nindent 6 }}
  # Only the pods of the same rollout count, so a rolling update does not skew the new ones.
  matchLabelKeys: [pod-template-hash]
{{- end }}
{{- end }}
{{- end }}

{{/* The Secret and key of the codec endpoint's token. */}}
{{- define "interoperator.codecTokenRef" -}}
{{- if .Values.codec.tokenSecret.name -}}
name: {{ .Values.codec.tokenSecret.name }}
key: {{ .Values.codec.tokenSecret.key }}
{{- else -}}
{{- if .Values.auth.existingSecret }}
{{- fail "codec.enabled with auth.existingSecret needs codec.tokenSecret.name: the chart makes no Secret to generate the codec token in" }}
{{- end -}}
name: {{ include "interoperator.secretName" . }}
key: codecToken
{{- end }}
{{- end }}

{{/*
Refuses a cluster worker the master's payload keys: it gets only those derived for its cluster
(`interoperator payload-key derive --cluster <id>` prints them), each named <key id>@<cluster id>.
*/}}
{{- define "interoperator.checkClusterWorkerKeys" -}}
{{- $clusterId := toString .Values.clusterWorker.clusterId }}
{{- $derive := printf "`interoperator payload-key derive --cluster %s` prints them from the master's INTEROP_PAYLOAD_KEYS" $clusterId }}
{{- if and (not .Values.clusterWorker.payloadKeys) (not .Values.clusterWorker.payloadKeysSecret) }}
{{- fail (printf "clusterWorker.enabled needs the payload keys derived for cluster %s: set clusterWorker.payloadKeys (%s) or clusterWorker.payloadKeysSecret" $clusterId $derive) }}
{{- end }}
{{- range $part := splitList "," (toString .Values.clusterWorker.payloadKeys) }}
{{- $id := trim (regexReplaceAll ":.*$" (trim $part) "") }}
{{- if and $id (not (contains "@" $id)) }}
{{- fail (printf "clusterWorker.payloadKeys: key %q is a master key: the cluster worker holds only the keys derived for cluster %s; %s" $id $clusterId $derive) }}
{{- end }}
{{- if and $id (ne (last (splitList "@" $id)) $clusterId) }}
{{- fail (printf "clusterWorker.payloadKeys: key %q is not derived for cluster %s (its id would end in @%s): the cluster worker holds only its cluster's keys; %s" $id $clusterId $clusterId $derive) }}
{{- end }}
{{- end }}
{{- if and (not .Values.broker.enabled) (not .Values.worker.enabled) .Values.auth.payloadKeys }}
{{- fail "auth.payloadKeys: a release with only a cluster worker holds no master keys: remove them, and give the cluster worker clusterWorker.payloadKeys" }}
{{- end }}
{{- end }}
