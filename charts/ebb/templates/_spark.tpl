{{/* Spark analysis runs (RetentionPolicy analysis.engine SparkApplication). */}}

{{/* The namespace of every run: spark.jobNamespace, else the release namespace. */}}
{{- define "ebb.spark.jobNamespace" -}}
{{- if .Values.spark.namespaces }}
{{- fail "spark.namespaces was removed: SparkApplication runs live in one jobs namespace, never a tenant's (set spark.jobNamespace; docs/operator.md, Threat model)" }}
{{- end }}
{{- default .Release.Namespace .Values.spark.jobNamespace }}
{{- end }}

{{- define "ebb.spark.operatorRoleName" -}}
{{- printf "%s-spark-applications" (include "ebb.operator.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* operator.imagePullSecrets ({name: ...} entries) as the comma-separated names the operator reads. */}}
{{- define "ebb.spark.imagePullSecrets" -}}
{{- $names := list }}
{{- range .Values.operator.imagePullSecrets }}
{{- $names = append $names .name }}
{{- end }}
{{- join "," $names }}
{{- end }}
