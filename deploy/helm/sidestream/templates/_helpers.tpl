{{/* Names. */}}
{{- define "sidestream.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "sidestream.fullname" -}}
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

{{- define "sidestream.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "sidestream.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sidestream.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "sidestream.labels" -}}
helm.sh/chart: {{ include "sidestream.chart" . }}
{{ include "sidestream.selectorLabels" . }}
app.kubernetes.io/version: {{ include "sidestream.imageTag" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "sidestream.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "sidestream.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "sidestream.imageTag" -}}
{{- default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{/* The image reference: repository@digest when a digest is set (the tag
then only labels the objects), else repository:tag. */}}
{{- define "sidestream.image" -}}
{{- with .Values.image.digest }}
{{- printf "%s@%s" $.Values.image.repository . }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (include "sidestream.imageTag" .) }}
{{- end }}
{{- end }}

{{/* The helm test pod's labels: the release's, but not the selector
labels, so the Service never routes to it. */}}
{{- define "sidestream.testLabels" -}}
helm.sh/chart: {{ include "sidestream.chart" . }}
app.kubernetes.io/name: {{ include "sidestream.name" . }}-test
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: test
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The API's in-cluster base URL through the Service (the name its TLS
certificate must carry is <fullname>.<namespace>.svc). */}}
{{- define "sidestream.serviceURL" -}}
{{- printf "%s://%s.%s.svc:%v" (ternary "https" "http" (not (empty .Values.api.tls.existingSecret))) (include "sidestream.fullname" .) .Release.Namespace .Values.service.port }}
{{- end }}

{{/*
sidestream.topology is the effective topology as YAML: .Values.topology
when set (whole, never merged), as an object or as the text of a file
(--set-file topology=FILE), else the chart's copy of the repo's example.
*/}}
{{- define "sidestream.topology" -}}
{{- if kindIs "string" .Values.topology }}
{{- if not (trim .Values.topology) }}
{{- .Files.Get "files/logs-by-level.yaml" }}
{{- else }}
{{- .Values.topology }}
{{- end }}
{{- else if .Values.topology }}
{{- toYaml .Values.topology }}
{{- else }}
{{- .Files.Get "files/logs-by-level.yaml" }}
{{- end }}
{{- end }}

{{/*
sidestream.schemas is the JSON Schema files mounted next to the topology, as
a JSON object of file name to content: the example's when the example
topology is used, plus .Values.schemas.
*/}}
{{- define "sidestream.schemas" -}}
{{- $s := dict }}
{{- if not (include "sidestream.userTopology" .) }}
{{- range $path, $_ := .Files.Glob "files/schemas/*.json" }}
{{- $_ := set $s (base $path) ($.Files.Get $path) }}
{{- end }}
{{- end }}
{{- range $name, $schema := .Values.schemas }}
{{- $_ := set $s $name $schema }}
{{- end }}
{{- toJson $s }}
{{- end }}

{{/* The workload kind, checked. */}}
{{- define "sidestream.kind" -}}
{{- if eq .Values.workload "statefulset" }}StatefulSet
{{- else if eq .Values.workload "deployment" }}Deployment
{{- else }}{{ fail (printf "workload must be statefulset or deployment, not %q" .Values.workload) }}
{{- end }}
{{- end }}

{{- define "sidestream.staticMembership" -}}
{{- if and (eq .Values.workload "statefulset") .Values.router.staticMembership }}true{{ end }}
{{- end }}

{{/*
sidestream.seconds turns a Go duration ("100ms", "1m30s", "10s") into
seconds, as a float. Rendering fails on anything else, since the grace
period check below depends on it.
*/}}
{{- define "sidestream.seconds" -}}
{{- $d := toString .d }}
{{- if not (regexMatch "^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$|^0$" $d) }}
{{- fail (printf "%s: %q is not a Go duration such as 100ms, 30s or 1m30s" .what $d) }}
{{- end }}
{{- $units := dict "ns" 0.000000001 "us" 0.000001 "µs" 0.000001 "ms" 0.001 "s" 1.0 "m" 60.0 "h" 3600.0 }}
{{- $total := 0.0 }}
{{- range regexFindAll "[0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h)" $d -1 }}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" . }}
{{- $unit := trimPrefix $num . }}
{{- $total = addf $total (mulf (float64 $num) (get $units $unit)) }}
{{- end }}
{{- $total }}
{{- end }}

{{/*
sidestream.checks fails rendering on values that cannot work. Included
once, from the workload.
*/}}
{{- define "sidestream.checks" -}}
{{- $top := include "sidestream.topology" . | fromYaml }}
{{- if hasKey $top "Error" }}
{{- fail (printf "topology: %s" $top.Error) }}
{{- end }}
{{- if not $top.application_id }}
{{- fail "topology.application_id is required: it names the consumer group and prefixes the transactional ids" }}
{{- end }}
{{- if and (not .Values.kafka.brokers) (not $top.brokers) }}
{{- fail "no brokers: set kafka.brokers (or topology.brokers)" }}
{{- end }}
{{- $txn := include "sidestream.seconds" (dict "d" .Values.router.transactionTimeout "what" "router.transactionTimeout") | float64 }}
{{- $commit := include "sidestream.seconds" (dict "d" ($top.commit_interval | default "100ms") "what" "topology.commit_interval") | float64 }}
{{- $shutdown := include "sidestream.seconds" (dict "d" ($top.shutdown_timeout | default "30s") "what" "topology.shutdown_timeout") | float64 }}
{{- $need := addf $txn $commit $shutdown 5 }}
{{- if le (float64 .Values.terminationGracePeriodSeconds) $need }}
{{- fail (printf "terminationGracePeriodSeconds (%v) must exceed router.transactionTimeout + topology.commit_interval + topology.shutdown_timeout + 5s of HTTP drain = %vs, or a stopping pod is killed before it ends its transaction and leaves the group" .Values.terminationGracePeriodSeconds $need) }}
{{- end }}
{{- $keda := .Values.autoscaling.keda }}
{{- $hpa := .Values.autoscaling.hpa }}
{{- if and $keda.enabled $hpa.enabled }}
{{- fail "autoscaling.keda.enabled and autoscaling.hpa.enabled are mutually exclusive: KEDA creates and owns its own HorizontalPodAutoscaler; enable one of them" }}
{{- end }}
{{- if and .Values.kafka.tls.clientCert (not .Values.kafka.tls.existingSecret) }}
{{- fail "kafka.tls.clientCert needs kafka.tls.existingSecret: the Secret with ca.crt, tls.crt and tls.key to mount" }}
{{- end }}
{{- if and .Values.schemaRegistry.tls.clientCert (not .Values.schemaRegistry.tls.existingSecret) }}
{{- fail "schemaRegistry.tls.clientCert needs schemaRegistry.tls.existingSecret: the Secret with ca.crt, tls.crt and tls.key to mount" }}
{{- end }}
{{- if and .Values.kafka.saslMechanism .Values.kafka.existingSecret }}
{{- fail "kafka.saslMechanism and kafka.existingSecret both set SIDESTREAM_SASL_MECHANISM: put the mechanism in the Secret (kafka.secretKeys.mechanism), or leave kafka.existingSecret empty" }}
{{- end }}
{{- if and .Values.httpRoute.enabled (not .Values.httpRoute.parentRefs) }}
{{- fail "httpRoute.enabled needs httpRoute.parentRefs: the Gateway (name, namespace, sectionName) the route attaches to" }}
{{- end }}
{{- if and .Values.monitoring.serviceMonitor.enabled .Values.monitoring.podMonitor.enabled }}
{{- fail "monitoring.serviceMonitor.enabled and monitoring.podMonitor.enabled are mutually exclusive: every series would be scraped twice; enable one of them" }}
{{- end }}
{{- with .Values.api }}
{{- if and (eq .auth "bearer") (not .bearer.existingSecret) }}
{{- fail "api.auth: bearer needs api.bearer.existingSecret: the Secret with the accepted tokens (the chart never writes a token into a manifest)" }}
{{- end }}
{{- if and (eq .auth "mtls") (not .tls.existingSecret) }}
{{- fail "api.auth: mtls needs api.tls.existingSecret: the kubernetes.io/tls Secret the API serves, whose ca.crt signs the client certificates" }}
{{- end }}
{{- if and .protectMetrics (eq .auth "none") }}
{{- fail "api.protectMetrics needs api.auth bearer or mtls: with none nothing protects /metrics" }}
{{- end }}
{{- if and .protectMetrics (eq .auth "mtls") (or $.Values.monitoring.serviceMonitor.enabled $.Values.monitoring.podMonitor.enabled) (not .tls.prometheusClientSecret) }}
{{- fail "api.protectMetrics with api.auth: mtls needs api.tls.prometheusClientSecret: the client certificate Prometheus presents to scrape /metrics" }}
{{- end }}
{{- end }}
{{- with .Values.persistence }}
{{- if .enabled }}
{{- if eq $.Values.workload "deployment" }}
{{- fail "persistence.enabled needs workload: statefulset: a Deployment's pods would share one volume (or lose theirs at every rollout); a StatefulSet gives each pod its own claim" }}
{{- end }}
{{- if and (semverCompare "<1.27-0" $.Capabilities.KubeVersion.Version) (or (ne .retention.whenDeleted "Retain") (ne .retention.whenScaled "Retain")) }}
{{- fail (printf "persistence.retention (whenDeleted %s, whenScaled %s) needs Kubernetes 1.27 or later for the StatefulSet's persistentVolumeClaimRetentionPolicy; on %s the claims are always retained: leave both Retain" .retention.whenDeleted .retention.whenScaled $.Capabilities.KubeVersion.Version) }}
{{- end }}
{{- $mount := clean .mountPath }}
{{- range $taken, $what := dict "/etc/sidestream" "the read-only topology and certificates" "/tmp" "a 64Mi emptyDir" }}
{{- if or (eq $mount $taken) (hasPrefix (printf "%s/" $taken) $mount) (hasPrefix (printf "%s/" (trimSuffix "/" $mount)) $taken) }}
{{- fail (printf "persistence.mountPath %q collides with %s (%s), which the chart mounts itself; use a directory of its own such as /var/lib/sidestream" $.Values.persistence.mountPath $taken $what) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* The autoscaler's upper bound: the value, or inputPartitions; never above it. */}}
{{- define "sidestream.maxReplicas" -}}
{{- $max := .max | default .root.Values.inputPartitions | int }}
{{- if gt $max (int .root.Values.inputPartitions) }}
{{- fail (printf "%s (%d) is above inputPartitions (%d): pods beyond the input partition count sit idle and only add rebalances" .what $max (int .root.Values.inputPartitions)) }}
{{- end }}
{{- $max }}
{{- end }}

{{/* The PromQL matchers that select this release's series. */}}
{{- define "sidestream.promSelector" -}}
{{- default (printf "namespace=%q,job=%q" .Release.Namespace (include "sidestream.fullname" .)) .Values.monitoring.prometheusRule.selector }}
{{- end }}

{{/* How pods reach each other's HTTP API (router --owner-url-template):
the value, or the pod's stable DNS name under the StatefulSet's headless
Service, or the pod IP the broker saw under a Deployment. */}}
{{- define "sidestream.ownerURLTemplate" -}}
{{- if .Values.router.ownerURLTemplate }}
{{- .Values.router.ownerURLTemplate }}
{{- else if eq .Values.workload "statefulset" }}
{{- printf "http://{instance}.%s-headless.%s.svc:8080" (include "sidestream.fullname" .) .Release.Namespace }}
{{- else }}
{{- print "http://{host}:8080" }}
{{- end }}
{{- end }}

{{/* How Prometheus scrapes /metrics: https with the API's CA, and the
bearer token or client certificate when /metrics is protected. Shared by
the ServiceMonitor and the PodMonitor. */}}
{{- define "sidestream.scrapeAuth" -}}
{{- $api := .Values.api }}
{{- if $api.tls.existingSecret }}
scheme: https
tlsConfig:
  ca:
    secret:
      name: {{ $api.tls.existingSecret }}
      key: ca.crt
  serverName: {{ printf "%s.%s.svc" (include "sidestream.fullname" .) .Release.Namespace }}
  {{- if and $api.protectMetrics (eq $api.auth "mtls") }}
  cert:
    secret:
      name: {{ $api.tls.prometheusClientSecret }}
      key: tls.crt
  keySecret:
    name: {{ $api.tls.prometheusClientSecret }}
    key: tls.key
  {{- end }}
{{- end }}
{{- if and $api.protectMetrics (eq $api.auth "bearer") }}
authorization:
  type: Bearer
  credentials:
    name: {{ $api.bearer.existingSecret }}
    key: {{ $api.bearer.prometheusKey }}
{{- end }}
{{- end }}

{{/*
sidestream.userTopology is "true" when the values carry a topology (an
object, or a non-blank string from --set-file).
*/}}
{{- define "sidestream.userTopology" -}}
{{- if kindIs "string" .Values.topology }}
{{- if trim .Values.topology }}true{{ end }}
{{- else if .Values.topology }}true{{ end }}
{{- end }}

{{/*
sidestream.goMemLimit is the GOMEMLIMIT value, "" for none: router.goMemLimit
as is, or with "auto" 90% of resources.limits.memory in bytes (none without
a memory limit), so the garbage collector works harder before the kernel's
OOM killer acts.
*/}}
{{- define "sidestream.goMemLimit" -}}
{{- $v := .Values.router.goMemLimit | toString }}
{{- if eq $v "auto" }}
{{- $mem := dig "limits" "memory" "" (.Values.resources | default dict) | toString }}
{{- if $mem }}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" $mem }}
{{- $unit := trimPrefix $num $mem }}
{{- $units := dict "" 1.0 "k" 1000.0 "K" 1000.0 "M" 1000000.0 "G" 1000000000.0 "T" 1000000000000.0 "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 }}
{{- if or (not $num) (not (hasKey $units $unit)) }}
{{- fail (printf "resources.limits.memory %q: router.goMemLimit auto understands a number with k, M, G, T, Ki, Mi, Gi or Ti; set router.goMemLimit explicitly" $mem) }}
{{- end }}
{{- printf "%d" (mulf (float64 $num) (get $units $unit) 0.9 | floor | int64) }}
{{- end }}
{{- else }}
{{- $v }}
{{- end }}
{{- end }}

{{/*
sidestream.objectives is the objectives the topology declares, as a JSON
list of {route, objective, max, window, pause}: dirty.slo (objective
dirty_share, route dirty) and the slo of each route (late_share on a
window route, then event_time_lag, its max the duration as written), as
the router compiles them (internal/plan/objectives.go). The
PrometheusRule generates one alert per objective from it.
*/}}
{{- define "sidestream.objectives" -}}
{{- $top := include "sidestream.topology" . | fromYaml }}
{{- $out := list }}
{{- with (($top.dirty | default dict).slo) }}
{{- if hasKey . "max_dirty_share" }}
{{- $out = append $out (dict "route" "dirty" "objective" "dirty_share" "max" .max_dirty_share "window" (ternary (printf "%d records" (int64 (.records | default 0))) (printf "%v" .span) (hasKey . "records")) "pause" (eq (.on_breach | default "alert") "pause")) }}
{{- end }}
{{- end }}
{{- range ($top.routes | default list) }}
{{- if .slo }}
{{- $window := ternary (printf "%d records" (int64 (.slo.records | default 0))) (printf "%v" .slo.span) (hasKey .slo "records") }}
{{- $pause := eq (.slo.on_breach | default "alert") "pause" }}
{{- if and .window (hasKey .slo "max_late_share") }}
{{- $out = append $out (dict "route" .name "objective" "late_share" "max" .slo.max_late_share "window" $window "pause" $pause) }}
{{- end }}
{{- if hasKey .slo "max_event_time_lag" }}
{{- $out = append $out (dict "route" .name "objective" "event_time_lag" "max" .slo.max_event_time_lag "window" $window "pause" $pause) }}
{{- end }}
{{- end }}
{{- end }}
{{- toJson $out }}
{{- end }}
