package cluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
)

func container(req corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: req}}
}

func sidecar(req corev1.ResourceList) corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	c := container(req)
	c.RestartPolicy = &always
	return c
}

func TestPodRequests(t *testing.T) {
	cases := map[string]struct {
		spec corev1.PodSpec
		want corev1.ResourceList
	}{
		"containers are summed": {
			spec: corev1.PodSpec{Containers: []corev1.Container{
				container(resources("cpu", "100m", "memory", "64Mi")), container(resources("cpu", "200m")),
			}},
			want: resources("cpu", "300m", "memory", "64Mi"),
		},
		"a bigger init container wins": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{container(resources("cpu", "1"))},
				Containers:     []corev1.Container{container(resources("cpu", "100m", "memory", "1Gi"))},
			},
			want: resources("cpu", "1", "memory", "1Gi"),
		},
		"sidecars add to the containers and to later init containers": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{
					sidecar(resources("cpu", "100m")),
					container(resources("cpu", "500m")),
				},
				Containers: []corev1.Container{container(resources("cpu", "200m"))},
			},
			want: resources("cpu", "600m"),
		},
		"overhead is added": {
			spec: corev1.PodSpec{
				Containers: []corev1.Container{container(resources("cpu", "100m"))},
				Overhead:   resources("cpu", "10m"),
			},
			want: resources("cpu", "110m"),
		},
		"pod-level requests win for what they name": {
			spec: corev1.PodSpec{
				Containers: []corev1.Container{container(resources("cpu", "100m", "memory", "64Mi"))},
				Resources:  &corev1.ResourceRequirements{Requests: resources("cpu", "2")},
			},
			want: resources("cpu", "2", "memory", "64Mi"),
		},
		"no requests": {
			spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
			want: corev1.ResourceList{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := podRequests(&corev1.Pod{Spec: tc.spec})
			if !equality.Semantic.DeepEqual(tc.want, got) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSummaryBuilder(t *testing.T) {
	node := func(ready corev1.ConditionStatus, alloc corev1.ResourceList) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{
			Allocatable: alloc,
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}},
		}}
	}
	pod := func(nodeName string, phase corev1.PodPhase, req corev1.ResourceList) *corev1.Pod {
		return &corev1.Pod{
			Spec:   corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{container(req)}},
			Status: corev1.PodStatus{Phase: phase},
		}
	}
	b := newSummaryBuilder()
	b.addNode(node(corev1.ConditionTrue, resources("cpu", "4", "memory", "8Gi", "pods", "110")))
	b.addNode(node(corev1.ConditionFalse, resources("cpu", "2", "memory", "4Gi", "pods", "110")))
	b.addNode(&corev1.Node{}) // no conditions: not Ready
	b.addPod(pod("n1", corev1.PodRunning, resources("cpu", "500m", "memory", "1Gi")))
	b.addPod(pod("n1", corev1.PodPending, resources("cpu", "250m")))
	b.addPod(pod("", corev1.PodPending, resources("cpu", "1")))
	b.addPod(pod("n1", corev1.PodSucceeded, resources("cpu", "8")))
	b.addPod(pod("n2", corev1.PodFailed, resources("cpu", "8")))

	if diff := cmp.Diff(&clusterv1alpha1.NodeSummary{TotalNum: 3, ReadyNum: 1}, b.nodeSummary()); diff != "" {
		t.Errorf("nodeSummary (-want +got):\n%s", diff)
	}
	want := &clusterv1alpha1.ResourceSummary{
		Allocatable: resources("cpu", "6", "memory", "12Gi", "pods", "220"),
		Allocating:  resources("cpu", "1", "pods", "1"),
		Allocated:   resources("cpu", "750m", "memory", "1Gi", "pods", "2"),
	}
	if got := b.resourceSummary(); !equality.Semantic.DeepEqual(want, got) {
		t.Errorf("resourceSummary:\n got %+v\nwant %+v", got, want)
	}
}

func TestAPIEnablements(t *testing.T) {
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Kind: "Pod"}, {Name: "pods/status", Kind: "Pod"}, {Name: "configmaps", Kind: "ConfigMap"},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
		nil,
	}
	want := []clusterv1alpha1.APIEnablement{
		{GroupVersion: "apps/v1", Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
		{GroupVersion: "v1", Resources: []clusterv1alpha1.APIResource{{Name: "configmaps", Kind: "ConfigMap"}, {Name: "pods", Kind: "Pod"}}},
	}
	if diff := cmp.Diff(want, apiEnablements(lists)); diff != "" {
		t.Errorf("apiEnablements (-want +got):\n%s", diff)
	}
}

func TestAPIEnablementsCondition(t *testing.T) {
	some := []clusterv1alpha1.APIEnablement{{GroupVersion: "v1"}}
	cases := map[string]struct {
		enablements []clusterv1alpha1.APIEnablement
		partial     bool
		wantStatus  metav1.ConditionStatus
		wantReason  string
	}{
		"complete": {enablements: some, wantStatus: metav1.ConditionTrue, wantReason: clusterv1alpha1.APIEnablementsComplete},
		"partial":  {enablements: some, partial: true, wantStatus: metav1.ConditionFalse, wantReason: clusterv1alpha1.APIEnablementsPartial},
		"empty":    {wantStatus: metav1.ConditionFalse, wantReason: clusterv1alpha1.APIEnablementsEmpty},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := apiEnablementsCondition(tc.enablements, tc.partial)
			if c.Status != tc.wantStatus || c.Reason != tc.wantReason {
				t.Errorf("got %s (%s), want %s (%s)", c.Status, c.Reason, tc.wantStatus, tc.wantReason)
			}
		})
	}
}
