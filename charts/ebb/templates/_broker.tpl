{{/* The ebb-broker StatefulSet: names, labels, image, advertised host. */}}

{{- define "ebb.broker.fullname" -}}
{{- printf "%s-broker" (include "ebb.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "ebb.broker.headlessName" -}}
{{- printf "%s-broker-headless" (include "ebb.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "ebb.broker.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ebb.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: broker
{{- end }}

{{- define "ebb.broker.labels" -}}
{{ include "ebb.labels" . }}
app.kubernetes.io/component: broker
{{- end }}

{{- define "ebb.broker.image" -}}
{{- include "ebb.image" (dict "image" .Values.broker.image "appVersion" .Chart.AppVersion "registry" .Values.image.registry) }}
{{- end }}

{{/* The pod's stable DNS name; $(POD_NAME) is expanded by the kubelet from the container's env. */}}
{{- define "ebb.broker.advertisedHost" -}}
{{- if .Values.broker.advertisedHost }}
{{- .Values.broker.advertisedHost }}
{{- else }}
{{- printf "$(POD_NAME).%s.%s.svc.%s" (include "ebb.broker.headlessName" .) .Release.Namespace .Values.broker.clusterDomain }}
{{- end }}
{{- end }}

{{/* SASL_SSL (the default): the Secrets the broker and the operator read. */}}
{{- define "ebb.broker.tlsSecretName" -}}
{{- default (printf "%s-tls" (include "ebb.broker.fullname" .)) .Values.broker.security.tlsSecret }}
{{- end }}

{{- define "ebb.broker.adminSecretName" -}}
{{- default (printf "%s-admin" (include "ebb.broker.fullname" .)) .Values.broker.security.adminPasswordSecret }}
{{- end }}

{{/* The client properties Secret of the default KafkaCluster: the values' one, else the chart's. */}}
{{- define "ebb.broker.clientSecretName" -}}
{{- if .Values.operator.defaultCluster.credentialsSecret }}
{{- .Values.operator.defaultCluster.credentialsSecret }}
{{- else if and .Values.broker.enabled .Values.broker.security.enabled (not .Values.operator.defaultCluster.bootstrapServers) }}
{{- printf "%s-client" (include "ebb.broker.fullname" .) }}
{{- end }}
{{- end }}

{{/* super.users: the admin, then the values' extra principals. */}}
{{- define "ebb.broker.superUsers" -}}
{{- $users := list (printf "User:%s" .Values.broker.security.adminUser) }}
{{- range .Values.broker.security.superUsers }}{{ $users = append $users . }}{{ end }}
{{- join ";" $users }}
{{- end }}
