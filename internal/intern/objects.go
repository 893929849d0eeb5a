package intern

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// Transform is a cache transform for the controller manager's typed
// objects (cache.Options.DefaultTransform): it drops managedFields, as
// cache.TransformStripManagedFields does, and interns the metadata of
// every typed object and the shared fields of bindings and Works, the
// kinds there are thousands of. It modifies and returns obj.
func Transform(obj any) (any, error) {
	obj, err := cache.TransformStripManagedFields()(obj)
	if err != nil {
		return nil, err
	}
	switch o := obj.(type) {
	case *workv1alpha2.ResourceBinding:
		Meta(&o.ObjectMeta)
		bindingSpec(&o.Spec)
		bindingStatus(&o.Status)
	case *workv1alpha2.ClusterResourceBinding:
		Meta(&o.ObjectMeta)
		bindingSpec(&o.Spec)
		bindingStatus(&o.Status)
	case *workv1alpha1.Work:
		Meta(&o.ObjectMeta)
		work(o)
	case metav1.ObjectMetaAccessor:
		if m, ok := o.GetObjectMeta().(*metav1.ObjectMeta); ok {
			Meta(m)
		}
	}
	return obj, nil
}

func bindingSpec(s *workv1alpha2.ResourceBindingSpec) {
	r := &s.Resource
	r.APIVersion = String(r.APIVersion)
	r.Kind = String(r.Kind)
	r.Namespace = String(r.Namespace)
	for i := range s.Clusters {
		s.Clusters[i].Name = String(s.Clusters[i].Name)
	}
	if s.Placement != nil {
		placement(s.Placement)
	}
	for i := range s.GracefulEvictionTasks {
		t := &s.GracefulEvictionTasks[i]
		t.FromCluster = String(t.FromCluster)
		t.PurgeMode = policyv1alpha1.PurgeMode(String(string(t.PurgeMode)))
		t.Reason = String(t.Reason)
		t.Message = String(t.Message)
		t.Producer = String(t.Producer)
		t.PreservedLabelState = Map(t.PreservedLabelState)
	}
	s.SchedulerName = String(s.SchedulerName)
	s.ConflictResolution = policyv1alpha1.ConflictResolution(String(string(s.ConflictResolution)))
}

func placement(p *policyv1alpha1.Placement) {
	if a := p.ClusterAffinity; a != nil {
		Slice(a.ClusterNames)
		Slice(a.Exclude)
	}
	for i := range p.ClusterAffinities {
		t := &p.ClusterAffinities[i]
		t.AffinityName = String(t.AffinityName)
		Slice(t.ClusterNames)
		Slice(t.Exclude)
	}
	for i := range p.SpreadConstraints {
		c := &p.SpreadConstraints[i]
		c.SpreadByField = policyv1alpha1.SpreadFieldValue(String(string(c.SpreadByField)))
		c.SpreadByLabel = String(c.SpreadByLabel)
	}
}

func bindingStatus(s *workv1alpha2.ResourceBindingStatus) {
	s.SchedulerObservedAffinityName = String(s.SchedulerObservedAffinityName)
	Conditions(s.Conditions)
	for i := range s.AggregatedStatus {
		a := &s.AggregatedStatus[i]
		a.ClusterName = String(a.ClusterName)
		a.AppliedMessage = String(a.AppliedMessage)
		a.Health = workv1alpha2.ResourceHealth(String(string(a.Health)))
	}
}

func work(w *workv1alpha1.Work) {
	Conditions(w.Status.Conditions)
	for i := range w.Status.ManifestStatuses {
		m := &w.Status.ManifestStatuses[i]
		id := &m.Identifier
		id.Group = String(id.Group)
		id.Version = String(id.Version)
		id.Kind = String(id.Kind)
		id.Resource = String(id.Resource)
		id.Namespace = String(id.Namespace)
		m.Health = workv1alpha1.ResourceHealth(String(string(m.Health)))
	}
}
