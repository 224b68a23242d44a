{{- define "bookie-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "bookie-operator.fullname" -}}
{{- if contains (include "bookie-operator.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "bookie-operator.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "bookie-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "bookie-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "bookie-operator.labels" -}}
{{ include "bookie-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "bookie-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "bookie-operator.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The rules the operator needs, and no more. */}}
{{- define "bookie-operator.namespacedRules" -}}
- apiGroups: ["bookie-fleet.dev"]
  resources: ["bookieclusters"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["bookie-fleet.dev"]
  resources: ["bookieclusters/status"]
  verbs: ["get", "patch"]
- apiGroups: [""]
  resources: ["configmaps", "services"]
  verbs: ["get", "create", "patch"]
# The admin and audit tokens: read (the cluster's, or the one its spec names) and created once; the Secret of
# their hashes, which the bookie pods mount instead, applied (patch) when the tokens change. Never listed,
# watched or deleted (the BookieCluster's owner reference deletes the generated ones); create and patch cannot
# be narrowed by name in Kubernetes RBAC.
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "create", "patch"]
- apiGroups: ["policy"]
  resources: ["poddisruptionbudgets"]
  verbs: ["get", "create", "patch"]
- apiGroups: ["networking.k8s.io"]
  resources: ["networkpolicies"]
  verbs: ["get", "create", "patch", "delete"]
- apiGroups: ["apps"]
  resources: ["statefulsets"]
  verbs: ["get", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list", "delete"]
- apiGroups: [""]
  resources: ["persistentvolumeclaims"]
  verbs: ["get", "list", "create", "delete", "patch"]
# The storage audit (spec.audit): the report store, the identity of its Spark pods bound to the audit
# ClusterRole (bind: that role alone, so the operator grants nothing it could not grant before), a Job per run.
- apiGroups: [""]
  resources: ["serviceaccounts"]
  verbs: ["get", "create", "patch"]
- apiGroups: ["rbac.authorization.k8s.io"]
  resources: ["rolebindings"]
  verbs: ["get", "create", "patch"]
- apiGroups: ["rbac.authorization.k8s.io"]
  resources: ["clusterroles"]
  resourceNames: [{{ printf "%s-audit" (include "bookie-operator.fullname" .) | quote }}]
  verbs: ["bind"]
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "create", "patch"]
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["get", "create", "delete"]
- apiGroups: ["", "events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end -}}
