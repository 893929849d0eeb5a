package hostnode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// StorageClassName is the host cluster's default StorageClass.
const StorageClassName = "local"

// VolumeOwner is the user and group that own the PersistentVolumes'
// directories: the non-root user of Lifeboat's chart. A hostPath volume is
// not given a pod's fsGroup, so the directory must already be writable by
// the pod's user.
const VolumeOwner = 65532

// VolumeCount and VolumeSize are the PersistentVolumes made ready for
// claims: enough for three etcd members and a spare claim or two.
const (
	VolumeCount = 6
	VolumeSize  = "10Gi"
)

// CoreDNSCorefile serves the cluster domain only. It has no `forward`:
// a name outside the cluster gets SERVFAIL instead of a query to the
// machine's nameserver.
const CoreDNSCorefile = `.:53 {
    errors
    health :8080
    ready :8181
    kubernetes ` + ClusterDomain + ` in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    cache 30
    loop
    reload
    loadbalance
}
`

// Addons returns the host cluster's objects: CoreDNS (ServiceAccount,
// ClusterRole, binding, Corefile, Deployment and the kube-dns Service at
// DNSServiceIP), the default StorageClass and its PersistentVolumes.
func Addons(p Paths, coreDNSImage string) []any {
	const ns = "kube-system"
	labels := map[string]string{"k8s-app": "kube-dns"}
	objs := []any{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: ns}},
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
				{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
			},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:coredns"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "coredns", Namespace: ns}},
		},
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: ns},
			Data:       map[string]string{"Corefile": CoreDNSCorefile},
		},
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: ns, Labels: labels},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						ServiceAccountName: "coredns",
						DNSPolicy:          corev1.DNSDefault,
						PriorityClassName:  "system-cluster-critical",
						Containers: []corev1.Container{{
							Name:            "coredns",
							Image:           coreDNSImage,
							ImagePullPolicy: corev1.PullNever,
							Args:            []string{"-conf", "/etc/coredns/Corefile"},
							Ports: []corev1.ContainerPort{
								{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
								{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP},
							},
							ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8181)}}, PeriodSeconds: 2},
							LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 10, FailureThreshold: 5},
							SecurityContext: &corev1.SecurityContext{
								AllowPrivilegeEscalation: ptr.To(false),
								ReadOnlyRootFilesystem:   ptr.To(true),
								Capabilities:             &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}, Drop: []corev1.Capability{"ALL"}},
							},
							VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/coredns", ReadOnly: true}},
						}},
						Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "coredns"}}}}},
					},
				},
			},
		},
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: ns, Labels: labels},
			Spec: corev1.ServiceSpec{
				ClusterIP: DNSServiceIP,
				Selector:  labels,
				Ports: []corev1.ServicePort{
					{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
					{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
				},
			},
		},
		&storagev1.StorageClass{
			ObjectMeta: metav1.ObjectMeta{
				Name:        StorageClassName,
				Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
			},
			Provisioner:       "kubernetes.io/no-provisioner",
			VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
			ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimRetain),
		},
	}
	for i := range VolumeCount {
		objs = append(objs, Volume(p, i))
	}
	return objs
}

// VolumeName is the name of the i-th PersistentVolume.
func VolumeName(i int) string { return "local-" + strconv.Itoa(i) }

// Volume is the i-th PersistentVolume: a directory under p.Volumes() on
// the node, kept after its claim is deleted (no provisioner removes it;
// the environment's state directory goes with `lifeboat down`).
func Volume(p Paths, i int) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: VolumeName(i), Labels: map[string]string{"lifeboat.dev/host-volume": "true"}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(VolumeSize)},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              StorageClassName,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				Local: &corev1.LocalVolumeSource{Path: filepath.Join(p.Volumes(), VolumeName(i))},
			},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{NodeName}}},
			}}}},
		},
	}
}

// PrepareVolumes creates the volumes' directories, owned by VolumeOwner.
func PrepareVolumes(p Paths) error {
	for i := range VolumeCount {
		dir := filepath.Join(p.Volumes(), VolumeName(i))
		if err := os.MkdirAll(dir, 0o770); err != nil {
			return fmt.Errorf("creating volume directory: %w", err)
		}
		if err := os.Chown(dir, VolumeOwner, VolumeOwner); err != nil {
			return fmt.Errorf("giving %s to %d: %w", dir, VolumeOwner, err)
		}
	}
	return nil
}

// CreateAddons creates objs in the host cluster; one that exists is left
// as it is.
func CreateAddons(ctx context.Context, cs kubernetes.Interface, objs []any) error {
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.ServiceAccount:
			_, err = cs.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRole:
			_, err = cs.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRoleBinding:
			_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
		case *corev1.ConfigMap:
			_, err = cs.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *appsv1.Deployment:
			_, err = cs.AppsV1().Deployments(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Service:
			_, err = cs.CoreV1().Services(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *storagev1.StorageClass:
			_, err = cs.StorageV1().StorageClasses().Create(ctx, o, metav1.CreateOptions{})
		case *corev1.PersistentVolume:
			_, err = cs.CoreV1().PersistentVolumes().Create(ctx, o, metav1.CreateOptions{})
		default:
			return fmt.Errorf("host cluster add-on of unknown type %T", o)
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T: %w", o, err)
		}
	}
	return nil
}
