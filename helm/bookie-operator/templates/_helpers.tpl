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

{{/* The rules the operator needs in a namespace it watches, each verb for what uses it, and no more
(tests/operator/test_operator_helm_chart_rbac.py checks them against the operator's calls). */}}
{{- define "bookie-operator.namespacedRules" -}}
# Kopf lists, watches and patches BookieClusters (its finalizer and annotations); the reconcile reads one fresh
# (get) and writes its status.
- apiGroups: ["bookie-fleet.dev"]
  resources: ["bookieclusters"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["bookie-fleet.dev"]
  resources: ["bookieclusters/status"]
  verbs: ["patch"]
# The bookies' configuration, Services, PodDisruptionBudget: server-side apply (get to compare, create and
# patch). Adopting an existing fleet (spec.adopt) deletes its headless Service when it is somebody else's, so
# that the operator's own takes its name.
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "create", "patch"]
- apiGroups: [""]
  resources: ["services"]
  verbs: ["get", "create", "patch", "delete"]
# The admin and audit tokens: read (the cluster's, or the one its spec names) and created once; the Secret of
# their hashes, which the bookie pods mount instead, applied (patch) when the tokens change. Every Secret a spec
# names is read (get) for its owner and labels: only the cluster's own may be mounted. Never listed,
# watched or deleted (the BookieCluster's owner reference deletes the generated ones); create and patch cannot
# be narrowed by name in Kubernetes RBAC.
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "create", "patch"]
- apiGroups: ["policy"]
  resources: ["poddisruptionbudgets"]
  verbs: ["get", "create", "patch"]
# spec.networkPolicy, deleted when turned off.
- apiGroups: ["networking.k8s.io"]
  resources: ["networkpolicies"]
  verbs: ["get", "create", "patch", "delete"]
# The bookies; deleted with orphaned pods when an immutable field changes (volume growth) or on adoption.
- apiGroups: ["apps"]
  resources: ["statefulsets"]
  verbs: ["get", "create", "patch", "delete"]
# The bookie pods: listed to observe them, deleted for rolling restarts, decommissions, start failures and the
# audit's finished Spark pods; a decommission reads the pod it retires (get); adoption labels the pods it takes
# over (patch).
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "patch", "delete"]
# Claims: listed and deleted by decommissions and start failures, grown by volume expansion (patch), the audit's
# report store applied.
- apiGroups: [""]
  resources: ["persistentvolumeclaims"]
  verbs: ["get", "list", "create", "patch", "delete"]
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
# Events about the BookieCluster, the operator's and Kopf's (core v1, created only).
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create"]
{{- end -}}

{{/* An upgrade never silently stops managing BookieClusters: when the release's operator watches every
namespace now (its Deployment runs with --all-namespaces, as chart 0.1.0 did by default) and the new values
narrow it (clusterWide false), the BookieClusters outside the namespaces it would keep are named and the upgrade
fails before anything changes. Nothing to look up under helm template or a client-side dry run. */}}
{{- define "bookie-operator.upgradeKeepsWatchedClusters" -}}
{{- if and .Release.IsUpgrade (not .Values.clusterWide) -}}
{{- $deployment := lookup "apps/v1" "Deployment" .Release.Namespace (include "bookie-operator.fullname" .) -}}
{{- $args := list -}}
{{- range ($deployment.spec | default dict).template.spec.containers | default list -}}
{{- if eq .name "operator" }}{{ $args = .args | default list }}{{ end -}}
{{- end -}}
{{- if has "--all-namespaces" $args -}}
{{- $kept := default (list .Release.Namespace) .Values.watchNamespaces -}}
{{- $left := list -}}
{{- range (lookup "bookie-fleet.dev/v1beta1" "BookieCluster" "" "").items | default list -}}
{{- if not (has .metadata.namespace $kept) -}}
{{- $left = append $left (printf "%s/%s" .metadata.namespace .metadata.name) -}}
{{- end -}}
{{- end -}}
{{- if $left -}}
{{- fail (printf "this upgrade would stop managing BookieClusters %s: the release's operator watches every namespace now, and these values watch %s only. Set clusterWide=true to keep every namespace, or list those namespaces in watchNamespaces (docs/operator.md, \"Where the operator acts\")" (join ", " $left) (join ", " $kept)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
