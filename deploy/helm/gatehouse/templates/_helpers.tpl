{{/* The chart's name, or nameOverride. */}}
{{- define "gatehouse.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The full name of the release's objects: fullnameOverride, or the release name when it already
contains the chart's name, or <release>-<chart>. Truncated to 63 characters (a DNS label).
*/}}
{{- define "gatehouse.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The admin Service's name: <fullname>-admin, within 63 characters. */}}
{{- define "gatehouse.adminServiceName" -}}
{{- printf "%s-admin" (include "gatehouse.fullname" . | trunc 57 | trimSuffix "-") -}}
{{- end -}}

{{/* chart-version, for the helm.sh/chart label. */}}
{{- define "gatehouse.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The labels the pods are selected by; they never change across upgrades. */}}
{{- define "gatehouse.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gatehouse.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The standard labels of every object. */}}
{{- define "gatehouse.labels" -}}
helm.sh/chart: {{ include "gatehouse.chart" . }}
{{ include "gatehouse.selectorLabels" . }}
app.kubernetes.io/version: {{ include "gatehouse.imageTag" . | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: gatehouse
{{- end -}}

{{/* The ServiceAccount the pods run as. */}}
{{- define "gatehouse.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "gatehouse.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* image.tag, or the chart's appVersion. */}}
{{- define "gatehouse.imageTag" -}}
{{- default .Chart.AppVersion .Values.image.tag -}}
{{- end -}}

{{/* The container image: repository@digest when a digest is given, repository:tag otherwise. */}}
{{- define "gatehouse.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (include "gatehouse.imageTag" .) -}}
{{- end -}}
{{- end -}}

{{/* The configuration file, as the ConfigMap holds it and the checksum covers it. */}}
{{- define "gatehouse.configFile" -}}
{{- $cfg := deepCopy .Values.config -}}
{{- if .Values.internalListener -}}
{{- $server := get $cfg "server" | default dict -}}
{{- $internal := get $server "internal" | default dict -}}
{{- if not (hasKey $internal "advertise") -}}
{{- $_ := set $internal "advertise" (printf "${POD_IP}:%v" .Values.ports.internal) -}}
{{- end -}}
{{- $_ := set $server "internal" $internal -}}
{{- $_ := set $cfg "server" $server -}}
{{- end -}}
# Rendered by the Gatehouse Helm chart from .Values.config; docs/configuration.md documents
# every key. Listener addresses come from the command line (--boundary-addr, --admin-addr,
# --internal-addr), which wins over server.*.addr here. server.internal.advertise is the
# pod's IP (POD_IP, from the downward API), where other replicas reach this one's persist:
# false context envelopes, unless the values set it.
{{ toYaml $cfg }}
{{- end -}}

{{/*
The seconds of a Go duration made of whole hours, minutes, seconds and milliseconds ("20s",
"1m30s", "1500ms"), rounded up; the gateway's default (20s) when the value is empty. Anything
else fails the render, naming the value.
*/}}
{{- define "gatehouse.durationSeconds" -}}
{{- $d := toString (default "20s" .) -}}
{{- $parts := regexFindAll "[0-9]+(ms|h|m|s)" $d -1 -}}
{{- if or (not $parts) (ne (join "" $parts) $d) -}}
{{- fail (printf "config.server.shutdown_grace is %q: the chart derives terminationGracePeriodSeconds from it and reads whole hours, minutes, seconds and milliseconds only (20s, 1m30s, 1500ms)" $d) -}}
{{- end -}}
{{- $ms := 0 -}}
{{- range $parts -}}
{{- if hasSuffix "ms" . -}}
{{- $ms = add $ms (trimSuffix "ms" . | atoi) -}}
{{- else if hasSuffix "h" . -}}
{{- $ms = add $ms (mul (trimSuffix "h" . | atoi) 3600000) -}}
{{- else if hasSuffix "m" . -}}
{{- $ms = add $ms (mul (trimSuffix "m" . | atoi) 60000) -}}
{{- else -}}
{{- $ms = add $ms (mul (trimSuffix "s" . | atoi) 1000) -}}
{{- end -}}
{{- end -}}
{{- div (add $ms 999) 1000 -}}
{{- end -}}

{{/* config.server.shutdown_grace in seconds. */}}
{{- define "gatehouse.shutdownGraceSeconds" -}}
{{- include "gatehouse.durationSeconds" (dig "server" "shutdown_grace" "" (.Values.config | default dict)) -}}
{{- end -}}

{{/*
terminationGracePeriodSeconds: the value given, which must exceed the preStop sleep plus the
shutdown grace, or that sum plus 15 seconds for the tracing flush at exit.
*/}}
{{- define "gatehouse.terminationGracePeriodSeconds" -}}
{{- $needed := add (int .Values.preStopSleepSeconds) (include "gatehouse.shutdownGraceSeconds" . | atoi) -}}
{{- if kindIs "invalid" .Values.terminationGracePeriodSeconds -}}
{{- add $needed 15 -}}
{{- else if le (int .Values.terminationGracePeriodSeconds) (int $needed) -}}
{{- fail (printf "terminationGracePeriodSeconds (%d) must exceed preStopSleepSeconds + config.server.shutdown_grace (%d s), or calls in flight are cut off on every rollout" (int .Values.terminationGracePeriodSeconds) (int $needed)) -}}
{{- else -}}
{{- int .Values.terminationGracePeriodSeconds -}}
{{- end -}}
{{- end -}}

{{/* Whether the configuration keeps its state in the process (one replica's state only). */}}
{{- define "gatehouse.embeddedState" -}}
{{- $backend := dig "state" "backend" "embedded" (.Values.config | default dict) -}}
{{- if or (eq (toString $backend) "embedded") (eq (toString $backend) "") -}}true{{- end -}}
{{- end -}}

{{/* Fails the render on combinations of values the schema cannot refuse. */}}
{{- define "gatehouse.checkValues" -}}
{{- if and (eq .Values.reloadStrategy "live") (eq (toString (dig "server" "watch_config" true (.Values.config | default dict))) "false") -}}
{{- fail "reloadStrategy live needs config.server.watch_config true: the gateway applies ConfigMap changes by watching its file (or choose reloadStrategy rollout)" -}}
{{- end -}}
{{- if and .Values.secret.create (not .Values.secret.values) -}}
{{- fail "secret.create is true but secret.values is empty: give the variables (REDIS_PASSWORD: …) or use secret.existingSecret" -}}
{{- end -}}
{{- if and .Values.autoscaling.enabled (gt (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas)) -}}
{{- fail (printf "autoscaling.minReplicas (%d) is above autoscaling.maxReplicas (%d)" (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas)) -}}
{{- end -}}
{{- if and .Values.autoscaling.enabled (not (dig "requests" "cpu" "" (.Values.resources | default dict))) -}}
{{- fail "autoscaling.enabled needs resources.requests.cpu: the HorizontalPodAutoscaler targets a share of it" -}}
{{- end -}}
{{- $ports := list (int .Values.ports.boundary) (int .Values.ports.admin) -}}
{{- if .Values.internalListener -}}{{- $ports = append $ports (int .Values.ports.internal) -}}{{- end -}}
{{- if ne (len $ports) (len (uniq $ports)) -}}
{{- fail (printf "ports: the listeners need distinct ports, got %v" $ports) -}}
{{- end -}}
{{- end -}}
