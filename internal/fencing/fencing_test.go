package fencing

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/packed"
)

func spec(cf *policyv1alpha1.ClusterFailoverBehavior, tolerations ...corev1.Toleration) *workv1alpha2.ResourceBindingSpec {
	s := &workv1alpha2.ResourceBindingSpec{Placement: &policyv1alpha1.Placement{ClusterTolerations: tolerations}}
	if cf != nil {
		s.Failover = &policyv1alpha1.FailoverBehavior{Cluster: cf}
	}
	return s
}

func notReady(seconds *int64) corev1.Toleration {
	return corev1.Toleration{Key: "cluster.karmada.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}
}

func TestFor(t *testing.T) {
	directly := &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeDirectly}
	immediately := &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeImmediately}
	gracefully := &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeGracefully}
	off := &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeDirectly, Fencing: &policyv1alpha1.Fencing{Enabled: ptr.To(false)}}
	del := &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeDirectly, Fencing: &policyv1alpha1.Fencing{Action: policyv1alpha1.FencingDelete}}
	cases := map[string]struct {
		spec   *workv1alpha2.ResourceBindingSpec
		def    policyv1alpha1.PurgeMode
		want   Spec
		fenced bool
	}{
		"Directly: on by default":                  {spec(directly), "", Spec{Action: policyv1alpha1.FencingScaleToZero}, true},
		"Immediately is Directly":                  {spec(immediately), "", Spec{Action: policyv1alpha1.FencingScaleToZero}, true},
		"Gracefully: never":                        {spec(gracefully), policyv1alpha1.PurgeModeDirectly, Spec{}, false},
		"no policy, controller default Gracefully": {spec(nil), policyv1alpha1.PurgeModeGracefully, Spec{}, false},
		"no policy, controller default Directly":   {spec(nil), policyv1alpha1.PurgeModeDirectly, Spec{Action: policyv1alpha1.FencingScaleToZero}, true},
		"turned off":                               {spec(off), "", Spec{}, false},
		"delete":                                   {spec(del), "", Spec{Action: policyv1alpha1.FencingDelete}, true},
		"not-ready tolerated 30s":                  {spec(directly, notReady(ptr.To[int64](30))), "", Spec{Action: policyv1alpha1.FencingScaleToZero, After: 30 * time.Second}, true},
		"the longest toleration counts": {spec(directly, notReady(ptr.To[int64](30)),
			corev1.Toleration{Key: "cluster.karmada.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](90)}),
			"", Spec{Action: policyv1alpha1.FencingScaleToZero, After: 90 * time.Second}, true},
		"tolerated forever: never moved, never fenced": {spec(directly, notReady(nil)), "", Spec{}, false},
		"an Exists-all toleration forever":             {spec(directly, corev1.Toleration{Operator: corev1.TolerationOpExists}), "", Spec{}, false},
		"a NoSchedule toleration does not count":       {spec(directly, corev1.Toleration{Key: "cluster.karmada.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}), "", Spec{Action: policyv1alpha1.FencingScaleToZero}, true},
		"negative seconds count as 0":                  {spec(directly, notReady(ptr.To[int64](-5))), "", Spec{Action: policyv1alpha1.FencingScaleToZero}, true},
		"past int32 is bounded":                        {spec(directly, notReady(ptr.To[int64](1<<40))), "", Spec{Action: policyv1alpha1.FencingScaleToZero, After: MaxAfter}, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := For(tc.spec, tc.def)
			if ok != tc.fenced || got != tc.want {
				t.Errorf("For = %+v, %t; want %+v, %t", got, ok, tc.want, tc.fenced)
			}
		})
	}
}

// The marks the binding writes read back as the same Spec; anything else
// on a member object is not fenced, or fenced at the earliest.
func TestMarksRoundTrip(t *testing.T) {
	for _, s := range []Spec{
		{Action: policyv1alpha1.FencingScaleToZero},
		{Action: policyv1alpha1.FencingDelete, After: 90 * time.Second},
		{Action: policyv1alpha1.FencingScaleToZero, After: MaxAfter},
	} {
		l, a := s.Marks()
		got, ok := FromMarks(l, a)
		if !ok || got != s {
			t.Errorf("FromMarks(Marks(%+v)) = %+v, %t", s, got, ok)
		}
	}
	cases := map[string]struct {
		labels, annotations map[string]string
		want                Spec
		ok                  bool
	}{
		"no label":           {nil, map[string]string{AfterAnnotation: "5"}, Spec{}, false},
		"unknown action":     {map[string]string{ActionLabel: "Pause"}, nil, Spec{}, false},
		"no delay":           {map[string]string{ActionLabel: "Delete"}, nil, Spec{Action: policyv1alpha1.FencingDelete}, true},
		"garbage delay":      {map[string]string{ActionLabel: "Delete"}, map[string]string{AfterAnnotation: "soon"}, Spec{Action: policyv1alpha1.FencingDelete}, true},
		"negative delay":     {map[string]string{ActionLabel: "Delete"}, map[string]string{AfterAnnotation: "-60"}, Spec{Action: policyv1alpha1.FencingDelete}, true},
		"delay past the cap": {map[string]string{ActionLabel: "Delete"}, map[string]string{AfterAnnotation: "99999999999"}, Spec{Action: policyv1alpha1.FencingDelete, After: MaxAfter}, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := FromMarks(tc.labels, tc.annotations)
			if ok != tc.ok || got != tc.want {
				t.Errorf("FromMarks = %+v, %t; want %+v, %t", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// The control plane counts a copy as stopped only after the agent fenced
// it, by the same renewal, plus the margin.
func TestStoppedByFollowsDue(t *testing.T) {
	r := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	s := Spec{Action: policyv1alpha1.FencingScaleToZero, After: 30 * time.Second}
	due := Due(r, 40*time.Second, s)
	if want := r.Add(70 * time.Second); !due.Equal(want) {
		t.Errorf("Due = %v, want %v", due, want)
	}
	stopped, ok := StoppedBy(r, 40, s, 15*time.Second)
	if !ok || !stopped.Equal(due.Add(15*time.Second)) {
		t.Errorf("StoppedBy = %v, %t; want %v", stopped, ok, due.Add(15*time.Second))
	}
	if _, ok := StoppedBy(time.Time{}, 40, s, 0); ok {
		t.Error("StoppedBy without a renewal said ok")
	}
	if _, ok := StoppedBy(r, 0, s, 0); ok {
		t.Error("StoppedBy without a lease duration said ok")
	}
}

func TestCondition(t *testing.T) {
	directly := &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeDirectly}
	modes := map[string]clusterv1alpha1.ClusterSyncMode{"edge1": clusterv1alpha1.Pull, "edge2": clusterv1alpha1.Pull, "member1": clusterv1alpha1.Push}
	placed := func(cf *policyv1alpha1.ClusterFailoverBehavior, clusters ...string) *workv1alpha2.ResourceBindingSpec {
		s := spec(cf)
		for _, c := range clusters {
			s.Clusters = append(s.Clusters, workv1alpha2.TargetCluster{Name: c})
		}
		return s
	}
	cases := map[string]struct {
		spec       *workv1alpha2.ResourceBindingSpec
		ok         bool
		status     metav1.ConditionStatus
		reason     string
		mentioning string
	}{
		"Gracefully: no condition":          {placed(nil, "edge1"), false, "", "", ""},
		"Pull clusters only: fenced":        {placed(directly, "edge1", "edge2"), true, metav1.ConditionTrue, ReasonFencedByAgents, "edge1, edge2"},
		"a Push cluster: says it cannot be": {placed(directly, "edge1", "member1"), true, metav1.ConditionFalse, ReasonPushNotFenceable, "member1: Push clusters cannot be fenced"},
		"an unknown cluster is left out":    {placed(directly, "edge1", "gone"), true, metav1.ConditionTrue, ReasonFencedByAgents, "in edge1 are"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, ok := Condition(tc.spec, modes, policyv1alpha1.PurgeModeGracefully)
			if ok != tc.ok {
				t.Fatalf("ok = %t, want %t", ok, tc.ok)
			}
			if !ok {
				return
			}
			if c.Type != ConditionType || c.Status != tc.status || c.Reason != tc.reason || !strings.Contains(c.Message, tc.mentioning) {
				t.Errorf("Condition = %+v, want %s %s mentioning %q", c, tc.status, tc.reason, tc.mentioning)
			}
		})
	}
}

// A Work's fencing marks are read the same whether its manifest is raw or
// compacted as a cache may keep it: a fenced copy is never missed.
func TestOfWorkReadsCompactedManifests(t *testing.T) {
	d := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]interface{}{"namespace": "app", "name": "web",
			"labels":      map[string]interface{}{ActionLabel: string(policyv1alpha1.FencingScaleToZero)},
			"annotations": map[string]interface{}{AfterAnnotation: "30"}},
		"spec": map[string]interface{}{"replicas": int64(2)},
	}}
	raw, err := d.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	work := &workv1alpha1.Work{}
	work.Spec.Workload.Manifests = []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}
	want := Spec{Action: policyv1alpha1.FencingScaleToZero, After: 30 * time.Second}
	if s, ok := OfWork(work); !ok || s != want {
		t.Fatalf("raw manifest: OfWork = %+v, %v; want %+v, true", s, ok, want)
	}
	if err := packed.CompactManifests(work); err != nil {
		t.Fatal(err)
	}
	if s, ok := OfWork(work); !ok || s != want {
		t.Fatalf("compacted manifest: OfWork = %+v, %v; want %+v, true", s, ok, want)
	}
}
