{{/*
The chart's name, or nameOverride.
*/}}
{{- define "executor-exporter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The objects' name: fullnameOverride, else the release name when it already
holds the chart's name, else <release>-<name>. Cut to 63 characters, the
limit of a DNS label.
*/}}
{{- define "executor-exporter.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "executor-exporter.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "executor-exporter.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride }}
{{- end }}

{{/*
Labels of every object.
*/}}
{{- define "executor-exporter.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: {{ include "executor-exporter.name" . }}
app.kubernetes.io/component: exporter
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{ include "executor-exporter.selectorLabels" . }}
{{- with .Values.commonLabels }}
{{ tpl (toYaml .) $ }}
{{- end }}
{{- end }}

{{/*
Labels that select the exporter's pods.
*/}}
{{- define "executor-exporter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "executor-exporter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "executor-exporter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "executor-exporter.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "executor-exporter.image" -}}
{{- $tag := default (printf "v%s" .Chart.AppVersion) .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s/%s:%s@%s" .Values.image.registry .Values.image.repository $tag .Values.image.digest }}
{{- else }}
{{- printf "%s/%s:%s" .Values.image.registry .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/*
The scheme the exporter serves: https with a web configuration that has TLS.
*/}}
{{- define "executor-exporter.scheme" -}}
{{- if and .Values.webConfig.enabled .Values.webConfig.tls }}https{{ else }}http{{ end }}
{{- end }}

{{/*
A probe of the metrics port: GET / (HTTPS with TLS), or a TCP connection
when basic auth would refuse the GET.
*/}}
{{- define "executor-exporter.probe" -}}
{{- if and .root.Values.webConfig.enabled .root.Values.webConfig.basicAuth }}
tcpSocket:
  port: metrics
{{- else }}
httpGet:
  path: /
  port: metrics
  scheme: {{ include "executor-exporter.scheme" .root | upper }}
{{- end }}
{{- with .probe }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
The container's security context: containerSecurityContext, made privileged
by oom.privileged (without allowPrivilegeEscalation, which the API server
rejects beside privileged).
*/}}
{{- define "executor-exporter.containerSecurityContext" -}}
{{- $sc := deepCopy .Values.containerSecurityContext }}
{{- if .Values.oom.privileged }}
{{- $_ := set $sc "privileged" true }}
{{- $_ := unset $sc "allowPrivilegeEscalation" }}
{{- end }}
{{- toYaml $sc }}
{{- end }}

{{/*
Refuses the values that would scrape every exporter twice: a ServiceMonitor
beside a PodMonitor, or either beside the prometheus.io/scrape annotations.
*/}}
{{- define "executor-exporter.validate" -}}
{{- if and .Values.serviceMonitor.enabled .Values.podMonitor.enabled }}
{{- fail "serviceMonitor.enabled and podMonitor.enabled: each scrapes every exporter; turn on one of them" }}
{{- end }}
{{- if and .Values.scrapeAnnotations (or .Values.serviceMonitor.enabled .Values.podMonitor.enabled) }}
{{- fail "scrapeAnnotations with a ServiceMonitor or PodMonitor scrapes every exporter twice; set scrapeAnnotations=false" }}
{{- end }}
{{- end }}

{{/*
Labels of the prometheus-operator objects: the chart's, monitoringLabels
(what the Prometheus selects them by) and the object's own additionalLabels.
*/}}
{{- define "executor-exporter.monitoringLabels" -}}
{{- $labels := merge (dict) (.own | default dict) (.root.Values.monitoringLabels | default dict) }}
{{- include "executor-exporter.labels" .root }}
{{- with $labels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
A scrape endpoint of the ServiceMonitor or the PodMonitor (.monitor is its
values): job="executor_exporter", the mixin's default selector, and
instance=<node name>, with the exporter pod's own namespace, pod and
container target labels dropped, which would otherwise rename the
executors' to exported_*.
*/}}
{{- define "executor-exporter.scrapeEndpoint" -}}
{{- $m := .monitor -}}
- port: metrics
  scheme: {{ include "executor-exporter.scheme" .root }}
  {{- with $m.interval }}
  interval: {{ . }}
  {{- end }}
  {{- with $m.scrapeTimeout }}
  scrapeTimeout: {{ . }}
  {{- end }}
  {{- with $m.tlsConfig }}
  tlsConfig:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $m.basicAuth }}
  basicAuth:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  relabelings:
    - action: replace
      targetLabel: job
      replacement: executor_exporter
    - action: replace
      sourceLabels: [__meta_kubernetes_pod_node_name]
      targetLabel: instance
    - action: labeldrop
      regex: namespace|pod|container
    {{- with $m.relabelings }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with $m.metricRelabelings }}
  metricRelabelings:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
