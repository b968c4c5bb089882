{{/* Names and labels shared by every component. Helpers are named ebb.<component>.<thing>. */}}

{{- define "ebb.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* release-chart, or the release name alone when it already contains the chart name. */}}
{{- define "ebb.fullname" -}}
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

{{- define "ebb.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "ebb.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* [registry/]repository:tag[@digest]; the tag defaults to the chart's appVersion. */}}
{{- define "ebb.image" -}}
{{- $ref := printf "%s:%s" .image.repository (default .appVersion .image.tag) }}
{{- with .registry }}{{ $ref = printf "%s/%s" (trimSuffix "/" .) $ref }}{{ end }}
{{- with .image.digest }}{{ $ref = printf "%s@%s" $ref . }}{{ end }}
{{- $ref }}
{{- end }}

{{/* imagePullSecrets of a pod: the chart-wide ones, then the component's (`list` the component's). */}}
{{- define "ebb.imagePullSecrets" -}}
{{- $secrets := concat .root.Values.imagePullSecrets .own }}
{{- with $secrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
