package execution

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/membercluster"
	"github.com/lifeboat-dev/lifeboat/internal/packed"
)

func TestClusterOfNamespace(t *testing.T) {
	cases := map[string]struct {
		ns      string
		cluster string
		ok      bool
	}{
		"execution space":   {"karmada-es-member1", "member1", true},
		"bare prefix":       {"karmada-es-", "", false},
		"ordinary":          {"default", "", false},
		"prefix elsewhere":  {"x-karmada-es-member1", "", false},
		"dashes in cluster": {"karmada-es-eu-west-1", "eu-west-1", true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, ok := ClusterOfNamespace(tc.ns)
			if c != tc.cluster || ok != tc.ok {
				t.Errorf("ClusterOfNamespace(%q) = %q, %t", tc.ns, c, ok)
			}
		})
	}
}

func memberObj(labels, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap"}}
	u.SetNamespace("default")
	u.SetName("cm")
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	return u
}

func TestWorkOf(t *testing.T) {
	managed := map[string]string{membercluster.ManagedLabel: "true"}
	points := func(ns, name string) map[string]string {
		return map[string]string{workv1alpha1.WorkNamespaceAnnotation: ns, workv1alpha1.WorkNameAnnotation: name}
	}
	cases := map[string]struct {
		obj  *unstructured.Unstructured
		want types.NamespacedName
		ok   bool
	}{
		"managed and annotated": {memberObj(managed, points("karmada-es-member1", "cm-abc")), types.NamespacedName{Namespace: "karmada-es-member1", Name: "cm-abc"}, true},
		"not managed":           {memberObj(nil, points("karmada-es-member1", "cm-abc")), types.NamespacedName{}, false},
		"no annotations":        {memberObj(managed, nil), types.NamespacedName{}, false},
		"another cluster":       {memberObj(managed, points("karmada-es-member2", "cm-abc")), types.NamespacedName{}, false},
		"no work name":          {memberObj(managed, points("karmada-es-member1", "")), types.NamespacedName{}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := WorkOf("member1", tc.obj)
			if got != tc.want || ok != tc.ok {
				t.Errorf("WorkOf = %v, %t; want %v, %t", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestDesiredObject(t *testing.T) {
	work := MakeWork("nginx", "member1").
		Generation(7).
		UID("work-uid").
		Label(workv1alpha1.WorkPermanentIDLabel, "work-id").
		Label("resourcebinding.karmada.io/permanent-id", "rb-id").
		Annotation(workv1alpha1.ResourceConflictResolutionAnnotation, "overwrite").Obj()
	manifest := deployment("nginx", 2)
	manifest.SetResourceVersion("42")
	manifest.SetUID("uid")
	manifest.SetLabels(map[string]string{"app": "nginx", "resourcebinding.karmada.io/permanent-id": "from-manifest"})
	_ = unstructured.SetNestedField(manifest.Object, int64(2), "status", "replicas")

	got := DesiredObject(manifest, work)

	if got.GetResourceVersion() != "" || got.GetUID() != "" {
		t.Error("server-owned metadata must be dropped")
	}
	if _, ok := got.Object["status"]; ok {
		t.Error("status must be dropped")
	}
	wantLabels := map[string]string{
		"app": "nginx", membercluster.ManagedLabel: "true", workv1alpha1.WorkPermanentIDLabel: "work-id",
		"resourcebinding.karmada.io/permanent-id": "from-manifest",
	}
	if fmt.Sprint(got.GetLabels()) != fmt.Sprint(wantLabels) {
		t.Errorf("labels = %v, want %v", got.GetLabels(), wantLabels)
	}
	ann := got.GetAnnotations()
	if ann[workv1alpha1.WorkNamespaceAnnotation] != "karmada-es-member1" || ann[workv1alpha1.WorkNameAnnotation] != "nginx" {
		t.Errorf("work back-reference annotations = %v", ann)
	}
	if ann[workv1alpha1.ResourceConflictResolutionAnnotation] != "overwrite" {
		t.Errorf("conflict resolution must be copied from the Work: %v", ann)
	}
	if ann[workv1alpha1.WorkGenerationAnnotation] != strconv.FormatInt(work.Generation, 10) {
		t.Errorf("the Work's generation %d must be stamped on the member object: %v", work.Generation, ann)
	}
	if ann[workv1alpha1.WorkUIDAnnotation] != string(work.UID) {
		t.Errorf("the Work's UID %q must be stamped on the member object: %v", work.UID, ann)
	}
	if manifest.GetResourceVersion() != "42" {
		t.Error("the manifest itself must not be modified")
	}

	// The manifest's own conflict resolution wins over the Work's.
	manifest.SetAnnotations(map[string]string{workv1alpha1.ResourceConflictResolutionAnnotation: "abort"})
	if v := DesiredObject(manifest, work).GetAnnotations()[workv1alpha1.ResourceConflictResolutionAnnotation]; v != "abort" {
		t.Errorf("conflict resolution = %q, want the manifest's abort", v)
	}
}

func TestCheckConflict(t *testing.T) {
	withResolution := func(v string) *unstructured.Unstructured {
		d := memberObj(map[string]string{membercluster.ManagedLabel: "true"}, nil)
		if v != "" {
			d.SetAnnotations(map[string]string{workv1alpha1.ResourceConflictResolutionAnnotation: v})
		}
		return d
	}
	unmanaged := memberObj(map[string]string{"team": "a"}, nil)
	managed := memberObj(map[string]string{membercluster.ManagedLabel: "true"}, nil)
	cases := map[string]struct {
		desired, observed *unstructured.Unstructured
		conflict          bool
	}{
		"absent object":                  {withResolution(""), nil, false},
		"managed object":                 {withResolution(""), managed, false},
		"unmanaged, no resolution":       {withResolution(""), unmanaged, true},
		"unmanaged, abort":               {withResolution("abort"), unmanaged, true},
		"unmanaged, overwrite":           {withResolution("overwrite"), unmanaged, false},
		"managed label with other value": {withResolution(""), memberObj(map[string]string{membercluster.ManagedLabel: "false"}, nil), true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := CheckConflict("member1", tc.desired, tc.observed)
			if IsConflict(err) != tc.conflict {
				t.Fatalf("CheckConflict = %v, conflict want %t", err, tc.conflict)
			}
			if err != nil && !strings.Contains(err.Error(), "work.karmada.io/conflict-resolution: overwrite") {
				t.Errorf("message must say how to take the object over: %s", err)
			}
		})
	}
}

func obj(js string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(js), &u.Object); err != nil {
		panic(err)
	}
	return u
}

func TestUpToDate(t *testing.T) {
	desired := `{"metadata":{"name":"a","labels":{"x":"1"}},"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`
	cases := map[string]struct {
		desired, observed string
		want              bool
	}{
		"identical": {desired, desired, true},
		"observed has defaults, status and extra labels": {desired,
			`{"metadata":{"name":"a","uid":"u","labels":{"x":"1","y":"2"}},"spec":{"replicas":2,"strategy":{"type":"RollingUpdate"},"template":{"spec":{"containers":[{"name":"c","image":"nginx","imagePullPolicy":"Always"}]}}},"status":{"replicas":2}}`, true},
		"spec drifted":                        {desired, `{"metadata":{"name":"a","labels":{"x":"1"}},"spec":{"replicas":5,"template":{"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`, false},
		"label removed":                       {desired, `{"metadata":{"name":"a"},"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`, false},
		"extra container":                     {desired, `{"metadata":{"name":"a","labels":{"x":"1"}},"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"c","image":"nginx"},{"name":"d"}]}}}}`, false},
		"image changed":                       {desired, `{"metadata":{"name":"a","labels":{"x":"1"}},"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"c","image":"httpd"}]}}}}`, false},
		"int versus float":                    {`{"spec":{"replicas":2}}`, `{"spec":{"replicas":2.0}}`, true},
		"empty map desired, absent observed":  {`{"spec":{"resources":{}}}`, `{"spec":{}}`, true},
		"empty list desired, absent observed": {`{"spec":{"args":[]}}`, `{"spec":{}}`, true},
		"null desired":                        {`{"spec":{"x":null}}`, `{"spec":{}}`, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := UpToDate(obj(tc.desired), obj(tc.observed)); got != tc.want {
				t.Errorf("UpToDate = %t, want %t", got, tc.want)
			}
		})
	}
	if UpToDate(obj(desired), nil) {
		t.Error("an absent object is never up to date")
	}
}

// An unreachable member is said without what changes from one retry to
// the next; other errors are said whole.
func TestConditionError(t *testing.T) {
	unreachable := func(retry time.Duration, err string) error {
		return fmt.Errorf("manifest 0: %w", &membercluster.UnreachableError{Cluster: "member1", RetryAfter: retry, Err: errors.New(err)})
	}
	a := conditionError(unreachable(30*time.Second, `Delete "https://127.0.0.1:1/apis/apps/v1/namespaces/a/deployments/x": connection refused`))
	b := conditionError(unreachable(3*time.Second, `Get "https://127.0.0.1:1/apis/apps/v1/namespaces/b/deployments/y": i/o timeout`))
	if a != b || a != "member cluster member1 is unreachable" {
		t.Errorf("two retries against the same unreachable member say %q and %q, want both %q", a, b, "member cluster member1 is unreachable")
	}
	if got := conditionError(errors.New(`deployments.apps "x" is forbidden`)); got != `deployments.apps "x" is forbidden` {
		t.Errorf("another error: %q", got)
	}
	if got := conditionError(nil); got != "<nil>" {
		t.Errorf("nil: %q", got)
	}
}

func TestAppliedCondition(t *testing.T) {
	unreachable := &membercluster.UnreachableError{Cluster: "member1", Err: errors.New("refused")}
	cases := map[string]struct {
		results    []Result
		status     metav1.ConditionStatus
		reason     string
		msgContain string
	}{
		"all applied":         {[]Result{{Ordinal: 0, Outcome: OutcomeApplied}, {Ordinal: 1, Outcome: OutcomeUpToDate}}, metav1.ConditionTrue, ReasonAppliedSuccessful, "successfully applied"},
		"no manifests":        {nil, metav1.ConditionTrue, ReasonAppliedSuccessful, ""},
		"one failed":          {[]Result{{Ordinal: 0, Outcome: OutcomeApplied}, {Ordinal: 1, Outcome: OutcomeFailed, Err: errors.New("invalid")}}, metav1.ConditionFalse, ReasonAppliedFailed, "(1/2): manifest 1: invalid"},
		"conflict":            {[]Result{{Ordinal: 0, Outcome: OutcomeConflict, Err: &ConflictError{Kind: "ConfigMap", Namespace: "ns", Name: "cm", Cluster: "member1"}}}, metav1.ConditionFalse, ReasonResourceConflict, "not managed by Lifeboat"},
		"unreachable wins":    {[]Result{{Ordinal: 0, Outcome: OutcomeConflict, Err: errors.New("c")}, {Ordinal: 1, Outcome: OutcomeUnreachable, Err: unreachable}}, metav1.ConditionFalse, ReasonClusterUnreachable, "unreachable"},
		"conflict over error": {[]Result{{Ordinal: 0, Outcome: OutcomeFailed, Err: errors.New("x")}, {Ordinal: 1, Outcome: OutcomeConflict, Err: errors.New("c")}}, metav1.ConditionFalse, ReasonResourceConflict, "(0/2)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := AppliedCondition(tc.results, 3)
			if c.Type != workv1alpha1.WorkApplied || c.Status != tc.status || c.Reason != tc.reason || c.ObservedGeneration != 3 {
				t.Fatalf("condition = %+v", c)
			}
			if !strings.Contains(c.Message, tc.msgContain) {
				t.Errorf("message %q lacks %q", c.Message, tc.msgContain)
			}
		})
	}
}

func TestNeedsResync(t *testing.T) {
	base := obj(`{"metadata":{"name":"a","labels":{"x":"1"},"resourceVersion":"1"},"spec":{"replicas":2},"status":{"ready":1}}`)
	statusOnly := obj(`{"metadata":{"name":"a","labels":{"x":"1"},"resourceVersion":"2"},"spec":{"replicas":2},"status":{"ready":2}}`)
	specChanged := obj(`{"metadata":{"name":"a","labels":{"x":"1"},"resourceVersion":"2"},"spec":{"replicas":3},"status":{"ready":1}}`)
	labelChanged := obj(`{"metadata":{"name":"a","labels":{"x":"2"},"resourceVersion":"2"},"spec":{"replicas":2},"status":{"ready":1}}`)
	dataRemoved := obj(`{"metadata":{"name":"a","labels":{"x":"1"},"resourceVersion":"2"},"status":{"ready":1}}`)
	dataAdded := obj(`{"metadata":{"name":"a","labels":{"x":"1"},"resourceVersion":"2"},"spec":{"replicas":2},"data":{"k":"v"},"status":{"ready":1}}`)
	annotated := obj(`{"metadata":{"name":"a","labels":{"x":"1"},"annotations":{"y":"1"},"resourceVersion":"2"},"spec":{"replicas":2},"status":{"ready":1}}`)
	deleting := obj(`{"metadata":{"name":"a","labels":{"x":"1"},"resourceVersion":"2","deletionTimestamp":"2026-01-01T00:00:00Z"},"spec":{"replicas":2},"status":{"ready":1}}`)
	cases := map[string]struct {
		event membercluster.Event
		want  bool
	}{
		"added":            {membercluster.Event{Type: membercluster.Added, Object: pack(t, base)}, false},
		"deleted":          {membercluster.Event{Type: membercluster.Deleted, Object: pack(t, base)}, true},
		"status only":      {membercluster.Event{Type: membercluster.Updated, Old: pack(t, base), Object: pack(t, statusOnly)}, false},
		"spec changed":     {membercluster.Event{Type: membercluster.Updated, Old: pack(t, base), Object: pack(t, specChanged)}, true},
		"label changed":    {membercluster.Event{Type: membercluster.Updated, Old: pack(t, base), Object: pack(t, labelChanged)}, true},
		"annotation added": {membercluster.Event{Type: membercluster.Updated, Old: pack(t, base), Object: pack(t, annotated)}, true},
		"field removed":    {membercluster.Event{Type: membercluster.Updated, Old: pack(t, base), Object: pack(t, dataRemoved)}, true},
		"top field added":  {membercluster.Event{Type: membercluster.Updated, Old: pack(t, base), Object: pack(t, dataAdded)}, true},
		"deletion started": {membercluster.Event{Type: membercluster.Updated, Old: pack(t, base), Object: pack(t, deleting)}, true},
		"resync, no old":   {membercluster.Event{Type: membercluster.Updated, Object: pack(t, base)}, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := NeedsResync(tc.event); got != tc.want {
				t.Errorf("NeedsResync = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestStateOf(t *testing.T) {
	now := metav1.Now()
	ready := func(s metav1.ConditionStatus) *clusterv1alpha1.Cluster {
		return MakeCluster("m").Ready(s).Obj()
	}
	deleting := MakeCluster("m").Obj()
	deleting.DeletionTimestamp = &now
	pull := MakeCluster("m").Obj()
	pull.Spec.SyncMode = clusterv1alpha1.Pull
	cases := map[string]struct {
		cluster *clusterv1alpha1.Cluster
		want    ClusterState
	}{
		"missing":       {nil, ClusterGone},
		"being deleted": {deleting, ClusterGone},
		"pull mode":     {pull, ClusterPull},
		"no status yet": {MakeCluster("m").Obj(), ClusterUsable},
		"ready":         {ready(metav1.ConditionTrue), ClusterUsable},
		"not ready":     {ready(metav1.ConditionFalse), ClusterNotReady},
		"ready unknown": {ready(metav1.ConditionUnknown), ClusterNotReady},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := StateOf(tc.cluster); got != tc.want {
				t.Errorf("StateOf = %s, want %s", got, tc.want)
			}
		})
	}
}

// The control plane applies the Works of Push clusters and an agent those
// of its Pull cluster; neither touches the other's.
func TestApplies(t *testing.T) {
	now := metav1.Now()
	push := MakeCluster("m").Obj()
	pull := MakeCluster("m").Obj()
	pull.Spec.SyncMode = clusterv1alpha1.Pull
	deletingPull := pull.DeepCopy()
	deletingPull.DeletionTimestamp = &now
	deletingPush := push.DeepCopy()
	deletingPush.DeletionTimestamp = &now
	cases := map[string]struct {
		cluster           *clusterv1alpha1.Cluster
		controlPlane, agt bool
	}{
		"push":                   {push, true, false},
		"pull":                   {pull, false, true},
		"pull being deleted":     {deletingPull, false, true},
		"push being deleted":     {deletingPush, true, false},
		"missing: control plane": {nil, true, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Applies(tc.cluster, false); got != tc.controlPlane {
				t.Errorf("Applies(control plane) = %t, want %t", got, tc.controlPlane)
			}
			if got := Applies(tc.cluster, true); got != tc.agt {
				t.Errorf("Applies(agent) = %t, want %t", got, tc.agt)
			}
		})
	}
}

func TestReleasePatch(t *testing.T) {
	o := memberObj(
		map[string]string{membercluster.ManagedLabel: "true", workv1alpha1.WorkPermanentIDLabel: "id", "app": "x"},
		map[string]string{workv1alpha1.WorkNameAnnotation: "w", workv1alpha1.WorkUIDAnnotation: "u", "note": "keep"},
	)
	patch, ok := ReleasePatch(o)
	if !ok {
		t.Fatal("expected a patch")
	}
	want := `{"metadata":{"annotations":{"work.karmada.io/name":null,"work.lifeboat.dev/uid":null},"labels":{"karmada.io/managed":null,"work.karmada.io/permanent-id":null}}}`
	if string(patch) != want {
		t.Errorf("patch = %s\nwant    %s", patch, want)
	}
	if _, ok := ReleasePatch(memberObj(map[string]string{"app": "x"}, nil)); ok {
		t.Error("an object without Lifeboat keys needs no patch")
	}
	// A preserved namespace Lifeboat created is no longer Lifeboat's to
	// remove once empty.
	ns := NewCreatedNamespace("team-a")
	patch, ok = ReleasePatch(ns)
	want = `{"metadata":{"annotations":{"lifeboat.dev/created-namespace":null},"labels":{"karmada.io/managed":null}}}`
	if !ok || string(patch) != want {
		t.Errorf("namespace patch = %s\nwant            %s", patch, want)
	}
}

func TestCleanupOnDelete(t *testing.T) {
	now := metav1.Now()
	deleting := func(c *clusterv1alpha1.Cluster) *clusterv1alpha1.Cluster {
		c.DeletionTimestamp = &now
		return c
	}
	joinedAt := func(c *clusterv1alpha1.Cluster, at time.Time) *clusterv1alpha1.Cluster {
		c.CreationTimestamp = metav1.NewTime(at)
		return c
	}
	t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	madeAt := func(at time.Time) metav1.Object {
		return &metav1.ObjectMeta{Name: "w", CreationTimestamp: metav1.NewTime(at)}
	}
	unknown := &metav1.ObjectMeta{Name: "w"}
	cases := map[string]struct {
		cluster *clusterv1alpha1.Cluster
		work    metav1.Object
		want    bool
	}{
		"cluster gone":                      {nil, unknown, false},
		"cluster Ready":                     {MakeCluster("m").Ready(metav1.ConditionTrue).Obj(), unknown, true},
		"cluster not Ready (waits for it)":  {MakeCluster("m").Ready(metav1.ConditionFalse).Obj(), unknown, true},
		"cluster without Ready yet":         {MakeCluster("m").Obj(), unknown, true},
		"unjoined while Ready":              {deleting(MakeCluster("m").Ready(metav1.ConditionTrue).Obj()), unknown, true},
		"unjoined while not Ready":          {deleting(MakeCluster("m").Ready(metav1.ConditionFalse).Obj()), unknown, false},
		"unjoined while Unknown":            {deleting(MakeCluster("m").Ready(metav1.ConditionUnknown).Obj()), unknown, false},
		"unjoined before any probe":         {deleting(MakeCluster("m").Obj()), unknown, false},
		"Work made after its Cluster":       {joinedAt(MakeCluster("m").Ready(metav1.ConditionTrue).Obj(), t0), madeAt(t0.Add(time.Minute)), true},
		"Work made in its Cluster's second": {joinedAt(MakeCluster("m").Ready(metav1.ConditionTrue).Obj(), t0), madeAt(t0), true},
		"Work of an earlier Cluster of the name, joined again": {
			joinedAt(MakeCluster("m").Ready(metav1.ConditionTrue).Obj(), t0), madeAt(t0.Add(-time.Hour)), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := CleanupOnDelete(tc.cluster, tc.work); got != tc.want {
				t.Fatalf("CleanupOnDelete = %t, want %t", got, tc.want)
			}
		})
	}
}

// packed is the member object as the member cache holds it.
func pack(t *testing.T, u *unstructured.Unstructured) *packed.Object {
	t.Helper()
	o, err := packed.New(u)
	if err != nil {
		t.Fatal(err)
	}
	return o
}
