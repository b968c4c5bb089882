{{/* The operator: names, labels, image, and its default cluster. */}}

{{- define "ebb.operator.fullname" -}}
{{- printf "%s-operator" (include "ebb.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "ebb.operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ebb.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{- define "ebb.operator.labels" -}}
{{ include "ebb.labels" . }}
app.kubernetes.io/component: operator
{{- end }}

{{- define "ebb.operator.serviceAccountName" -}}
{{- if .Values.operator.serviceAccount.create }}
{{- default (include "ebb.operator.fullname" .) .Values.operator.serviceAccount.name }}
{{- else }}
{{- required "operator.serviceAccount.name is required when operator.serviceAccount.create is false" .Values.operator.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "ebb.operator.image" -}}
{{- include "ebb.image" (dict "image" .Values.operator.image "appVersion" .Chart.AppVersion "registry" .Values.image.registry) }}
{{- end }}

{{/* bootstrap.servers of the chart's default KafkaCluster: the value, else the chart's broker, else empty. */}}
{{- define "ebb.operator.defaultBootstrapServers" -}}
{{- if .Values.operator.defaultCluster.bootstrapServers }}
{{- .Values.operator.defaultCluster.bootstrapServers }}
{{- else if .Values.broker.enabled }}
{{- printf "%s.%s.svc.%s:%d" (include "ebb.broker.fullname" .) .Release.Namespace .Values.broker.clusterDomain (int .Values.broker.port) }}
{{- end }}
{{- end }}

{{/* The grants of the default KafkaCluster: the values' list, else the release namespace on every topic. */}}
{{- define "ebb.operator.defaultAccess" -}}
{{- if .Values.operator.defaultCluster.access }}
{{- toYaml .Values.operator.defaultCluster.access }}
{{- else }}
- namespaces: [{{ .Release.Namespace | quote }}]
  topics: [".*"]
  allow: [GuardNone, ForcedRetention, Compaction, SparkOverrides]
{{- end }}
{{- end }}

{{/* The admission webhook: its Service, the name the API server calls (and the certificate names). */}}
{{- define "ebb.operator.webhookService" -}}
{{- printf "%s-webhook" (include "ebb.operator.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "ebb.operator.webhookHost" -}}
{{- printf "%s.%s.svc" (include "ebb.operator.webhookService" .) .Release.Namespace }}
{{- end }}

{{/* The operator makes its own webhook certificate (no cert-manager). */}}
{{- define "ebb.operator.webhookSelfSigned" -}}
{{- if and .Values.operator.webhook.enabled (not .Values.operator.webhook.certManager.enabled) }}true{{ end }}
{{- end }}
