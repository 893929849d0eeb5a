#!/usr/bin/env bash
# Checks charts/lifeboat without a cluster: helm lint, renders with several
# value sets decoded strictly (hack/chartcheck), the README describing every
# value, and the values schema refusing bad input with a message that names
# the field. Helm is pinned in hack/tools/helm and built into bin/ by make helm.
set -euo pipefail
cd "$(dirname "$0")/.."

CHART=charts/lifeboat
HELM=bin/helm
KUBE_VERSION=1.35.4
mkdir -p bin
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
make -s --no-print-directory helm BIN="${PWD}/bin"

# Without --kube-version helm assumes the Kubernetes version make helm links
# in, the one of the k8s.io/client-go go.mod pins, which the charts accept.
mkdir -p "${tmp}/kube-version/templates"
printf 'apiVersion: v2\nname: kube-version\nversion: 0.0.0\n' >"${tmp}/kube-version/Chart.yaml"
printf 'kubeVersion: {{ .Capabilities.KubeVersion.Version }}\n' >"${tmp}/kube-version/templates/version.yaml"
want=v1.$(awk '$1 == "k8s.io/client-go" { split($2, v, "."); print v[2] }' go.mod).0
got=$("${HELM}" template "${tmp}/kube-version" | sed -n 's/^kubeVersion: //p')
[[ "$got" == "$want" ]] || { echo "verify-chart: helm assumes Kubernetes $got without --kube-version, want $want (make helm)" >&2; exit 1; }
"${HELM}" template lb charts/lifeboat >/dev/null && "${HELM}" template lb charts/lifeboat-agent --set clusterName=edge1 >/dev/null \
  || { echo "verify-chart: helm template fails without --kube-version" >&2; exit 1; }

"${HELM}" lint --strict --kube-version "${KUBE_VERSION}" "${CHART}"

render() { "${HELM}" template lb "${CHART}" --namespace lifeboat-system --kube-version "${KUBE_VERSION}" "$@"; }
# obj KIND NAME: the rendered document of that kind and name, read from stdin.
obj() {
  local doc="" line
  while IFS= read -r line || [[ -n "$line" ]]; do
    if [[ "$line" == "---" ]]; then
      if grep -qx "kind: $1" <<<"$doc" && grep -qx "  name: $2" <<<"$doc"; then printf '%s' "$doc"; return; fi
      doc=""
    else
      doc+="$line"$'\n'
    fi
  done
  if grep -qx "kind: $1" <<<"$doc" && grep -qx "  name: $2" <<<"$doc"; then printf '%s' "$doc"; fi
}

render | go run ./hack/chartcheck --values "${CHART}/values.yaml" --readme "${CHART}/README.md"
render --set etcd.replicas=3 --set apiServer.replicas=2 --set controllerManager.replicas=3 --set controllerManager.resources.limits.memory=1Gi \
  --set controllerManager.metrics.secure=true --set controllerManager.metrics.serviceMonitor.enabled=true \
  --set controllerManager.metrics.serviceMonitor.bearerTokenSecret.name=prometheus-lifeboat-token \
  --set apiServer.service.type=NodePort --set apiServer.service.nodePort=31443 --set 'apiServer.extraSANs={lifeboat.example.com,10.0.0.9}' \
  --set networkPolicy.enabled=false --set etcd.storage.keepOnUninstall=true --set 'imagePullSecrets={regcred}' \
  --set apiServer.audit.enabled=true \
  | go run ./hack/chartcheck

# What the rendering must say.
out=$(render --set controllerManager.resources.limits.memory=1Gi --set etcd.replicas=3)
out1=$(render)
for want in '--memory-limit=921Mi' 'lb-lifeboat-etcd-2=https://lb-lifeboat-etcd-2.lb-lifeboat-etcd.lifeboat-system.svc:2380' \
  '--listen-client-urls=https://0.0.0.0:2379' '--client-cert-auth=true' '--peer-client-cert-auth=true' \
  'https://lb-lifeboat-etcd-0.lb-lifeboat-etcd.lifeboat-system.svc:2379,' '--etcd-certfile=/etc/lifeboat/etcd/client.crt' \
  'runAsNonRoot: true' 'readOnlyRootFilesystem: true' 'automountServiceAccountToken: false' 'kind: PodDisruptionBudget' \
  'name: lb-lifeboat-init' 'startupProbe:' '--encryption-provider-config=/etc/lifeboat/encryption/encryption.yaml' \
  'secretName: lb-lifeboat-encryption' '{key: encryption.yaml, path: encryption.yaml}' 'name: lb-lifeboat-encryption'; do
  grep -qF -- "$want" <<<"$out" || { echo "verify-chart: the rendering lacks: $want" >&2; exit 1; }
done
# The audit log: off by default; on, the API server gets the policy (which
# chartcheck has loaded as the API server does), writes JSON lines to its
# standard output and restarts when the policy changes.
if grep -qF -- '--audit-' <<<"$out1" || grep -qF 'audit-policy' <<<"$out1"; then
  echo "verify-chart: by default the API server must not write an audit log" >&2; exit 1
fi
audited=$(render --set apiServer.audit.enabled=true)
for want in '--audit-policy-file=/etc/lifeboat/audit/policy.yaml' '--audit-log-path=-' '--audit-log-format=json' \
  '{name: audit, mountPath: /etc/lifeboat/audit, readOnly: true}' 'name: lb-lifeboat-audit-policy' 'lifeboat.dev/audit-policy:'; do
  grep -qF -- "$want" <<<"$audited" || { echo "verify-chart: with apiServer.audit.enabled=true the rendering lacks: $want" >&2; exit 1; }
done
# Values reused from a release made before the audit values existed: no audit log.
if render --set apiServer.audit=null | grep -qF -- '--audit-'; then
  echo "verify-chart: values without apiServer.audit must render no audit log" >&2; exit 1
fi
policyrev() { sed -n 's/^        lifeboat.dev\/audit-policy: //p'; }
a=$(policyrev <<<"$audited"); b=$(render --set apiServer.audit.enabled=true --set 'apiServer.audit.rules[0].level=Metadata' | policyrev)
if [[ -z "$a" || "$a" == "$b" ]]; then
  echo "verify-chart: a changed audit policy must change the API server's pod template ('$a', '$b')" >&2; exit 1
fi
if render --set apiServer.audit.enabled=true --set-json 'apiServer.audit.rules=[{"level":"None","nonResourceURLs":["/x"],"resources":[{"group":""}]}]' \
  | go run ./hack/chartcheck >/dev/null 2>&1; then
  echo "verify-chart: chartcheck passed an audit policy the API server refuses" >&2; exit 1
fi
# The init Job is part of the install (a post-install hook would wait for
# `helm install --wait`, which waits for the controller manager, which waits
# for the CRDs the Job installs), and a pre-upgrade hook at upgrade.
if grep -qF 'helm.sh/hook' <<<"$out"; then
  echo "verify-chart: at install the init Job must not be a hook: helm install --wait would never end" >&2; exit 1
fi
upgrade=$(render --is-upgrade)
for want in 'name: lb-lifeboat-init-upgrade' 'helm.sh/hook: pre-upgrade'; do
  grep -qF -- "$want" <<<"$upgrade" || { echo "verify-chart: the upgrade rendering lacks: $want" >&2; exit 1; }
done
# A tool that renders and applies (Argo CD, Kustomize) sees the install's Job
# every time: its name follows its pod template, which a Job cannot change.
job() { sed -n 's/^  name: \(lb-lifeboat-init-[0-9a-f]\{8\}\)$/\1/p'; }
a=$(job <<<"$out1"); b=$(render | job); c=$(render --set-string image.tag=other | job)
if [[ -z "$a" || "$a" != "$b" || "$a" == "$c" ]]; then
  echo "verify-chart: the init Job's name must be the same for the same values and change with the image: '$a', '$b', '$c'" >&2; exit 1
fi
# Without generated credentials nothing is random: two renderings are the same,
# and neither holds a Secret.
given1=$(render --set credentials.generate=false); given2=$(render --set credentials.generate=false)
[[ "$given1" == "$given2" ]] || { echo "verify-chart: two renderings with credentials.generate=false differ" >&2; diff <(echo "$given1") <(echo "$given2") >&2; exit 1; }
if grep -qx 'kind: Secret' <<<"$given1"; then
  echo "verify-chart: credentials.generate=false still renders a Secret" >&2; exit 1
fi
# The encryption key's Secret is never deleted by Helm, and its key is the
# configuration's.
enc=$(render --show-only templates/secrets.yaml | sed -n '/name: lb-lifeboat-encryption/,$p')
grep -qF 'helm.sh/resource-policy: keep' <<<"$enc" || { echo "verify-chart: the encryption key's Secret must be kept by Helm" >&2; exit 1; }
key=$(sed -n 's/^  key: //p' <<<"$enc" | base64 -d)
[[ $(printf '%s' "$key" | base64 -d | wc -c) == 32 ]] || { echo "verify-chart: the encryption key is not 32 bytes" >&2; exit 1; }
sed -n 's/^  encryption.yaml: //p' <<<"$enc" | base64 -d | grep -qF "secret: $key" \
  || { echo "verify-chart: the EncryptionConfiguration does not hold the Secret's key" >&2; exit 1; }
# The credentials' Secrets carry no instance label, which pruning by it (Argo
# CD's label tracking, kubectl apply --prune -l) would delete them by.
if render --show-only templates/secrets.yaml | grep -q 'app.kubernetes.io/instance'; then
  echo "verify-chart: a credentials Secret carries app.kubernetes.io/instance" >&2; exit 1
fi
[[ $(grep -cx 'kind: Secret' <<<"$out1") == 6 ]] || { echo "verify-chart: the default rendering must hold the six credential Secrets" >&2; exit 1; }
# A changed etcd member count is refused at upgrade. lookup finds nothing
# under helm template, so the refusal is checked by calling its helper from a
# chart that has this one as a subchart, with the count the StatefulSet would
# have.
wrapper="${tmp}/wrapper"
mkdir -p "${wrapper}/charts" "${wrapper}/templates"
cp -r "${CHART}" "${wrapper}/charts/"
printf 'apiVersion: v2\nname: lifeboat-check\nversion: 0.0.0\n' >"${wrapper}/Chart.yaml"
cat >"${wrapper}/templates/check.yaml" <<'TPL'
{{- if hasKey .Values "current" }}
{{- include "lifeboat.etcdReplicasUnchanged" (list $ .Values.current) }}
{{- end }}
TPL
wrender() { "${HELM}" template lb "${wrapper}" --namespace lifeboat-system --kube-version "${KUBE_VERSION}" "$@"; }
wrender --set etcd.replicas=3 --set current=3 >/dev/null
if got=$(wrender --set etcd.replicas=3 --set current=1 2>&1); then
  echo "verify-chart: an etcd member count changed from 1 to 3 was accepted" >&2; exit 1
fi
for want in 'etcd.replicas is 3' 'runs 1 member(s)' 'fixed at install'; do
  grep -qF -- "$want" <<<"$got" || { echo "verify-chart: the refusal of a changed etcd member count lacks: $want" >&2; echo "$got" >&2; exit 1; }
done
# etcd's peers keep plain HTTP when the running StatefulSet was founded on
# it (its member list records http:// peer URLs); new releases use TLS.
cat >"${wrapper}/templates/peer.yaml" <<'TPL'
{{- if hasKey .Values "peerCommand" }}
{{- $sts := dict }}
{{- if .Values.peerCommand }}
{{- $sts = dict "spec" (dict "template" (dict "spec" (dict "containers" (list (dict "name" "etcd" "command" .Values.peerCommand))))) }}
{{- end }}
peer: {{ include "lifeboat.etcdPeerScheme" (list $ $sts) }}
{{- end }}
TPL
# The encryption configuration, in each of its two steps: Secrets and Works
# written with secretbox, or (the upgrade that makes a release's key) plainly
# while secretbox reads; identity reads what came before.
cat >"${wrapper}/templates/encryption.yaml" <<'TPL'
{{- if hasKey .Values "writes" }}
{{ include "lifeboat.encryptionConfig" (list "KEY" .Values.writes) }}
{{- end }}
TPL
for c in "secretbox|secretbox identity" "identity|identity secretbox"; do
  writes=${c%%|*}; want=${c#*|}
  got=$(wrender --show-only templates/encryption.yaml --set "writes=$writes" | grep -oE '^      - (secretbox|identity)' | sed 's/^      - //' | tr '\n' ' ' | sed 's/ $//')
  [[ "$got" == "$want" ]] || { echo "verify-chart: writing with $writes, the providers are '$got', want '$want'" >&2; exit 1; }
  wrender --show-only templates/encryption.yaml --set "writes=$writes" | grep -qF 'resources: [secrets, works.work.karmada.io]' \
    || { echo "verify-chart: the encryption configuration must cover Secrets and Works" >&2; exit 1; }
done
peer() { wrender --show-only templates/peer.yaml "$@" | sed -n 's/^peer: //p'; }
for c in "http|--set peerCommand={/usr/local/bin/etcd,--listen-peer-urls=http://0.0.0.0:2380}" \
  "https|--set peerCommand={/usr/local/bin/etcd,--listen-peer-urls=https://0.0.0.0:2380}" \
  "https|--set peerCommand=" ; do
  want=${c%%|*}; args=${c#*|}
  # shellcheck disable=SC2086
  got=$(peer $args)
  [[ "$got" == "$want" ]] || { echo "verify-chart: etcd's peer scheme with $args is '$got', want $want" >&2; exit 1; }
done
# NOTES.txt, which helm template does not print: rendered by the wrapper
# chart with the subchart's values (lifeboat.*).
cat >"${wrapper}/templates/notes.yaml" <<'TPL'
{{- $sub := dict "Values" .Values.lifeboat "Release" .Release "Chart" (dict "Name" "lifeboat" "AppVersion" "0.1.0") }}
notes: {{ include "lifeboat-check/charts/lifeboat/templates/NOTES.txt" $sub | b64enc }}
TPL
notes() { wrender --show-only templates/notes.yaml "$@" | sed -n 's/^notes: //p' | base64 -d; }
expect_notes() {
  local want=$1; shift
  grep -qF -- "$want" <<<"$(notes "$@")" || { echo "verify-chart: NOTES.txt with $* lacks: $want" >&2; notes "$@" >&2; exit 1; }
}
expect_notes 'is installing in namespace lifeboat-system'
notes | grep -qE 'the Job lb-lifeboat-init-[0-9a-f]{8} installs the CRDs' || { echo "verify-chart: NOTES.txt lacks the init Job's name" >&2; notes >&2; exit 1; }
expect_notes 'config set-cluster lifeboat --server https://127.0.0.1:6443'
expect_notes 'lifeboat join member1 --kubeconfig lifeboat.kubeconfig --cluster-kubeconfig member1.kubeconfig'
expect_notes 'is upgraded in namespace lifeboat-system' --is-upgrade
expect_notes 'the pre-upgrade Job lb-lifeboat-init-upgrade' --is-upgrade
if notes --is-upgrade | grep -qE 'installing|lb-lifeboat-init-[0-9a-f]+ installs'; then
  echo "verify-chart: at upgrade NOTES.txt must not speak of the install" >&2; exit 1
fi
expect_notes 'https://NODE_ADDRESS:31443' --set lifeboat.apiServer.service.type=NodePort --set lifeboat.apiServer.service.nodePort=31443
expect_notes 'https://LB_ADDRESS:443' --set lifeboat.apiServer.service.type=LoadBalancer
pods=$(grep -c '^    spec:$' <<<"$out" || true)
links=$(grep -c 'enableServiceLinks: false' <<<"$out" || true)
if [[ "$pods" != "$links" ]]; then
  echo "verify-chart: $pods pod templates, $links without Service links; etcd reads ETCD_* variables as its settings" >&2; exit 1
fi
tokenless=$(grep -c 'automountServiceAccountToken: false' <<<"$out" || true)
if [[ "$pods" != "$tokenless" ]]; then
  echo "verify-chart: $pods pod templates, $tokenless without a token of the host cluster; the README says no pod mounts one" >&2; exit 1
fi
# apiServer.extraSANs: IPv4 and IPv6 addresses as IP names, everything else,
# a name of hex digits and dots too, as a DNS name.
sans=$(render --set 'apiServer.extraSANs={cafe.be,10.0.0.9,2001:db8::1,lifeboat.example.com,*.lifeboat.example.com,::ffff:10.0.0.8,1.2.3}' \
  | obj Secret lb-lifeboat-pki | sed -n 's/^  apiserver.crt: //p' | base64 -d | openssl x509 -noout -ext subjectAltName)
for want in 'DNS:cafe.be' 'IP Address:10.0.0.9' 'IP Address:2001:DB8:0:0:0:0:0:1' 'DNS:lifeboat.example.com' 'IP Address:127.0.0.1' \
  'DNS:*.lifeboat.example.com' 'IP Address:10.0.0.8' 'DNS:1.2.3'; do
  grep -qF -- "$want" <<<"$sans" || { echo "verify-chart: the serving certificate's names lack $want:" >&2; echo "$sans" >&2; exit 1; }
done
# names KIND NAME, one line per rendered object, read from stdin.
names() {
  awk 'function out() { if (name != "") print kind, name; kind = ""; name = ""; m = 0 }
    /^---/ { out(); next }
    /^kind: / { kind = $2 }
    /^metadata:/ { m = 1; next }
    /^[^ #]/ { m = 0 }
    m && name == "" && /^  name: / { name = $2 }
    END { out() }'
}
# checknames WHAT: every object name on stdin fits its kind's limit. A
# Service's name is a DNS-1035 label; the StatefulSet's pods carry a
# controller-revision-hash label of its name and 11 more characters; a Job's
# pods its name as a label; the other names are DNS-1123 subdomains, at most
# 63 characters but the Secrets' and ConfigMaps', which may have 253.
checknames() {
  local what=$1 kind name max re n=0
  local label='^[a-z]([-a-z0-9]*[a-z0-9])?$' subdomain='^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'
  while read -r kind name; do
    n=$((n + 1))
    case $kind in
      Service) max=63; re=$label ;;
      StatefulSet) max=52; re=$subdomain ;;
      Secret|ConfigMap) max=253; re=$subdomain ;;
      *) max=63; re=$subdomain ;;
    esac
    if (( ${#name} > max )) || ! [[ "$name" =~ $re ]]; then
      echo "verify-chart: $what: the $kind $name (${#name} characters) is not a valid name of at most $max characters" >&2; exit 1
    fi
  done
  (( n > 5 )) || { echo "verify-chart: $what: only $n names found" >&2; exit 1; }
}
# The longest release names Helm allows (53 characters), with and without the
# chart's name, and one with dots: every name fits.
long=$(printf 'r%.0s' {1..53}); longlb=lifeboat-$(printf 'r%.0s' {1..44})
for release in "$long" "$longlb" lb.example.org; do
  for upgrade in "" --is-upgrade; do
    # shellcheck disable=SC2086
    got=$("${HELM}" template "$release" "${CHART}" --namespace lifeboat-system --kube-version "${KUBE_VERSION}" $upgrade \
      --set etcd.replicas=3 --set apiServer.replicas=2 --set controllerManager.metrics.serviceMonitor.enabled=true --set apiServer.audit.enabled=true) \
      || { echo "verify-chart: the release $release does not render" >&2; exit 1; }
    names <<<"$got" | checknames "the release $release"
    go run ./hack/chartcheck <<<"$got" >/dev/null
  done
done
grep -qx '  name: lb-example-org-lifeboat-apiserver' <<<"$got" || { echo "verify-chart: the release lb.example.org does not name its Service lb-example-org-lifeboat-apiserver" >&2; exit 1; }
# A long release's names are cut at 36 characters: a release whose names fit
# keeps them at upgrade (a new name would be a new etcd and new credentials).
got=$("${HELM}" template "$long" "${CHART}" --namespace lifeboat-system --kube-version "${KUBE_VERSION}" | names)
grep -qx "Service ${long:0:36}-controller-manager-metrics" <<<"$got" || { echo "verify-chart: the names of a long release are not cut at 36 characters:" >&2; echo "$got" >&2; exit 1; }
for release in 1lb 0-lifeboat; do
  if got=$("${HELM}" template "$release" "${CHART}" --namespace lifeboat-system --kube-version "${KUBE_VERSION}" 2>&1); then
    echo "verify-chart: the release name $release, which begins with a digit, was accepted" >&2; exit 1
  fi
  grep -qF "the release's name \"$release\" begins with a digit" <<<"$got" || { echo "verify-chart: the refusal of the release name $release does not name it:" >&2; echo "$got" >&2; exit 1; }
done
# etcd's certificates: their own CA, not the API server's (which the API
# server trusts for clients, and whose kube-controller-manager signs client
# certificates for Pull agents); the members' certificate names every member
# and loopback; the API server's client certificate is signed by etcd's CA;
# each pod mounts only its own key.
etcdpki=$(render --set etcd.replicas=3 | obj Secret lb-lifeboat-etcd-pki)
pkifile() { sed -n "s/^  $1: //p" <<<"$etcdpki" | base64 -d >"${tmp}/$1"; }
for f in ca.crt member.crt client.crt; do pkifile "$f"; done
render | obj Secret lb-lifeboat-pki | sed -n 's/^  ca.crt: //p' | base64 -d >"${tmp}/apiserver-ca.crt"
for f in member.crt client.crt; do
  openssl verify -CAfile "${tmp}/ca.crt" "${tmp}/$f" >/dev/null || { echo "verify-chart: etcd's $f is not signed by etcd's CA" >&2; exit 1; }
  if openssl verify -CAfile "${tmp}/apiserver-ca.crt" "${tmp}/$f" >/dev/null 2>&1; then
    echo "verify-chart: etcd's $f verifies against the API server's CA; etcd must have a CA of its own" >&2; exit 1
  fi
done
names=$(openssl x509 -noout -ext subjectAltName -in "${tmp}/member.crt")
for i in 0 1 2; do
  grep -qF "DNS:lb-lifeboat-etcd-$i.lb-lifeboat-etcd.lifeboat-system.svc," <<<"$names" \
    || { echo "verify-chart: the etcd members' certificate does not name member $i:" >&2; echo "$names" >&2; exit 1; }
done
grep -qF 'IP Address:127.0.0.1' <<<"$names" || { echo "verify-chart: the etcd members' certificate does not name 127.0.0.1" >&2; exit 1; }
etcdsts=$(obj StatefulSet lb-lifeboat-etcd <<<"$out1")
apisrv=$(obj Deployment lb-lifeboat-apiserver <<<"$out1")
if grep -qE 'key: (ca\.key|client\.key)' <<<"$etcdsts" || grep -qE 'key: (ca\.key|member\.key|[a-z-]+\.token)' <<<"$apisrv"; then
  echo "verify-chart: an etcd or API server pod mounts a key that is not its own" >&2; exit 1
fi
# Every Secret volume of the API server and etcd lists its items: a whole
# Secret would bring the CAs' keys and the kubeconfigs' tokens along.
for pod in "$etcdsts" "$apisrv"; do
  secrets=$(grep -c 'secretName:' <<<"$pod" || true); lists=$(grep -c 'items:' <<<"$pod" || true)
  [[ "$secrets" == "$lists" ]] || { echo "verify-chart: a Secret volume of etcd or the API server mounts the whole Secret" >&2; exit 1; }
done
# etcd's quota: three quarters of its volume, at most 8 GiB.
for c in "8Gi|6442450944" "2Gi|1610612736" "512Mi|402653184" "20Gi|8589934592" "999999Ti|8589934592"; do
  size=${c%%|*}; want=${c#*|}
  render --set "etcd.storage.size=$size" | grep -qF -- "--quota-backend-bytes=$want" \
    || { echo "verify-chart: with etcd.storage.size=$size etcd's quota is not $want bytes" >&2; exit 1; }
done
# etcd's data goes with helm uninstall only when it is not to be kept.
grep -qF 'whenDeleted: Delete' <<<"$out" || { echo "verify-chart: by default the etcd PVCs must go with the release" >&2; exit 1; }
if ! render --set etcd.storage.keepOnUninstall=true | grep -qF 'whenDeleted: Retain'; then
  echo "verify-chart: etcd.storage.keepOnUninstall=true must keep the PVCs after helm uninstall" >&2; exit 1
fi
# The credentials stay with the data they are part of, and only then.
kept=$(render --set etcd.storage.keepOnUninstall=true)
for secret in lb-lifeboat-pki lb-lifeboat-etcd-pki; do
  grep -qF 'helm.sh/resource-policy: keep' <<<"$(obj Secret "$secret" <<<"$kept")" \
    || { echo "verify-chart: with etcd.storage.keepOnUninstall=true the Secret $secret must be kept too" >&2; exit 1; }
done
# By default helm uninstall removes every Secret but the encryption key's,
# which nothing encrypted can be read without.
if [[ $(grep -cF 'helm.sh/resource-policy' <<<"$out1") != 1 ]] || grep -qF 'helm.sh/resource-policy' <<<"$(obj Secret lb-lifeboat-pki <<<"$out1")"; then
  echo "verify-chart: by default helm uninstall must remove every Secret but the encryption key's" >&2; exit 1
fi
if render --set controllerManager.replicas=1 | grep -q 'kind: PodDisruptionBudget'; then
  echo "verify-chart: one replica must not get a PodDisruptionBudget (it would block every drain)" >&2; exit 1
fi
# etcd and the API server: with several replicas, a budget that lets a drain
# evict one at a time, and replicas preferably on different nodes; none with
# one (the defaults).
ha=$(render --set etcd.replicas=3 --set apiServer.replicas=2)
for what in "PodDisruptionBudget lb-lifeboat-etcd" "PodDisruptionBudget lb-lifeboat-apiserver"; do
  grep -qF 'maxUnavailable: 1' <<<"$(obj $what <<<"$ha")" || { echo "verify-chart: with etcd.replicas=3 and apiServer.replicas=2 the rendering lacks $what with maxUnavailable: 1" >&2; exit 1; }
done
for what in "StatefulSet lb-lifeboat-etcd" "Deployment lb-lifeboat-apiserver"; do
  grep -qF 'topologyKey: kubernetes.io/hostname' <<<"$(obj $what <<<"$ha")" || { echo "verify-chart: with several replicas $what lacks its pod anti-affinity" >&2; exit 1; }
  if grep -qF 'affinity:' <<<"$(obj $what <<<"$out1")"; then
    echo "verify-chart: with one replica $what must have no affinity" >&2; exit 1
  fi
done
if [[ $(grep -c 'kind: PodDisruptionBudget' <<<"$out1") != 1 ]]; then
  echo "verify-chart: by default only the controller manager has a PodDisruptionBudget" >&2; exit 1
fi
if obj PodDisruptionBudget lb-lifeboat-etcd < <(render --set etcd.replicas=3 --set etcd.podDisruptionBudget.enabled=false) | grep -q .; then
  echo "verify-chart: etcd.podDisruptionBudget.enabled=false must leave etcd without a PodDisruptionBudget" >&2; exit 1
fi
printf 'etcd:\n  replicas: 3\n  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]\n' >"${tmp}/affinity.yaml"
etcd=$(obj StatefulSet lb-lifeboat-etcd < <(render -f "${tmp}/affinity.yaml"))
if ! grep -qF 'key: zone' <<<"$etcd" || grep -qF 'podAntiAffinity' <<<"$etcd"; then
  echo "verify-chart: etcd.affinity must replace etcd's default affinity" >&2; exit 1
fi

# Bad values: refused, naming the field.
refuse() {
  local want=$1; shift
  local got
  if got=$(render "$@" 2>&1); then
    echo "verify-chart: accepted: $*" >&2; exit 1
  fi
  grep -qF -- "$want" <<<"$got" || { echo "verify-chart: refusal of $* does not name $want:" >&2; echo "$got" >&2; exit 1; }
}
bad="${tmp}/bad.yaml"
printf 'controllerManager:\n  repliacs: 2\n' >"$bad"
refuse "'repliacs' not allowed" -f "$bad"
refuse '/controllerManager/replicas' --set controllerManager.replicas=-1
refuse '/etcd/replicas' --set etcd.replicas=2
refuse '/etcd/storage/size' --set etcd.storage.size=1000000Gi
refuse '/etcd/storage/size' --set etcd.storage.size=8G
refuse '/controllerManager/resources/limits/memory' --set controllerManager.resources.limits.memory=512M
refuse '/apiServer/service/type' --set apiServer.service.type=Ingress
refuse '/controllerManager/extraArgs/0' --set 'controllerManager.extraArgs={v=2}'
refuse '/etcd/image/tag' --set etcd.image.tag=
refuse '/apiServer/image/tag' --set apiServer.image.tag=
refuse '/kubeControllerManager/image/tag' --set kubeControllerManager.image.tag=
refuse '/apiServer/service/nodePort' --set apiServer.service.type=NodePort --set apiServer.service.nodePort=8443
refuse '/apiServer/service/nodePort' --set apiServer.service.type=NodePort --set apiServer.service.nodePort=32768
refuse '/init/timeout' --set init.timeout=0s
refuse '/etcd/resources/limits/memory' --set etcd.resources.limits.memory=0
refuse '/apiServer/resources/limits/memory' --set-string apiServer.resources.limits.memory=0Mi
refuse '/kubeControllerManager/resources/limits/memory' --set-string kubeControllerManager.resources.limits.memory=0
refuse '/init/resources/limits/memory' --set init.resources.limits.memory=0.0Gi
refuse '/apiServer/audit/rules/0/level' --set apiServer.audit.enabled=true --set 'apiServer.audit.rules[0].level=Everything'
refuse "'verb' not allowed" --set apiServer.audit.enabled=true --set 'apiServer.audit.rules[0].verb=get'
refuse "apiServer.audit.rules is not set: helm upgrade --reuse-values keeps" --set apiServer.audit.enabled=true --set 'apiServer.audit.rules=null'
refuse '/apiServer/audit/rules' --set apiServer.audit.enabled=true --set-json 'apiServer.audit.rules=[]'
render --set init.timeout=90s --set etcd.resources.limits.memory=0.5Gi >/dev/null
# --memory-limit: at least 1Mi, from a limit of at most six digits.
refuse 'controllerManager.resources.limits.memory is 1Mi: with controllerManager.memoryLimitPercent 10' \
  --set controllerManager.resources.limits.memory=1Mi --set controllerManager.memoryLimitPercent=10
refuse 'controllerManager.resources.limits.memory is 9Mi' --set controllerManager.resources.limits.memory=9Mi --set controllerManager.memoryLimitPercent=10
refuse "'99999999999999999Gi' does not match" --set controllerManager.resources.limits.memory=99999999999999999Gi
refuse "'1000000Mi' does not match" --set controllerManager.resources.limits.memory=1000000Mi
for c in "10Mi|10|1Mi" "999999Gi|90|921599078Mi" "1Gi|90|921Mi"; do
  IFS='|' read -r limit percent want <<<"$c"
  render --set "controllerManager.resources.limits.memory=$limit" --set "controllerManager.memoryLimitPercent=$percent" | grep -qF -- "--memory-limit=$want" \
    || { echo "verify-chart: with limits.memory=$limit and memoryLimitPercent=$percent --memory-limit is not $want" >&2; exit 1; }
done
# apiServer.extraSANs: IP addresses and DNS names, no ports, no spaces.
for san in 10.0.0.9:6443 lifeboat.example.com:443 'lifeboat example' 999.1.1.1 010.0.0.1 Lifeboat.example.com fe80::1%eth0 example.com. ''; do
  refuse "'$san'" --set-json "apiServer.extraSANs=[\"10.0.0.9\",\"$san\"]"
done
# Object names and flags.
refuse "'Reg_Cred' does not match" --set 'imagePullSecrets={Reg_Cred}'
refuse "'Fast SSD' does not match" --set 'etcd.storage.storageClassName=Fast SSD'
refuse "'Prom_Token' does not match" --set controllerManager.metrics.serviceMonitor.bearerTokenSecret.name=Prom_Token
refuse "'30s' does not match pattern '^--[a-z]'" --set 'controllerManager.extraArgs={--leader-elect-lease-duration,30s}'
refuse "'-v=2' does not match" --set 'controllerManager.extraArgs={-v=2}'
render --set 'imagePullSecrets={regcred.example}' --set etcd.storage.storageClassName=fast-ssd \
  --set controllerManager.metrics.serviceMonitor.bearerTokenSecret.name=prom.token >/dev/null
# Flags the chart sets itself, and ports the pod already uses.
for flag in --kubeconfig=/x --control-plane-kubeconfig=/x --context=x --leader-elect=false --leader-elect \
  --health-probe-bind-address=:9 --metrics-bind-address=:9 --metrics-secure --memory-limit=1Gi; do
  refuse "controllerManager.extraArgs may not hold ${flag%%=*}:" --set "controllerManager.extraArgs={--v=2,${flag}}"
done
render --set 'controllerManager.extraArgs={--v=2,--leader-elect-lease-duration=30s}' | grep -qF -- '"--leader-elect-lease-duration=30s"' \
  || { echo "verify-chart: controllerManager.extraArgs must pass on flags the chart does not set" >&2; exit 1; }
refuse 'from controllerManager.metrics.port; set that instead' --set 'controllerManager.extraArgs={--metrics-bind-address=:9090}'
# A secure endpoint answers 401 to a scrape without a token: the
# ServiceMonitor sends the one its Secret holds, and is refused without it.
refuse 'bearerTokenSecret.name is required with controllerManager.metrics.secure' \
  --set controllerManager.metrics.secure=true --set controllerManager.metrics.serviceMonitor.enabled=true
sm=$(render --set controllerManager.metrics.secure=true --set controllerManager.metrics.serviceMonitor.enabled=true \
  --set controllerManager.metrics.serviceMonitor.bearerTokenSecret.name=prom | obj ServiceMonitor lb-lifeboat-controller-manager)
grep -qF 'credentials: {name: prom, key: token}' <<<"$sm" || { echo "verify-chart: the secure ServiceMonitor sends no bearer token:" >&2; echo "$sm" >&2; exit 1; }
refuse 'controllerManager.metrics.port is 10357' --set controllerManager.metrics.port=10357
refuse 'controllerManager.podDisruptionBudget.minAvailable is 2 with controllerManager.replicas 2' --set controllerManager.podDisruptionBudget.minAvailable=2
refuse '/controllerManager/podDisruptionBudget/minAvailable' --set controllerManager.podDisruptionBudget.minAvailable=2147483648

# The agent's chart.
AGENT=charts/lifeboat-agent
"${HELM}" lint --strict --kube-version "${KUBE_VERSION}" "${AGENT}" --set clusterName=edge1
arender() { "${HELM}" template a "${AGENT}" --namespace lifeboat-system --kube-version "${KUBE_VERSION}" "$@"; }
arender --set clusterName=edge1 | go run ./hack/chartcheck --values "${AGENT}/values.yaml" --readme "${AGENT}/README.md"
out=$(arender --set clusterName=edge1 --set 'rbac.extraRules[0].apiGroups={flink.apache.org}' --set 'rbac.extraRules[0].resources={*}' --set 'rbac.extraRules[0].verbs={*}')
for want in '--cluster-name=edge1' '--member-lease-namespace=lifeboat-system' 'resources: [leases]' 'runAsNonRoot: true' 'readOnlyRootFilesystem: true' 'replicas: 1' 'flink.apache.org' 'secretName: lifeboat-agent-kubeconfig' '--kubeconfig-secret=lifeboat-system/lifeboat-agent-kubeconfig' 'resourceNames: [lifeboat-agent-kubeconfig]'; do
  grep -qF -- "$want" <<<"$out" || { echo "verify-chart: the agent's rendering lacks: $want" >&2; exit 1; }
done
arefuse() {
  local want=$1; shift
  local got
  if got=$(arender "$@" 2>&1); then
    echo "verify-chart: the agent's chart accepted: $*" >&2; exit 1
  fi
  grep -qF -- "$want" <<<"$got" || { echo "verify-chart: the agent's refusal of $* does not name $want:" >&2; echo "$got" >&2; exit 1; }
}
arefuse 'clusterName is required'
arefuse '/clusterName' --set clusterName=Edge_1
arefuse "'replicas' not allowed" --set clusterName=edge1 --set replicas=2
for flag in --kubeconfig-secret=kube-system/x --member-lease-namespace=kube-system --health-probe-bind-address=127.0.0.1:9 --metrics-bind-address=:9 --kubeconfig=/x --cluster-name=edge2 --metrics-secure --metrics-cert-dir=/x \
  --control-plane-kubeconfig=/x --context=x --control-plane-context=x --cluster-kubeconfig=/x --cluster-context=x; do
  arefuse "extraArgs may not hold ${flag%%=*}:" --set clusterName=edge1 --set "extraArgs={--v=2,${flag}}"
done
arender --set clusterName=edge1 --set 'extraArgs={--cluster-lease-duration=40s}' | grep -qF -- '"--cluster-lease-duration=40s"' \
  || { echo "verify-chart: the agent's extraArgs must pass on flags the chart does not set" >&2; exit 1; }
arefuse 'extraArgs may not hold --kubeconfig:' --set clusterName=edge1 --set 'extraArgs={--kubeconfig /x}'
# One flag per item, starting with --: a value of its own would escape the check above.
arefuse "'/x' does not match pattern '^--[a-z]'" --set clusterName=edge1 --set 'extraArgs={--kubeconfig,/x}'
arefuse "'-kubeconfig=/x' does not match" --set clusterName=edge1 --set 'extraArgs={-kubeconfig=/x}'
# resources as the main chart's; object names as DNS-1123 subdomains.
arefuse '/resources/limits/memory' --set clusterName=edge1 --set resources.limits.memory=0
arefuse "'0Mi' does not match" --set clusterName=edge1 --set-string resources.limits.memory=0Mi
arefuse "'lots' does not match" --set clusterName=edge1 --set resources.requests.cpu=lots
arefuse "'limit' not allowed" --set clusterName=edge1 --set resources.limit.memory=1Gi
arefuse "'My_Secret' does not match" --set clusterName=edge1 --set controlPlaneKubeconfigSecret=My_Secret
arefuse "'' does not match" --set clusterName=edge1 --set controlPlaneKubeconfigSecret=
arefuse "'Reg Cred' does not match" --set clusterName=edge1 --set 'imagePullSecrets={Reg Cred}'
out2=$(arender --set clusterName=edge1 --set resources.limits.memory=512Mi --set controlPlaneKubeconfigSecret=agent.kubeconfig --set 'imagePullSecrets={regcred}')
for want in 'memory: 512Mi' 'secretName: agent.kubeconfig' '--kubeconfig-secret=lifeboat-system/agent.kubeconfig' '- name: regcred'; do
  grep -qF -- "$want" <<<"$out2" || { echo "verify-chart: the agent's rendering with good values lacks: $want" >&2; exit 1; }
done
# The longest release name and cluster name: every name fits.
"${HELM}" template "$long" "${AGENT}" --namespace lifeboat-system --kube-version "${KUBE_VERSION}" --set "clusterName=$(printf 'c%.0s' {1..48})" \
  | names | checknames "the agent's release $long"
# metrics.secure: the flag, and the reviews it needs in the member; neither without it.
secure=$(arender --set clusterName=edge1 --set metrics.secure=true)
for want in '- --metrics-secure' 'resources: [tokenreviews]' 'resources: [subjectaccessreviews]'; do
  grep -qF -- "$want" <<<"$secure" || { echo "verify-chart: the agent's rendering with metrics.secure lacks: $want" >&2; exit 1; }
  if grep -qF -- "$want" <<<"$out"; then echo "verify-chart: the agent's rendering without metrics.secure holds: $want" >&2; exit 1; fi
done
grep -qF 'resourceNames: [lifeboat-agent-edge1]' <<<"$out" || { echo "verify-chart: the agent's Lease Role must name its own renewal record" >&2; exit 1; }
# The agent may write only the Secret of its own kubeconfig.
grep -B2 -A1 'resources: \[secrets\]' <<<"$out" | grep -qF 'resourceNames: [lifeboat-agent-kubeconfig]' \
  || { echo "verify-chart: the agent's Secret rule must name its kubeconfig's Secret" >&2; exit 1; }
echo "verify-chart: OK"
