package cluster

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/features"
)

// policyWrapper builds ClusterTaintPolicies for tests.
type policyWrapper struct {
	policyv1alpha1.ClusterTaintPolicy
}

func makePolicy(name string, created time.Time) *policyWrapper {
	p := &policyWrapper{}
	p.Name = name
	p.CreationTimestamp = metav1.NewTime(created)
	return p
}

func (p *policyWrapper) Targets(names ...string) *policyWrapper {
	p.Spec.TargetClusters = &policyv1alpha1.ClusterAffinity{ClusterNames: names}
	return p
}

func (p *policyWrapper) AddOn(conds ...policyv1alpha1.MatchCondition) *policyWrapper {
	p.Spec.AddOnConditions = append(p.Spec.AddOnConditions, conds...)
	return p
}

func (p *policyWrapper) RemoveOn(conds ...policyv1alpha1.MatchCondition) *policyWrapper {
	p.Spec.RemoveOnConditions = append(p.Spec.RemoveOnConditions, conds...)
	return p
}

func (p *policyWrapper) Taint(key, value string, effect corev1.TaintEffect) *policyWrapper {
	p.Spec.Taints = append(p.Spec.Taints, policyv1alpha1.Taint{Key: key, Value: value, Effect: effect})
	return p
}

func (p *policyWrapper) Obj() *policyv1alpha1.ClusterTaintPolicy { return p.DeepCopy() }

func match(condType string, op policyv1alpha1.MatchConditionOperator, values ...metav1.ConditionStatus) policyv1alpha1.MatchCondition {
	return policyv1alpha1.MatchCondition{ConditionType: condType, Operator: op, StatusValues: values}
}

var (
	readyNotTrue = match(clusterv1alpha1.ClusterConditionReady, policyv1alpha1.MatchConditionOpIn, metav1.ConditionFalse, metav1.ConditionUnknown)
	readyTrue    = match(clusterv1alpha1.ClusterConditionReady, policyv1alpha1.MatchConditionOpIn, metav1.ConditionTrue)
	notReadyNE   = taint(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoExecute)
)

// notReadyPolicy is the default policy of config/samples.
func notReadyPolicy(name string, created time.Time) *policyWrapper {
	return makePolicy(name, created).AddOn(readyNotTrue).RemoveOn(readyTrue).
		Taint(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoExecute)
}

func cond(condType string, status metav1.ConditionStatus) metav1.Condition {
	return metav1.Condition{Type: condType, Status: status, Reason: "Test", LastTransitionTime: metav1.NewTime(t0)}
}

func TestConditionsMatch(t *testing.T) {
	ready := []metav1.Condition{cond("Ready", metav1.ConditionTrue), cond("NetworkOK", metav1.ConditionFalse)}
	cases := map[string]struct {
		conds   []metav1.Condition
		matches []policyv1alpha1.MatchCondition
		want    bool
	}{
		"empty list never matches": {conds: ready, want: false},
		"In matches a listed status": {conds: ready,
			matches: []policyv1alpha1.MatchCondition{match("Ready", policyv1alpha1.MatchConditionOpIn, "True")}, want: true},
		"In does not match an unlisted status": {conds: ready,
			matches: []policyv1alpha1.MatchCondition{match("Ready", policyv1alpha1.MatchConditionOpIn, "False", "Unknown")}, want: false},
		"NotIn matches an unlisted status": {conds: ready,
			matches: []policyv1alpha1.MatchCondition{match("Ready", policyv1alpha1.MatchConditionOpNotIn, "False")}, want: true},
		"NotIn does not match a listed status": {conds: ready,
			matches: []policyv1alpha1.MatchCondition{match("Ready", policyv1alpha1.MatchConditionOpNotIn, "True")}, want: false},
		"missing condition does not match In": {conds: ready,
			matches: []policyv1alpha1.MatchCondition{match("DiskOK", policyv1alpha1.MatchConditionOpIn, "Unknown")}, want: false},
		"missing condition does not match NotIn either": {conds: ready,
			matches: []policyv1alpha1.MatchCondition{match("DiskOK", policyv1alpha1.MatchConditionOpNotIn, "True")}, want: false},
		"no conditions at all": {
			matches: []policyv1alpha1.MatchCondition{readyNotTrue}, want: false},
		"all must match (AND)": {conds: ready,
			matches: []policyv1alpha1.MatchCondition{readyTrue, match("NetworkOK", policyv1alpha1.MatchConditionOpIn, "True")}, want: false},
		"all match": {conds: ready,
			matches: []policyv1alpha1.MatchCondition{readyTrue, match("NetworkOK", policyv1alpha1.MatchConditionOpIn, "False")}, want: true},
		"unknown operator fails the whole list": {conds: ready,
			matches: []policyv1alpha1.MatchCondition{readyTrue, match("Ready", "Exists", "True")}, want: false},
		"custom condition types work": {conds: ready,
			matches: []policyv1alpha1.MatchCondition{match("NetworkOK", policyv1alpha1.MatchConditionOpNotIn, "True")}, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := conditionsMatch(tc.conds, tc.matches); got != tc.want {
				t.Errorf("conditionsMatch = %t, want %t", got, tc.want)
			}
		})
	}
}

var ignoreTimeLocation = cmp.Comparer(func(a, b metav1.Time) bool { return a.Equal(&b) })

func TestApplyTaintPolicies(t *testing.T) {
	now := t0.Add(time.Hour)
	user := taint("dedicated", "gpu", corev1.TaintEffectNoSchedule)
	oldNE := taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoExecute, t0)
	newNE := taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoExecute, now)
	down := func() *clusterWrapper {
		return makeCluster("m1").Ready(metav1.ConditionFalse, clusterv1alpha1.ClusterReasonNotReachable, t0)
	}
	up := func() *clusterWrapper {
		return makeCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, t0)
	}
	cases := map[string]struct {
		cluster      *clusterv1alpha1.Cluster
		policies     []*policyv1alpha1.ClusterTaintPolicy
		want         []corev1.Taint
		wantAdded    []corev1.Taint
		wantRemoved  []corev1.Taint
		wantPolicies []string
	}{
		"not ready: the NoExecute taint is added with timeAdded": {
			cluster:      down().Obj(),
			policies:     []*policyv1alpha1.ClusterTaintPolicy{notReadyPolicy("p", t0).Obj()},
			want:         []corev1.Taint{newNE},
			wantAdded:    []corev1.Taint{newNE},
			wantPolicies: []string{"p"},
		},
		"Unknown counts too": {
			cluster:   makeCluster("m1").Ready(metav1.ConditionUnknown, clusterv1alpha1.ClusterReasonStatusUnknown, t0).Obj(),
			policies:  []*policyv1alpha1.ClusterTaintPolicy{notReadyPolicy("p", t0).Obj()},
			want:      []corev1.Taint{newNE},
			wantAdded: []corev1.Taint{newNE},
		},
		"already tainted: unchanged, timeAdded kept": {
			cluster:  makeCluster("m1").Ready(metav1.ConditionFalse, "", t0).Taints(user, oldNE).Obj(),
			policies: []*policyv1alpha1.ClusterTaintPolicy{notReadyPolicy("p", t0).Obj()},
			want:     []corev1.Taint{user, oldNE},
		},
		"same key and effect with another value is left alone": {
			cluster:  makeCluster("m1").Ready(metav1.ConditionFalse, "", t0).Taints(taintAt(clusterv1alpha1.TaintClusterNotReady, "manual", corev1.TaintEffectNoExecute, t0)).Obj(),
			policies: []*policyv1alpha1.ClusterTaintPolicy{notReadyPolicy("p", t0).Obj()},
			want:     []corev1.Taint{taintAt(clusterv1alpha1.TaintClusterNotReady, "manual", corev1.TaintEffectNoExecute, t0)},
		},
		"ready again: removed, other taints kept in order": {
			cluster:      up().Taints(user, oldNE, taint("zone", "a", corev1.TaintEffectNoExecute)).Obj(),
			policies:     []*policyv1alpha1.ClusterTaintPolicy{notReadyPolicy("p", t0).Obj()},
			want:         []corev1.Taint{user, taint("zone", "a", corev1.TaintEffectNoExecute)},
			wantRemoved:  []corev1.Taint{oldNE},
			wantPolicies: []string{"p"},
		},
		"removal ignores the value (Karmada: the policy owns the key and effect)": {
			cluster:     makeCluster("m1").Ready(metav1.ConditionTrue, "", t0).Taints(taint(clusterv1alpha1.TaintClusterNotReady, "manual", corev1.TaintEffectNoExecute)).Obj(),
			policies:    []*policyv1alpha1.ClusterTaintPolicy{notReadyPolicy("p", t0).Obj()},
			wantRemoved: []corev1.Taint{taint(clusterv1alpha1.TaintClusterNotReady, "manual", corev1.TaintEffectNoExecute)},
		},
		"removal keeps the same key with another effect": {
			cluster:  makeCluster("m1").Ready(metav1.ConditionTrue, "", t0).Taints(taint(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoSchedule)).Obj(),
			policies: []*policyv1alpha1.ClusterTaintPolicy{notReadyPolicy("p", t0).Obj()},
			want:     []corev1.Taint{taint(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoSchedule)},
		},
		"ready and not tainted: nothing": {
			cluster:  up().Taints(user).Obj(),
			policies: []*policyv1alpha1.ClusterTaintPolicy{notReadyPolicy("p", t0).Obj()},
			want:     []corev1.Taint{user},
		},
		"no Ready condition: neither adds nor removes": {
			cluster:  makeCluster("m1").Taints(oldNE).Obj(),
			policies: []*policyv1alpha1.ClusterTaintPolicy{notReadyPolicy("p", t0).Obj()},
			want:     []corev1.Taint{oldNE},
		},
		"policy for another cluster": {
			cluster:  down().Obj(),
			policies: []*policyv1alpha1.ClusterTaintPolicy{notReadyPolicy("p", t0).Targets("m2").Obj()},
		},
		"excluded cluster": {
			cluster: down().Obj(),
			policies: []*policyv1alpha1.ClusterTaintPolicy{func() *policyv1alpha1.ClusterTaintPolicy {
				p := notReadyPolicy("p", t0).Obj()
				p.Spec.TargetClusters = &policyv1alpha1.ClusterAffinity{Exclude: []string{"m1"}}
				return p
			}()},
		},
		"label selector selects": {
			cluster: func() *clusterv1alpha1.Cluster {
				c := down().Obj()
				c.Labels = map[string]string{"tier": "prod"}
				return c
			}(),
			policies: []*policyv1alpha1.ClusterTaintPolicy{func() *policyv1alpha1.ClusterTaintPolicy {
				p := notReadyPolicy("p", t0).Obj()
				p.Spec.TargetClusters = &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}}}
				return p
			}()},
			want:      []corev1.Taint{newNE},
			wantAdded: []corev1.Taint{newNE},
		},
		"no addOnConditions never adds": {
			cluster:  down().Obj(),
			policies: []*policyv1alpha1.ClusterTaintPolicy{makePolicy("p", t0).RemoveOn(readyTrue).Taint("k", "", corev1.TaintEffectNoExecute).Obj()},
		},
		"several taints of one policy": {
			cluster: down().Obj(),
			policies: []*policyv1alpha1.ClusterTaintPolicy{makePolicy("p", t0).AddOn(readyNotTrue).
				Taint("a", "1", corev1.TaintEffectNoSchedule).Taint("b", "", corev1.TaintEffectNoExecute).Obj()},
			want:      []corev1.Taint{taintAt("a", "1", corev1.TaintEffectNoSchedule, now), taintAt("b", "", corev1.TaintEffectNoExecute, now)},
			wantAdded: []corev1.Taint{taintAt("a", "1", corev1.TaintEffectNoSchedule, now), taintAt("b", "", corev1.TaintEffectNoExecute, now)},
		},
		"the newer policy wins: older adds, newer removes": {
			cluster: down().Obj(),
			policies: []*policyv1alpha1.ClusterTaintPolicy{
				makePolicy("newer", t0.Add(time.Minute)).AddOn(match("Ready", policyv1alpha1.MatchConditionOpIn, "True")).
					RemoveOn(match("Ready", policyv1alpha1.MatchConditionOpIn, "False")).Taint(notReadyNE.Key, "", notReadyNE.Effect).Obj(),
				notReadyPolicy("older", t0).Obj(),
			},
		},
		"the newer policy wins: older removes, newer adds": {
			cluster: down().Obj(),
			policies: []*policyv1alpha1.ClusterTaintPolicy{
				notReadyPolicy("newer", t0.Add(time.Minute)).Obj(),
				makePolicy("older", t0).RemoveOn(match("Ready", policyv1alpha1.MatchConditionOpIn, "False")).Taint(notReadyNE.Key, "", notReadyNE.Effect).Obj(),
			},
			want:         []corev1.Taint{newNE},
			wantAdded:    []corev1.Taint{newNE},
			wantPolicies: []string{"newer"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var policies []policyv1alpha1.ClusterTaintPolicy
			for _, p := range tc.policies {
				policies = append(policies, *p)
			}
			before := tc.cluster.DeepCopy()
			got, change := applyTaintPolicies(tc.cluster, policies, now)
			if diff := cmp.Diff(tc.want, got, ignoreTimeLocation); diff != "" {
				t.Errorf("taints (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAdded, change.added, ignoreTimeLocation); diff != "" {
				t.Errorf("added (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRemoved, change.removed, ignoreTimeLocation); diff != "" {
				t.Errorf("removed (-want +got):\n%s", diff)
			}
			if tc.wantPolicies != nil {
				if diff := cmp.Diff(tc.wantPolicies, change.policies); diff != "" {
					t.Errorf("policies (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(before, tc.cluster); diff != "" {
				t.Errorf("the input cluster was modified:\n%s", diff)
			}
		})
	}
}

func TestTaintPolicyController(t *testing.T) {
	now := t0.Add(time.Hour)
	user := taint("dedicated", "gpu", corev1.TaintEffectNoSchedule)
	cases := map[string]struct {
		cluster    *clusterv1alpha1.Cluster
		policies   []*policyv1alpha1.ClusterTaintPolicy
		want       []corev1.Taint
		wantWrites int
		wantEvent  string
	}{
		"not ready: NoExecute added, event": {
			cluster:    makeCluster("m1").Ready(metav1.ConditionFalse, clusterv1alpha1.ClusterReasonNotReachable, t0).Taints(user).Obj(),
			policies:   []*policyv1alpha1.ClusterTaintPolicy{notReadyPolicy("detect-not-ready", t0).Obj()},
			want:       []corev1.Taint{user, taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoExecute, now)},
			wantWrites: 1,
			wantEvent:  "Normal TaintClusterSucceed ClusterTaintPolicy detect-not-ready: added cluster.karmada.io/not-ready:NoExecute (Ready False)",
		},
		"recovered: removed": {
			cluster: makeCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, t0).
				Taints(taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoExecute, t0)).Obj(),
			policies:   []*policyv1alpha1.ClusterTaintPolicy{notReadyPolicy("detect-not-ready", t0).Obj()},
			wantWrites: 1,
			wantEvent:  "Normal TaintClusterSucceed ClusterTaintPolicy detect-not-ready: removed cluster.karmada.io/not-ready:NoExecute (Ready True)",
		},
		"nothing to do writes nothing": {
			cluster:  makeCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, t0).Taints(user).Obj(),
			policies: []*policyv1alpha1.ClusterTaintPolicy{notReadyPolicy("detect-not-ready", t0).Obj()},
			want:     []corev1.Taint{user},
		},
		"no policies writes nothing": {
			cluster: makeCluster("m1").Ready(metav1.ConditionFalse, "", t0).Obj(),
		},
		"deleting cluster is left alone": {
			cluster:  makeCluster("m1").Finalizer().Deleting(t0).Ready(metav1.ConditionFalse, "", t0).Obj(),
			policies: []*policyv1alpha1.ClusterTaintPolicy{notReadyPolicy("detect-not-ready", t0).Obj()},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := &writeCounter{}
			b := newFakeClient(t).WithObjects(tc.cluster)
			for _, p := range tc.policies {
				b = b.WithObjects(p)
			}
			c := b.WithInterceptorFuncs(w.funcs()).Build()
			rec := events.NewFakeRecorder(10)
			r := &TaintPolicyReconciler{Client: c, Recorder: rec, Clock: clocktesting.NewFakePassiveClock(now)}
			if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "m1"}}); err != nil {
				t.Fatal(err)
			}
			if w.n != tc.wantWrites {
				t.Errorf("writes = %d, want %d", w.n, tc.wantWrites)
			}
			var got clusterv1alpha1.Cluster
			if err := c.Get(context.Background(), types.NamespacedName{Name: "m1"}, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Spec.Taints, ignoreTimeLocation); diff != "" {
				t.Errorf("taints (-want +got):\n%s", diff)
			}
			var gotEvent string
			select {
			case gotEvent = <-rec.Events:
			default:
			}
			if gotEvent != tc.wantEvent {
				t.Errorf("event = %q, want %q", gotEvent, tc.wantEvent)
			}
		})
	}
}

func TestTaintPolicyControllerWriteErrors(t *testing.T) {
	cluster := makeCluster("m1").Ready(metav1.ConditionFalse, "", t0).Obj()
	policy := notReadyPolicy("p", t0).Obj()
	cases := map[string]struct {
		err          error
		wantErr      bool
		wantRequeue  bool
		wantEventPfx string
	}{
		"conflict: retried quietly": {
			err:         apierrors.NewConflict(schema.GroupResource{Group: clusterv1alpha1.GroupName, Resource: "clusters"}, "m1", errors.New("changed")),
			wantRequeue: true,
		},
		"other error: event and error": {
			err:          errors.New("boom"),
			wantErr:      true,
			wantEventPfx: "Warning TaintClusterFailed ClusterTaintPolicy p could not update the taints (added cluster.karmada.io/not-ready:NoExecute): boom",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := newFakeClient(t).WithObjects(cluster, policy).WithInterceptorFuncs(interceptor.Funcs{
				Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
					return tc.err
				},
			}).Build()
			rec := events.NewFakeRecorder(10)
			r := &TaintPolicyReconciler{Client: c, Recorder: rec, Clock: clocktesting.NewFakePassiveClock(t0)}
			res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "m1"}})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %t", err, tc.wantErr)
			}
			if (res.RequeueAfter > 0) != tc.wantRequeue {
				t.Errorf("requeueAfter = %s, want requeue %t", res.RequeueAfter, tc.wantRequeue)
			}
			var gotEvent string
			select {
			case gotEvent = <-rec.Events:
			default:
			}
			if gotEvent != tc.wantEventPfx {
				t.Errorf("event = %q, want %q", gotEvent, tc.wantEventPfx)
			}
		})
	}
}

func TestClustersOfPolicy(t *testing.T) {
	m1 := makeCluster("m1").Obj()
	m2 := makeCluster("m2").Obj()
	m2.Labels = map[string]string{"tier": "prod"}
	m3 := makeCluster("m3").Obj()
	c := newFakeClient(t).WithObjects(m1, m2, m3).Build()
	r := &TaintPolicyReconciler{Client: c}
	cases := map[string]struct {
		targets *policyv1alpha1.ClusterAffinity
		want    []string
	}{
		"nil targets every cluster": {want: []string{"m1", "m2", "m3"}},
		"by name":                   {targets: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m3"}}, want: []string{"m3"}},
		"by label":                  {targets: &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}}}, want: []string{"m2"}},
		"exclude":                   {targets: &policyv1alpha1.ClusterAffinity{Exclude: []string{"m1", "m3"}}, want: []string{"m2"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := makePolicy("p", t0).Obj()
			p.Spec.TargetClusters = tc.targets
			var got []string
			for _, req := range r.clustersOfPolicy(context.Background(), p) {
				got = append(got, req.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("clusters (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTaintPolicySetupWithManager(t *testing.T) {
	mgr, err := ctrl.NewManager(&rest.Config{Host: "http://127.0.0.1:1"}, ctrl.Options{Scheme: testScheme(t), Metrics: metricsserver.Options{BindAddress: "0"}, Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	r := &TaintPolicyReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("cluster-taint-policy-controller"), Clock: clocktesting.NewFakePassiveClock(t0), ConcurrentSyncs: 2}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
}

func TestTaintPolicySetupRespectsGate(t *testing.T) {
	gates := features.New()
	if err := gates.SetFromMap(map[string]bool{string(features.Failover): false}); err != nil {
		t.Fatal(err)
	}
	// With the gate off SetupWithManager must not touch the manager at all.
	r := &TaintPolicyReconciler{Gates: gates}
	if err := r.SetupWithManager(nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(describeTaintChange(policyTaintChange{added: []corev1.Taint{notReadyNE}}), "added cluster.karmada.io/not-ready:NoExecute") {
		t.Error("describeTaintChange does not name the added taint")
	}
}

// The default policy `lifeboat up` installs parses and does what its
// comment says.
func TestDefaultClusterTaintPolicySample(t *testing.T) {
	raw, err := os.ReadFile("../../config/samples/default-clustertaintpolicy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var p policyv1alpha1.ClusterTaintPolicy
	if err := yaml.UnmarshalStrict(raw, &p); err != nil {
		t.Fatal(err)
	}
	if p.Kind != "ClusterTaintPolicy" || p.APIVersion != policyv1alpha1.SchemeGroupVersion.String() {
		t.Errorf("kind %q apiVersion %q", p.Kind, p.APIVersion)
	}
	now := t0.Add(time.Hour)
	cases := map[string]struct {
		cluster *clusterv1alpha1.Cluster
		want    []corev1.Taint
	}{
		"Ready False: tainted":   {cluster: makeCluster("m1").Ready(metav1.ConditionFalse, "", t0).Obj(), want: []corev1.Taint{taintAt(notReadyNE.Key, "", notReadyNE.Effect, now)}},
		"Ready Unknown: tainted": {cluster: makeCluster("m1").Ready(metav1.ConditionUnknown, "", t0).Obj(), want: []corev1.Taint{taintAt(notReadyNE.Key, "", notReadyNE.Effect, now)}},
		"Ready True: removed":    {cluster: makeCluster("m1").Ready(metav1.ConditionTrue, "", t0).Taints(taintAt(notReadyNE.Key, "", notReadyNE.Effect, t0)).Obj()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, _ := applyTaintPolicies(tc.cluster, []policyv1alpha1.ClusterTaintPolicy{p}, now)
			if diff := cmp.Diff(tc.want, got, ignoreTimeLocation); diff != "" {
				t.Errorf("taints (-want +got):\n%s", diff)
			}
		})
	}
}
