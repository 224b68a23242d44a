{{/* The alert rules file with the chart's values in place of its [[markers]]. */}}
{{- define "bookie-operator.alertRules" -}}
{{- $rules := .Files.Get "files/bookie-alerts.yaml" -}}
{{- range $key, $value := .Values.monitoring.alerts -}}
{{- $rules = replace (printf "[[%s]]" $key) (toString $value) $rules -}}
{{- end -}}
{{- $rules -}}
{{- end -}}
