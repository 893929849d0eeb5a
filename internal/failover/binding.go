package failover

import (
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// bindingKind is what differs between ResourceBinding and
// ClusterResourceBinding for the engine: the object type and the name of
// the application-failover producer. Everything else works on the shared
// ResourceBindingSpec and ResourceBindingStatus.
type bindingKind struct {
	// name is the kind, for logs and controller names.
	name string
	// short names the controllers: "rb" or "crb".
	short string
	// appFailoverProducer is GracefulEvictionTask.Producer for application
	// failover.
	appFailoverProducer string
	newObject           func() client.Object
}

var (
	resourceBindingKind = bindingKind{
		name:                "ResourceBinding",
		short:               "rb",
		appFailoverProducer: workv1alpha2.EvictionProducerRBApplicationFailover,
		newObject:           func() client.Object { return &workv1alpha2.ResourceBinding{} },
	}
	clusterResourceBindingKind = bindingKind{
		name:                "ClusterResourceBinding",
		short:               "crb",
		appFailoverProducer: workv1alpha2.EvictionProducerCRBApplicationFailover,
		newObject:           func() client.Object { return &workv1alpha2.ClusterResourceBinding{} },
	}
	bindingKinds = []bindingKind{resourceBindingKind, clusterResourceBindingKind}
)

// parts returns pointers into obj's spec and status; writes through them
// change obj.
func parts(obj client.Object) (*workv1alpha2.ResourceBindingSpec, *workv1alpha2.ResourceBindingStatus, error) {
	switch b := obj.(type) {
	case *workv1alpha2.ResourceBinding:
		return &b.Spec, &b.Status, nil
	case *workv1alpha2.ClusterResourceBinding:
		return &b.Spec, &b.Status, nil
	default:
		return nil, nil, fmt.Errorf("not a binding: %T", obj)
	}
}

// mustParts is parts for objects made by bindingKind.newObject.
func mustParts(obj client.Object) (*workv1alpha2.ResourceBindingSpec, *workv1alpha2.ResourceBindingStatus) {
	spec, status, err := parts(obj)
	if err != nil {
		panic(err)
	}
	return spec, status
}

// conflictRetry is when a reconcile that lost a write race runs again. The
// newer object's watch event usually triggers it sooner.
const conflictRetry = time.Second
