{{/*
The base of every name the chart gives: the release's name, followed by the
chart's unless it holds it, made to fit the names derived from it. The
longest of those with a limit of 63 characters is the Service
NAME-controller-manager-metrics, and a Service's name is a DNS-1035 label:
at most 63 letters, digits and hyphens, beginning with a letter. So the dots
a release's name may hold become hyphens, a release's name that begins with
a digit is refused, and the base is cut to 63 less that suffix, 36
characters. The other names fit then too: the StatefulSet's (NAME-etcd, with
the 11 characters of its pods' controller-revision-hash label), the init
Job's (NAME-init-HASH, its pods' job-name label), the Deployments'; the
Secrets' names are longer (up to NAME-kube-controller-manager-kubeconfig, 71)
but may have 253. A shorter cut would rename the objects, etcd's volumes and
the credentials among them, of the releases whose names fit now.
*/}}
{{- define "lifeboat.fullname" -}}
{{- if regexMatch "^[0-9]" .Release.Name -}}
{{- fail (printf "the release's name %q begins with a digit: the chart's Services are named after it, and a Service's name must begin with a letter (a DNS-1035 label); choose a release name that does" .Release.Name) -}}
{{- end -}}
{{- $name := .Release.Name -}}
{{- if not (contains .Chart.Name .Release.Name) -}}
{{- $name = printf "%s-%s" .Release.Name .Chart.Name -}}
{{- end -}}
{{- $name | replace "." "-" | trunc (sub 63 (len "-controller-manager-metrics") | int) | trimSuffix "-" -}}
{{- end -}}

{{- define "lifeboat.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/*
The credentials' Secrets' labels: the chart's, but the release's under a key of
its own instead of app.kubernetes.io/instance. Made once and applied by hand
when the chart is rendered elsewhere, they are then in no rendering, and a tool
that prunes what carries the instance label and is not rendered (Argo CD's
label tracking, kubectl apply --prune) would delete them.
*/}}
{{- define "lifeboat.credentialLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
lifeboat.dev/credentials-of: {{ .Release.Name }}
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

{{/*
--memory-limit: memoryLimitPercent of the container's limit (Mi or Gi, at
most six digits, which the schema checks), in whole Mi, at least 1.
*/}}
{{- define "lifeboat.memoryLimit" -}}
{{- $cm := .Values.controllerManager -}}
{{- $limit := $cm.resources.limits.memory | toString -}}
{{- $mi := 0 -}}
{{- if hasSuffix "Gi" $limit -}}
{{- $mi = mul (trimSuffix "Gi" $limit | atoi) 1024 -}}
{{- else -}}
{{- $mi = trimSuffix "Mi" $limit | atoi -}}
{{- end -}}
{{- $percent := $cm.memoryLimitPercent | int -}}
{{- $result := div (mul $mi $percent) 100 -}}
{{- if lt $result 1 -}}
{{- fail (printf "controllerManager.resources.limits.memory is %s: with controllerManager.memoryLimitPercent %d the controller manager's --memory-limit would be %dMi; give it at least %dMi" $limit $percent $result (div (add 100 $percent -1) $percent)) -}}
{{- end -}}
{{- printf "%dMi" $result -}}
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

{{/*
Refuses a change of etcd's member count: pass (list $ currentReplicas).
Every member starts with --initial-cluster-state=new, so a member added to a
running cluster would found a second, empty etcd cluster, and a cluster that
lost members would lose its quorum. The etcd template calls it with the
StatefulSet that lookup finds (at upgrade; lookup finds nothing under helm
template or a client-side dry run).
*/}}
{{- define "lifeboat.etcdReplicasUnchanged" -}}
{{- $root := index . 0 -}}
{{- $current := index . 1 | int -}}
{{- $want := $root.Values.etcd.replicas | int -}}
{{- if ne $current $want -}}
{{- fail (printf "etcd.replicas is %d, but the etcd StatefulSet %s-etcd runs %d member(s): etcd's member count is fixed at install (a changed count would start a second, empty etcd cluster or lose the quorum). Keep etcd.replicas=%d, or move the control plane to a release installed with the new count (docs/install.md, \"Changing etcd's member count\")" $want (include "lifeboat.fullname" $root) $current $current) -}}
{{- end -}}
{{- end -}}

{{/*
The scheme of etcd's peer URLs: pass (list $ runningStatefulSetOrNil). https,
with each peer's certificate checked, unless the running StatefulSet's members
were founded on plain HTTP: their member list records http:// peer URLs, and a
member that listened on TLS would not be reached by the others, so such a
release keeps its peers as they are (docs/install.md, "etcd's TLS").
*/}}
{{- define "lifeboat.etcdPeerScheme" -}}
{{- $sts := index . 1 -}}
{{- $plain := false -}}
{{- if $sts -}}
{{- range $sts.spec.template.spec.containers -}}
{{- if has "--listen-peer-urls=http://0.0.0.0:2380" (.command | default list) -}}{{- $plain = true -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- if $plain }}http{{ else }}https{{ end -}}
{{- end -}}

{{/*
etcd's --quota-backend-bytes: three quarters of each member's volume
(etcd.storage.size), at most 8 GiB (etcd's own advice), so that etcd says
NOSPACE and refuses writes, which compaction and defragmentation recover from,
before its volume is full, which it does not survive.
*/}}
{{- define "lifeboat.etcdQuotaBytes" -}}
{{- $size := .Values.etcd.storage.size -}}
{{- $n := regexFind "^[0-9]+" $size | int64 -}}
{{- $mi := mul $n (get (dict "Mi" 1 "Gi" 1024 "Ti" 1048576) (trimPrefix (regexFind "^[0-9]+" $size) $size)) -}}
{{- min (div (mul $mi 3 1048576) 4) 8589934592 -}}
{{- end -}}

{{/*
The annotations of the Secrets that hold the control plane's credentials:
with etcd.storage.keepOnUninstall, helm uninstall keeps them as it keeps
etcd's data, which refers to them (the Pull agents' certificates, the
ServiceAccount tokens); a reinstall of the same release reads them back.
*/}}
{{- define "lifeboat.keptWithData" -}}
{{- if .Values.etcd.storage.keepOnUninstall -}}
annotations:
  helm.sh/resource-policy: keep
{{- end -}}
{{- end -}}

{{/*
A component's affinity: pass (list $ "component" affinityValue replicas). The
value when set, else, with more than one replica, replicas preferably on
different nodes.
*/}}
{{- define "lifeboat.affinity" -}}
{{- $root := index . 0 -}}
{{- $component := index . 1 -}}
{{- $affinity := index . 2 -}}
{{- $replicas := index . 3 | int -}}
{{- if $affinity }}
affinity:
  {{- toYaml $affinity | nindent 2 }}
{{- else if gt $replicas 1 }}
# Replicas on different nodes where there are several.
affinity:
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector:
            matchLabels:
              {{- include "lifeboat.selector" (list $root $component) | nindent 14 }}
{{- end }}
{{- end -}}

{{/*
The init Job's name: at upgrade the pre-upgrade hook's; at install one that
ends in a hash of the Job's pod template, so that a rendering with another
image or other values names another Job rather than change one.
*/}}
{{- define "lifeboat.initJobName" -}}
{{- $fullname := include "lifeboat.fullname" . -}}
{{- if .Release.IsInstall -}}
{{- printf "%s-init-%s" $fullname (include "lifeboat.initPodTemplate" . | sha256sum | trunc 8) -}}
{{- else -}}
{{- printf "%s-init-upgrade" $fullname -}}
{{- end -}}
{{- end -}}

{{/* The init Job's pod template. */}}
{{- define "lifeboat.initPodTemplate" -}}
metadata:
  labels:
    {{- include "lifeboat.labels" . | nindent 4 }}
    app.kubernetes.io/component: init
spec:
  {{- include "lifeboat.imagePullSecrets" . | nindent 2 }}
  # No Service variables in the environment: etcd would read ETCD_* ones
  # as its settings, and nothing here uses them.
  enableServiceLinks: false
  restartPolicy: OnFailure
  automountServiceAccountToken: false
  securityContext:
    {{- include "lifeboat.podSecurityContext" . | nindent 4 }}
  containers:
    - name: init
      image: {{ include "lifeboat.image" (list .Values.image .Chart.AppVersion) }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      securityContext:
        {{- include "lifeboat.containerSecurityContext" . | nindent 8 }}
      args:
        - init
        - --kubeconfig=/etc/lifeboat/kubeconfig/kubeconfig
        - --wait-for-api-server
        - --timeout={{ .Values.init.timeout }}
      resources:
        {{- toYaml .Values.init.resources | nindent 8 }}
      volumeMounts:
        - {name: kubeconfig, mountPath: /etc/lifeboat/kubeconfig, readOnly: true}
  volumes:
    - name: kubeconfig
      secret:
        secretName: {{ include "lifeboat.fullname" . }}-admin-kubeconfig
{{- end -}}

{{/*
What the API server writes Secrets and Works with: "secretbox", or
"identity" (plain, while secretbox still reads) on the upgrade that gives a
release made before there was a key its key, so that no API server of the old
chart, running beside the new ones during the rollout, is handed data it
cannot read. The next upgrade turns to secretbox.
*/}}
{{- define "lifeboat.encryptionWrites" -}}
{{- $fullname := include "lifeboat.fullname" . -}}
{{- if lookup "v1" "Secret" .Release.Namespace (printf "%s-encryption" $fullname) -}}
secretbox
{{- else if lookup "apps/v1" "Deployment" .Release.Namespace (printf "%s-apiserver" $fullname) -}}
identity
{{- else -}}
secretbox
{{- end -}}
{{- end -}}

{{/*
The API server's EncryptionConfiguration: pass (list key writes). Secrets,
and Works, which carry the Secrets propagated to members in their manifests,
are written with the provider writes names first; the other reads too, and
identity reads what was written before there was a key.
*/}}
{{- define "lifeboat.encryptionConfig" -}}
{{- $key := index . 0 -}}
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets, works.work.karmada.io]
    providers:
{{- if eq (index . 1) "identity" }}
      - identity: {}
{{- end }}
      - secretbox:
          keys:
            - name: key1
              secret: {{ $key }}
{{- if ne (index . 1) "identity" }}
      - identity: {}
{{- end }}
{{- end -}}

{{/*
The API server's audit Policy, from apiServer.audit.rules. The stage a
request is received at is not recorded: the one it completes at says the
same and its outcome.
*/}}
{{- define "lifeboat.auditPolicy" -}}
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
{{ toYaml .Values.apiServer.audit.rules }}
{{- end -}}

{{/*
"true" when the API server writes an audit log. Values reused from a release
made before the audit values existed (helm upgrade --reuse-values) lack them:
no audit log, as then; asked for one, they still lack its rules, which the
chart's defaults would give.
*/}}
{{- define "lifeboat.auditEnabled" -}}
{{- if dig "audit" "enabled" false .Values.apiServer -}}
{{- if not (dig "audit" "rules" nil .Values.apiServer) -}}
{{- fail "apiServer.audit.enabled is true but apiServer.audit.rules is not set: helm upgrade --reuse-values keeps the values of the chart the release was installed with, which had none; upgrade with --reset-then-reuse-values (this chart's defaults, then the release's values and yours), or give the rules" -}}
{{- end -}}
true
{{- end -}}
{{- end -}}
