package policysim

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/clienttest"
	"github.com/lifeboat-dev/lifeboat/internal/scheduler/schedtesting"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

const ns = "app"

func deploy(name string, replicas int32, labels map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, UID: types.UID(name + "-uid"), ResourceVersion: "7"},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(replicas)},
	}
}

// claimedBy puts a PropagationPolicy claim on d.
func claimedBy(d *appsv1.Deployment, policy, id string) *appsv1.Deployment {
	if d.Labels == nil {
		d.Labels = map[string]string{}
	}
	d.Labels[policyv1alpha1.PropagationPolicyPermanentIDLabel] = id
	d.Annotations = map[string]string{
		policyv1alpha1.PropagationPolicyNamespaceAnnotation: ns,
		policyv1alpha1.PropagationPolicyNameAnnotation:      policy,
	}
	return d
}

func policy(name string, placement *policyv1alpha1.Placement, selectors ...policyv1alpha1.ResourceSelector) *policyv1alpha1.PropagationPolicy {
	return &policyv1alpha1.PropagationPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: policyv1alpha1.SchemeGroupVersion.String(), Kind: "PropagationPolicy"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       policyv1alpha1.PropagationSpec{ResourceSelectors: selectors, Placement: *placement},
	}
}

func withID(p *policyv1alpha1.PropagationPolicy, id string) *policyv1alpha1.PropagationPolicy {
	p.Labels = map[string]string{policyv1alpha1.PropagationPolicyPermanentIDLabel: id}
	return p
}

func named(name string) policyv1alpha1.ResourceSelector {
	return policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: name}
}

func allDeployments() policyv1alpha1.ResourceSelector {
	return policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment"}
}

// discoveryFake serves Deployments and ConfigMaps.
func discoveryFake() *fakediscovery.FakeDiscovery {
	verbs := metav1.Verbs{"get", "list", "watch", "create", "update", "patch", "delete"}
	return &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: verbs}}},
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: verbs}}},
	}}}
}

// controlPlane is a fake control plane that answers dry-run creates of
// existing objects with AlreadyExists, as the API server does, refuses
// the policies reject says are invalid, and fails the test on any real
// write.
func controlPlane(t *testing.T, reject string, objs ...client.Object) client.Client {
	t.Helper()
	scheme, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	writes := clienttest.CountWrites(func(verb string, obj client.Object) {
		t.Errorf("Predict wrote: %s %T %s", verb, obj, obj.GetName())
	})
	funcs := writes
	funcs.Create = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		o := &client.CreateOptions{}
		o.ApplyOptions(opts)
		if !slices.Contains(o.DryRun, metav1.DryRunAll) {
			return writes.Create(ctx, c, obj, opts...)
		}
		if obj.GetName() == reject {
			return invalid(obj)
		}
		existing := obj.DeepCopyObject().(client.Object)
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), existing); err == nil {
			return apierrors.NewAlreadyExists(schema.GroupResource{Group: "policy.karmada.io", Resource: "propagationpolicies"}, obj.GetName())
		}
		return nil
	}
	funcs.Update = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
		o := &client.UpdateOptions{}
		o.ApplyOptions(opts)
		if !slices.Contains(o.DryRun, metav1.DryRunAll) {
			return writes.Update(ctx, c, obj, opts...)
		}
		if obj.GetName() == reject {
			return invalid(obj)
		}
		return nil
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithInterceptorFuncs(interceptor.Funcs(funcs)).Build()
}

func invalid(obj client.Object) error {
	return apierrors.NewInvalid(schema.GroupKind{Group: "policy.karmada.io", Kind: "PropagationPolicy"}, obj.GetName(), field.ErrorList{
		field.NotSupported(field.NewPath("spec", "placement", "replicaScheduling", "replicaSchedulingType"), "Sideways", []string{"Duplicated", "Divided"}),
	})
}

func members() []client.Object {
	return []client.Object{
		schedtesting.MakeCluster("member1").Obj(),
		schedtesting.MakeCluster("member2").Obj(),
	}
}

func predict(t *testing.T, c client.Client, p client.Object) *Prediction {
	t.Helper()
	pred, err := Predict(context.Background(), Inputs{Client: c, Discovery: discoveryFake(), Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	return pred
}

func resultFor(t *testing.T, p *Prediction, name string) TemplateResult {
	t.Helper()
	for _, r := range p.Templates {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no prediction for %s in %+v", name, p.Templates)
	return TemplateResult{}
}

func TestPredictNewPolicy(t *testing.T) {
	weighted := schedtesting.MakePlacement().ClusterNames("member1", "member2").StaticWeights(map[string]int64{"member1": 2, "member2": 1}).Obj()
	cases := map[string]struct {
		policy       *policyv1alpha1.PropagationPolicy
		objs         []client.Object
		template     string
		wantOutcome  Outcome
		wantClusters []ClusterReplicas
		wantMessage  string
	}{
		"static weights divide the replicas": {
			policy:       policy("web", weighted, named("web")),
			objs:         []client.Object{deploy("web", 3, nil)},
			template:     "web",
			wantOutcome:  OutcomeScheduled,
			wantClusters: []ClusterReplicas{{Name: "member1", Replicas: 2}, {Name: "member2", Replicas: 1}},
		},
		"duplicated on the named cluster": {
			policy:       policy("pin", schedtesting.MakePlacement().ClusterNames("member2").Obj(), named("pinned")),
			objs:         []client.Object{deploy("pinned", 2, nil)},
			template:     "pinned",
			wantOutcome:  OutcomeScheduled,
			wantClusters: []ClusterReplicas{{Name: "member2", Replicas: 2}},
		},
		"a label selector": {
			policy: policy("lbl", schedtesting.MakePlacement().ClusterNames("member1").Obj(), policyv1alpha1.ResourceSelector{
				APIVersion: "apps/v1", Kind: "Deployment", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "front"}},
			}),
			objs:         []client.Object{deploy("front", 1, map[string]string{"tier": "front"})},
			template:     "front",
			wantOutcome:  OutcomeScheduled,
			wantClusters: []ClusterReplicas{{Name: "member1", Replicas: 1}},
		},
		"an affinity that fits nowhere": {
			policy:      policy("nowhere", schedtesting.MakePlacement().LabelSelector(map[string]string{"region": "mars"}).Obj(), named("lost")),
			objs:        []client.Object{deploy("lost", 1, nil)},
			template:    "lost",
			wantOutcome: OutcomeUnschedulable,
			wantMessage: "0/2 clusters are available: 2 cluster(s) did not match the placement cluster affinity constraint.",
		},
		"a template another policy claims stays with it": {
			policy: policy("greedy", weighted, allDeployments()),
			objs: []client.Object{
				withID(policy("owner", schedtesting.MakePlacement().ClusterNames("member1").Obj(), named("owned")), "owner-id"),
				claimedBy(deploy("owned", 1, nil), "owner", "owner-id"),
			},
			template:    "owned",
			wantOutcome: OutcomeOtherPolicy,
			wantMessage: "stays with PropagationPolicy app/owner",
		},
		"a template another policy claims at another version stays with it": {
			policy: policy("greedy", weighted, allDeployments()),
			objs: []client.Object{
				withID(policy("owner", schedtesting.MakePlacement().ClusterNames("member1").Obj(),
					policyv1alpha1.ResourceSelector{APIVersion: "apps/v1beta2", Kind: "Deployment", Name: "owned"}), "owner-id"),
				claimedBy(deploy("owned", 1, nil), "owner", "owner-id"),
			},
			template:    "owned",
			wantOutcome: OutcomeOtherPolicy,
			wantMessage: "stays with PropagationPolicy app/owner, which selects it at another version",
		},
		"a stale claim does not hold": {
			policy:       policy("greedy", weighted, allDeployments()),
			objs:         []client.Object{claimedBy(deploy("orphan", 3, nil), "gone", "gone-id")},
			template:     "orphan",
			wantOutcome:  OutcomeScheduled,
			wantClusters: []ClusterReplicas{{Name: "member1", Replicas: 2}, {Name: "member2", Replicas: 1}},
		},
		"a policy of higher priority wins an unclaimed template": {
			policy: policy("low", weighted, allDeployments()),
			objs: []client.Object{
				func() client.Object {
					p := withID(policy("high", schedtesting.MakePlacement().ClusterNames("member1").Obj(), allDeployments()), "high-id")
					p.Spec.Priority = ptr.To[int32](5)
					return p
				}(),
				deploy("fresh", 1, nil),
			},
			template:    "fresh",
			wantOutcome: OutcomeOtherPolicy,
			wantMessage: "goes to PropagationPolicy app/high",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := controlPlane(t, "", append(members(), tc.objs...)...)
			pred := predict(t, c, tc.policy)
			if pred.Existing {
				t.Error("a new policy predicted as a change")
			}
			got := resultFor(t, pred, tc.template)
			if got.Outcome != tc.wantOutcome {
				t.Fatalf("outcome = %s (%s), want %s", got.Outcome, got.Message, tc.wantOutcome)
			}
			if !slices.Equal(got.Clusters, tc.wantClusters) {
				t.Errorf("clusters = %v, want %v", got.Clusters, tc.wantClusters)
			}
			if !strings.Contains(got.Message, tc.wantMessage) {
				t.Errorf("message = %q, want it to contain %q", got.Message, tc.wantMessage)
			}
			if got.Binding != tc.template+"-deployment" || got.APIVersion != "apps/v1" || got.Kind != "Deployment" || got.Namespace != ns {
				t.Errorf("template identity = %+v", got)
			}
		})
	}
}

func TestPredictChangeOfExistingPolicy(t *testing.T) {
	onMember1 := func() *policyv1alpha1.Placement {
		return schedtesting.MakePlacement().ClusterNames("member1").StaticWeights(map[string]int64{"member1": 1}).Obj()
	}
	old := withID(policy("web", onMember1(), named("web"), named("cache")), "web-id")
	placement, _ := json.Marshal(old.Spec.Placement)
	scheduled := func(name string) *workv1alpha2.ResourceBinding {
		b := schedtesting.MakeBinding(ns, name).Replicas(2).Placement(old.Spec.Placement.DeepCopy()).Cluster("member1", 2).
			Annotation(workv1alpha2.AppliedPlacementAnnotation, string(placement)).Obj()
		b.Labels = map[string]string{policyv1alpha1.PropagationPolicyPermanentIDLabel: "web-id"}
		b.Annotations[policyv1alpha1.PropagationPolicyNamespaceAnnotation] = ns
		b.Annotations[policyv1alpha1.PropagationPolicyNameAnnotation] = "web"
		b.Status.Conditions = []metav1.Condition{{Type: workv1alpha2.Scheduled, Status: metav1.ConditionTrue, Reason: "Success", LastTransitionTime: metav1.Now()}}
		return b
	}
	objs := append(members(), old,
		claimedBy(deploy("web", 2, nil), "web", "web-id"), scheduled("web"),
		claimedBy(deploy("cache", 2, nil), "web", "web-id"), scheduled("cache"))

	t.Run("same placement, one selector dropped", func(t *testing.T) {
		changed := policy("web", onMember1(), named("web"))
		pred := predict(t, controlPlane(t, "", objs...), changed)
		if !pred.Existing {
			t.Error("the change of an existing policy predicted as a new one")
		}
		web := resultFor(t, pred, "web")
		if web.Outcome != OutcomeScheduled || !slices.Equal(web.Clusters, []ClusterReplicas{{Name: "member1", Replicas: 2}}) || len(web.Notes) == 0 {
			t.Errorf("web = %+v, want it kept on member1:2 with a note", web)
		}
		if cache := resultFor(t, pred, "cache"); cache.Outcome != OutcomeReleased {
			t.Errorf("cache = %+v, want Released", cache)
		}
	})
	t.Run("new placement", func(t *testing.T) {
		changed := policy("web", schedtesting.MakePlacement().ClusterNames("member2").Obj(), named("web"), named("cache"))
		pred := predict(t, controlPlane(t, "", objs...), changed)
		for _, name := range []string{"web", "cache"} {
			if got := resultFor(t, pred, name); got.Outcome != OutcomeScheduled || !slices.Equal(got.Clusters, []ClusterReplicas{{Name: "member2", Replicas: 2}}) {
				t.Errorf("%s = %+v, want member2:2", name, got)
			}
		}
	})
	t.Run("new placement that fits nowhere keeps the current one", func(t *testing.T) {
		changed := policy("web", schedtesting.MakePlacement().ClusterNames("member9").Obj(), named("web"))
		pred := predict(t, controlPlane(t, "", objs...), changed)
		web := resultFor(t, pred, "web")
		if web.Outcome != OutcomeUnschedulable || !slices.Equal(web.Clusters, []ClusterReplicas{{Name: "member1", Replicas: 2}}) {
			t.Errorf("web = %+v, want Unschedulable keeping member1:2", web)
		}
	})
}

func TestPredictReportsTheServersValidationError(t *testing.T) {
	c := controlPlane(t, "bad", members()...)
	_, err := Predict(context.Background(), Inputs{Client: c, Discovery: discoveryFake(), Policy: policy("bad", schedtesting.MakePlacement().Obj(), named("web"))})
	if err == nil || !strings.Contains(err.Error(), `Unsupported value: "Sideways"`) || !strings.Contains(err.Error(), "dry-run create") {
		t.Fatalf("error = %v, want the server's validation error", err)
	}
}

func TestPredictWarnsAboutUnservedKinds(t *testing.T) {
	p := policy("web", schedtesting.MakePlacement().ClusterNames("member1").Obj(), named("web"),
		policyv1alpha1.ResourceSelector{APIVersion: "example.io/v1", Kind: "Widget"})
	pred := predict(t, controlPlane(t, "", append(members(), deploy("web", 1, nil))...), p)
	if len(pred.Warnings) != 1 || !strings.Contains(pred.Warnings[0], "no kind Widget is served") {
		t.Errorf("warnings = %q", pred.Warnings)
	}
	if got := resultFor(t, pred, "web"); got.Outcome != OutcomeScheduled {
		t.Errorf("web = %+v", got)
	}
}

// A dry run the control plane answered is its rejection of the policy; one
// it never answered is not, and says the check could not be made.
func TestCheckFailed(t *testing.T) {
	rejected := checkFailed("PropagationPolicy default/web", "dry-run create",
		apierrors.NewInvalid(schema.GroupKind{Group: "policy.karmada.io", Kind: "PropagationPolicy"}, "web", nil))
	if !strings.HasPrefix(rejected.Error(), "the control plane rejects PropagationPolicy default/web (dry-run create)") {
		t.Errorf("a rejection: %v", rejected)
	}
	refused := checkFailed("PropagationPolicy default/web", "dry-run create",
		errors.New(`Post "https://127.0.0.1:1/apis": dial tcp 127.0.0.1:1: connect: connection refused`))
	if !strings.HasPrefix(refused.Error(), "could not ask the control plane to check PropagationPolicy default/web (dry-run create)") {
		t.Errorf("no answer: %v", refused)
	}
}
