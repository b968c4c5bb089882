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
{{- include "ebb.image" (dict "image" .Values.broker.image "appVersion" .Chart.AppVersion) }}
{{- end }}

{{/* The pod's stable DNS name; $(POD_NAME) is expanded by the kubelet from the container's env. */}}
{{- define "ebb.broker.advertisedHost" -}}
{{- if .Values.broker.advertisedHost }}
{{- .Values.broker.advertisedHost }}
{{- else }}
{{- printf "$(POD_NAME).%s.%s.svc.%s" (include "ebb.broker.headlessName" .) .Release.Namespace .Values.broker.clusterDomain }}
{{- end }}
{{- end }}
