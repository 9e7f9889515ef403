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

{{- define "interoperator.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* Settings both processes read: the ConfigMap, and the payload keys from the Secret. */}}
{{- define "interoperator.commonEnv" -}}
- name: INTEROP_PAYLOAD_KEYS
  valueFrom:
    secretKeyRef:
      name: {{ include "interoperator.secretName" . }}
      key: payloadKeys
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

{{/* Checksums that roll the pods when their configuration changes. */}}
{{- define "interoperator.configChecksums" -}}
checksum/config: {{ include (print .Template.BasePath "/configmap.yaml") . | sha256sum }}
{{- if not .Values.auth.existingSecret }}
checksum/auth-input: {{ printf "%s|%s|%s|%s|%s" .Values.auth.username .Values.auth.password .Values.auth.payloadKeys .Values.auth.adminUsername .Values.auth.adminPassword | sha256sum }}
{{- end }}
{{- end }}

{{/* RBAC rules of the broker and the workers, in the ClusterRole or in each Role. */}}
{{- define "interoperator.rules" -}}
# Our own resources: the catalog, the records and the cluster registry.
- apiGroups: [osb.servicefabrik.io]
  resources: [sfservices, sfplans, sfserviceinstances, sfservicebindings, sfserviceinstances/status, sfservicebindings/status, sfservices/status, sfplans/status]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [resource.servicefabrik.io]
  resources: [sfclusters, sfclusters/status]
  verbs: [get, list, watch, create, update, patch, delete]
# Kubeconfigs of the clusters, binding credentials, and what the operators create for an instance.
- apiGroups: ['']
  resources: [secrets, services, configmaps]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: ['']
  resources: [events]
  verbs: [create, patch]
- apiGroups: [events.k8s.io]
  resources: [events]
  verbs: [create, patch]
{{- with .Values.rbac.operatorApiGroups }}
# The operators' custom resources that the plans render.
- apiGroups: {{ toJson . }}
  resources: ['*']
  verbs: ['*']
{{- end }}
{{- end }}
