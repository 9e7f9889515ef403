{{- define "postgresql-server.labels" -}}
app.kubernetes.io/name: postgresql-server
app.kubernetes.io/instance: {{ .Values.name }}
{{- end }}
{{- define "postgresql-server.selector" -}}
app.kubernetes.io/name: postgresql-server
app.kubernetes.io/instance: {{ .Values.name }}
{{- end }}
