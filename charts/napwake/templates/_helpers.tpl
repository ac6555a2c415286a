{{/*
Names. The examples in wake-on-request.md assume the release "napwake" in the
namespace "napwake-system": napwake-doorman, napwake-doorman-pods,
napwake-doorman-wake-key. Keep the <release>-<component> shape.
*/}}
{{- define "napwake.operator.name" -}}{{ printf "%s-operator" .Release.Name | trunc 63 | trimSuffix "-" }}{{- end }}
{{- define "napwake.doorman.name" -}}{{ printf "%s-doorman" .Release.Name | trunc 63 | trimSuffix "-" }}{{- end }}
{{- define "napwake.doorman.podsService" -}}{{ printf "%s-doorman-pods" .Release.Name | trunc 63 | trimSuffix "-" }}{{- end }}
{{- define "napwake.doorman.wakeKeySecret" -}}{{ printf "%s-doorman-wake-key" .Release.Name | trunc 63 | trimSuffix "-" }}{{- end }}

{{/* The username the API server gives the operator's ServiceAccount. */}}
{{- define "napwake.operator.username" -}}system:serviceaccount:{{ .Release.Namespace }}:{{ include "napwake.operator.name" . }}{{- end }}

{{/* The username the API server gives the doorman's ServiceAccount. */}}
{{- define "napwake.doorman.username" -}}
system:serviceaccount:{{ .Release.Namespace }}:{{ include "napwake.doorman.name" . }}
{{- end }}

{{/*
A component's image reference from {repository, tag, digest}: the digest wins
over the tag; an empty tag means the chart's appVersion; global.imageRegistry,
when set, is prefixed to the repository.
Call with (dict "image" .Values.x.image "root" $).
*/}}
{{- define "napwake.image" -}}
{{- $repository := .image.repository -}}
{{- with .root.Values.global.imageRegistry -}}
{{- $repository = printf "%s/%s" (trimSuffix "/" .) $repository -}}
{{- end -}}
{{- if .image.digest -}}
{{ $repository }}@{{ .image.digest }}
{{- else -}}
{{ $repository }}:{{ .image.tag | default .root.Chart.AppVersion }}
{{- end -}}
{{- end }}

{{/*
A component's version as a label value: its image tag, else the chart's
appVersion (a tag is a valid label value up to 63 characters).
Call with (dict "image" .Values.x.image "root" $).
*/}}
{{- define "napwake.version" -}}
{{ .image.tag | default .root.Chart.AppVersion | trunc 63 | trimSuffix "-" | trimSuffix "." }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "napwake.labels" -}}
app.kubernetes.io/name: napwake
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: napwake
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Selector labels of the operator's pods (control-plane is what the docs' NetworkPolicies use). */}}
{{- define "napwake.operator.selectorLabels" -}}
app.kubernetes.io/name: napwake
app.kubernetes.io/instance: {{ .Release.Name }}
control-plane: controller-manager
{{- end }}

{{/* Selector labels of the doorman's pods. */}}
{{- define "napwake.doorman.selectorLabels" -}}
app.kubernetes.io/name: napwake
app.kubernetes.io/instance: {{ .Release.Name }}
control-plane: doorman
{{- end }}

{{/*
A component's extra topologySpreadConstraints, as a YAML list: each one
without a labelSelector is given the component's selector labels, so it
spreads that component's pods.
Call with (dict "constraints" .Values.x.topologySpreadConstraints "selector" (include "napwake.x.selectorLabels" $)).
*/}}
{{- define "napwake.topologySpread" -}}
{{- $out := list }}
{{- range .constraints }}
{{- $c := deepCopy . }}
{{- if not (hasKey $c "labelSelector") }}
{{- $_ := set $c "labelSelector" (dict "matchLabels" (fromYaml $.selector)) }}
{{- end }}
{{- $out = append $out $c }}
{{- end }}
{{- toYaml $out }}
{{- end }}

{{/* Values the schema cannot check: refuse them with a clear message. */}}
{{- define "napwake.validate" -}}
{{- if and .Values.doorman.networkPolicy.ingressFrom (not .Values.networkPolicy.enabled) }}
{{- fail "doorman.networkPolicy.ingressFrom is set but networkPolicy.enabled is false: it would create no NetworkPolicy and leave the doorman's routing ports open to everyone. Set networkPolicy.enabled=true, or remove doorman.networkPolicy.ingressFrom." }}
{{- end }}
{{- if .Values.doorman.networkPolicy.egress.enabled }}
{{- if not (or .Values.doorman.networkPolicy.egress.podCIDRs .Values.doorman.networkPolicy.egress.podsTo) }}
{{- fail "doorman.networkPolicy.egress.enabled needs doorman.networkPolicy.egress.podCIDRs (your cluster's pod CIDRs, every IP family) or doorman.networkPolicy.egress.podsTo (selectors, such as [{namespaceSelector: {}}]): without them the doorman could reach no workload." }}
{{- end }}
{{- if not .Values.doorman.networkPolicy.egress.apiServer }}
{{- fail "doorman.networkPolicy.egress.enabled needs doorman.networkPolicy.egress.apiServer (the API server's endpoint addresses as CIDRs, from `kubectl get endpointslices -n default -l kubernetes.io/service-name=kubernetes`): without them the doorman could not reach the API server." }}
{{- end }}
{{- end }}
{{- /* The doorman exits at most 43 s after SIGTERM: 15 s of service, 25 s
for open connections, 3 s of bookkeeping (doorman/main.go, stopsWithin).
The grace period keeps a margin of at least 5 s over that. */}}
{{- $minGrace := add .Values.doorman.preStopSleepSeconds 48 }}
{{- if lt (int .Values.doorman.terminationGracePeriodSeconds) (int $minGrace) }}
{{- fail (printf "doorman.terminationGracePeriodSeconds (%v) must be at least doorman.preStopSleepSeconds + 48 (%v): the doorman takes up to 43 s after SIGTERM to pass on or close the connections it holds and exit, and the grace period keeps a margin of 5 s over that." .Values.doorman.terminationGracePeriodSeconds $minGrace) }}
{{- end }}
{{- if and .Values.operator.prometheusHTTPConfig.secretName (not .Values.operator.prometheusURL) }}
{{- fail "operator.prometheusHTTPConfig.secretName needs operator.prometheusURL: the http config is for the Prometheus activity queries, which go nowhere without a URL." }}
{{- end }}
{{- if and .Values.doorman.negForwarder.enabled (not .Values.doorman.enabled) }}
{{- fail "doorman.negForwarder.enabled needs doorman.enabled: the forwarder passes connections to the doorman." }}
{{- end }}
{{- end }}

{{/*
Where a component's pods run and what they pull with: its nodeSelector,
tolerations, affinity and priority class, and the chart's pull secrets.
Call with (dict "c" .Values.<component> "root" $), inside a pod spec.
*/}}
{{- define "napwake.podPlacement" -}}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .c.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .c.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .c.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .c.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
