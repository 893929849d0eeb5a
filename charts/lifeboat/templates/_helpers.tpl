{{/* The release's name, cut to fit the names derived from it. */}}
{{- define "lifeboat.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "lifeboat.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Selector labels of one component: pass (list $ "component"). */}}
{{- define "lifeboat.selector" -}}
app.kubernetes.io/name: {{ (index . 0).Chart.Name }}
app.kubernetes.io/instance: {{ (index . 0).Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{/* An image reference from {registry, repository, tag}; tag defaults to the second argument. */}}
{{- define "lifeboat.image" -}}
{{- $img := index . 0 -}}
{{- $tag := $img.tag | default (index . 1) -}}
{{- if $img.registry -}}
{{- printf "%s/%s:%s" $img.registry $img.repository $tag -}}
{{- else -}}
{{- printf "%s:%s" $img.repository $tag -}}
{{- end -}}
{{- end -}}

{{- define "lifeboat.apiserverHost" -}}
{{- printf "%s-apiserver.%s.svc" (include "lifeboat.fullname" .) .Release.Namespace -}}
{{- end -}}

{{/* --memory-limit: memoryLimitPercent of the container's limit (Mi or Gi), in Mi. */}}
{{- define "lifeboat.memoryLimit" -}}
{{- $limit := .Values.controllerManager.resources.limits.memory | toString -}}
{{- $mi := 0 -}}
{{- if hasSuffix "Gi" $limit -}}
{{- $mi = mul (trimSuffix "Gi" $limit | atoi) 1024 -}}
{{- else -}}
{{- $mi = trimSuffix "Mi" $limit | atoi -}}
{{- end -}}
{{- printf "%dMi" (div (mul $mi .Values.controllerManager.memoryLimitPercent) 100) -}}
{{- end -}}

{{- define "lifeboat.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "lifeboat.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- end -}}

{{- define "lifeboat.imagePullSecrets" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
{{- range . }}
  - name: {{ . }}
{{- end }}
{{- end }}
{{- end -}}
