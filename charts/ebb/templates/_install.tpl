{{/* The chart's hook Jobs (python -m ebb_operator.install, the operator image): names and their flags.
     Nothing here generates anything: the Jobs make what no Secret holds yet, so `helm template` renders
     the same bytes every time. */}}

{{- define "ebb.install.fullname" -}}
{{- printf "%s-install" (include "ebb.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "ebb.uninstall.fullname" -}}
{{- printf "%s-uninstall" (include "ebb.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of what the hooks make (Secrets, the KafkaCluster), as JSON for the --labels flag. */}}
{{- define "ebb.install.objectLabels" -}}
{{- dict "app.kubernetes.io/name" (include "ebb.name" .) "app.kubernetes.io/instance" .Release.Name | toJson }}
{{- end }}

{{- define "ebb.broker.caSecretName" -}}
{{- printf "%s-ca" (include "ebb.broker.fullname" .) }}
{{- end }}

{{/* The names the broker's certificate covers: its Services, its pods behind the headless Service,
     localhost, then broker.security.extraDnsNames and broker.advertisedHost (a YAML list). */}}
{{- define "ebb.broker.dnsNames" -}}
{{- $ns := .Release.Namespace }}
{{- $full := include "ebb.broker.fullname" . }}
{{- $headless := include "ebb.broker.headlessName" . }}
{{- $domain := .Values.broker.clusterDomain }}
{{- $names := list (printf "*.%s.%s.svc.%s" $headless $ns $domain) (printf "*.%s.%s.svc" $headless $ns) (printf "%s.%s.svc.%s" $full $ns $domain) (printf "%s.%s.svc" $full $ns) (printf "%s.%s" $full $ns) $full "localhost" }}
{{- range .Values.broker.security.extraDnsNames }}{{ $names = append $names . }}{{ end }}
{{- with .Values.broker.advertisedHost }}{{ $names = append $names . }}{{ end }}
{{- toYaml $names }}
{{- end }}

{{/* pre-install/pre-upgrade: the broker's credentials, made once; the Secrets 0.1.0 rendered, kept. */}}
{{- define "ebb.install.prepareArgs" -}}
{{- if and .Values.broker.enabled .Values.broker.security.enabled }}
{{- $sec := .Values.broker.security }}
{{- $full := include "ebb.broker.fullname" . }}
- --namespace={{ .Release.Namespace }}
- {{ printf "--labels=%s" (include "ebb.install.objectLabels" .) | quote }}
{{- range list (printf "%s-tls" $full) (printf "%s-admin" $full) (printf "%s-client" $full) }}
- --keep={{ . }}
{{- end }}
{{- if not $sec.adminPasswordSecret }}
- --admin-secret={{ include "ebb.broker.adminSecretName" . }}
- --admin-user={{ $sec.adminUser }}
{{- end }}
{{- if and $sec.certManager.enabled (not $sec.certManager.issuerRef.name) }}
- --issuer-ca-secret={{ include "ebb.broker.caSecretName" . }}
{{- else if and (not $sec.certManager.enabled) (not $sec.tlsSecret) }}
- --tls-secret={{ include "ebb.broker.tlsSecretName" . }}
- --common-name={{ $full }}
{{- range include "ebb.broker.dnsNames" . | fromYamlArray }}
- --dns-name={{ . }}
{{- end }}
- --ip=127.0.0.1
{{- end }}
- --ca-name={{ $full }}-ca
- --days={{ int $sec.certificateDays }}
{{- end }}
{{- end }}

{{/* post-install/post-upgrade: the chart broker's client Secret, the default KafkaCluster. */}}
{{- define "ebb.install.finishArgs" -}}
{{- $bootstrap := include "ebb.operator.defaultBootstrapServers" . }}
{{- $ownClient := and .Values.broker.enabled .Values.broker.security.enabled (not .Values.operator.defaultCluster.credentialsSecret) (not .Values.operator.defaultCluster.bootstrapServers) }}
{{- $cluster := and .Values.operator.defaultCluster.create $bootstrap }}
{{- if or $ownClient $cluster }}
- --namespace={{ .Release.Namespace }}
- {{ printf "--labels=%s" (include "ebb.install.objectLabels" .) | quote }}
{{- if $ownClient }}
- --client-secret={{ include "ebb.broker.clientSecretName" . }}
- --admin-secret={{ include "ebb.broker.adminSecretName" . }}
- --admin-user={{ .Values.broker.security.adminUser }}
- --tls-secret={{ include "ebb.broker.tlsSecretName" . }}
{{- end }}
{{- if $cluster }}
{{- $spec := dict "bootstrapServers" $bootstrap "access" (include "ebb.operator.defaultAccess" . | fromYamlArray) }}
{{- with include "ebb.broker.clientSecretName" . }}
{{- $_ := set $spec "credentials" (dict "secretRef" (dict "name" .)) }}
{{- end }}
{{- with .Values.operator.defaultCluster.analysisCredentialsSecret }}
{{- $_ := set $spec "analysisCredentials" (dict "secretRef" (dict "name" .)) }}
{{- end }}
- --kafka-cluster={{ .Values.operator.defaultCluster.name }}
- {{ printf "--kafka-cluster-spec=%s" ($spec | toJson) | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* A hook Job running `python -m ebb_operator.install STEP ARGS` under ServiceAccount `sa`. */}}
{{- define "ebb.install.job" -}}
{{- $root := .root }}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ printf "%s-%s" (include "ebb.fullname" $root) .step | trunc 63 | trimSuffix "-" }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "ebb.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .step }}
  annotations:
    helm.sh/hook: {{ .hook }}
    helm.sh/hook-weight: "0"
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
    helm.sh/hook-output-log-policy: hook-failed
spec:
  backoffLimit: 3
  activeDeadlineSeconds: 600
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {{ include "ebb.name" $root }}
        app.kubernetes.io/instance: {{ $root.Release.Name }}
        app.kubernetes.io/component: {{ .step }}
    spec:
      serviceAccountName: {{ .sa }}
      restartPolicy: Never
      {{- with include "ebb.imagePullSecrets" (dict "root" $root "own" $root.Values.operator.imagePullSecrets) }}
      {{- . | nindent 6 }}
      {{- end }}
      securityContext:
        runAsNonRoot: true
        runAsUser: 10001
        runAsGroup: 10001
        seccompProfile:
          type: RuntimeDefault
      containers:
        - name: {{ .step }}
          image: {{ include "ebb.operator.image" $root }}
          imagePullPolicy: {{ $root.Values.operator.image.pullPolicy }}
          command: ["python", "-m", "ebb_operator.install", {{ .command | quote }}]
          args:
            {{- .args | trim | nindent 12 }}
          resources:
            requests:
              cpu: 50m
              memory: 96Mi
            limits:
              memory: 256Mi
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities:
              drop: ["ALL"]
          volumeMounts:
            - name: tmp
              mountPath: /tmp
      volumes:
        - name: tmp
          emptyDir: {}
      {{- with $root.Values.operator.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $root.Values.operator.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end }}

{{/* The hook RBAC's annotations: made before its Jobs, gone once they succeeded. */}}
{{- define "ebb.install.rbacAnnotations" -}}
helm.sh/hook: {{ . }}
helm.sh/hook-weight: "-10"
helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
{{- end }}
