{{/* Spark analysis runs (RetentionPolicy analysis.engine SparkApplication). */}}

{{- define "ebb.spark.namespaces" -}}
{{- if .Values.spark.namespaces }}
{{- toYaml .Values.spark.namespaces }}
{{- else }}
{{- toYaml (list .Release.Namespace) }}
{{- end }}
{{- end }}

{{- define "ebb.spark.operatorRoleName" -}}
{{- printf "%s-spark-applications" (include "ebb.operator.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
