{{- define "tunetimeout.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "tunetimeout.fullname" -}}
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

{{- define "tunetimeout.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tunetimeout.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "tunetimeout.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "tunetimeout.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "tunetimeout.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
The arguments of tunetimeout watch, a YAML list of JSON strings (so a
selector's quotes and braces stay as they are). Each flag is one the
binary accepts: deploy/helm runs the binary on them.
*/}}
{{- define "tunetimeout.args" -}}
{{- $p := .Values.prometheus }}
{{- $w := .Values.watch }}
- watch
- {{ printf "--url=%s" (required "prometheus.url is required: the Prometheus HTTP API, e.g. http://prometheus-operated.monitoring:9090" $p.url) | toJson }}
- {{ printf "--metric=%s" (required "prometheus.metric is required: the histogram without _bucket, e.g. http_request_duration_seconds" $p.metric) | toJson }}
{{- with $p.selector }}
- {{ printf "--selector=%s" . | toJson }}
{{- end }}
- {{ printf "--listen=:%d" (int .Values.service.port) | toJson }}
- {{ printf "--every=%s" $w.every | toJson }}
- {{ printf "--window=%s" $w.window | toJson }}
{{- with $w.by }}
- {{ printf "--by=%s" (join "," .) | toJson }}
{{- end }}
{{- range $w.timeouts }}
- {{ printf "--timeout=%s" . | toJson }}
{{- end }}
{{- if $w.pool }}
- {{ printf "--pool=%d" (int $w.pool) | toJson }}
{{- end }}
{{- if $p.bearerTokenSecret.name }}
- {{ printf "--bearer-token-file=/etc/tunetimeout/bearer-token/%s" $p.bearerTokenSecret.key | toJson }}
{{- end }}
{{- if $p.basicAuth.user }}
{{- $_ := required "prometheus.basicAuth.passwordSecret.name is required with prometheus.basicAuth.user" $p.basicAuth.passwordSecret.name }}
- {{ printf "--basic-auth-user=%s" $p.basicAuth.user | toJson }}
- {{ printf "--basic-auth-password-file=/etc/tunetimeout/basic-auth/%s" $p.basicAuth.passwordSecret.key | toJson }}
{{- end }}
{{- if $p.headersSecret.name }}
- {{ printf "--header=@/etc/tunetimeout/headers/%s" $p.headersSecret.key | toJson }}
{{- end }}
{{- if $p.caConfigMap.name }}
- {{ printf "--ca-file=/etc/tunetimeout/ca/%s" $p.caConfigMap.key | toJson }}
{{- end }}
{{- range $w.extraArgs }}
- {{ toJson . }}
{{- end }}
{{- end }}
