package flinkstandin

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// Operator keeps the status of the FlinkDeployments of one member cluster.
type Operator struct {
	// Client reaches the member cluster.
	Client dynamic.Interface
	// Namespaces says which namespaces to act in; every namespace when nil.
	Namespaces func(namespace string) bool
	// Clock gives new jobs their startTime; the real clock when nil.
	Clock clock.PassiveClock
	// NewJobID makes the ID of a new job; NewJobID when nil.
	NewJobID func() string
	// Log receives what the stand-in does; discarded when zero.
	Log logr.Logger
}

// Run starts a stand-in operator against the cluster of cfg and blocks
// until ctx ends. namespaces limits it as Operator.Namespaces does.
func Run(ctx context.Context, cfg *rest.Config, namespaces func(string) bool, log logr.Logger) error {
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("flink stand-in for %s: %w", cfg.Host, err)
	}
	return (&Operator{Client: c, Namespaces: namespaces, Log: log}).Run(ctx)
}

// Run watches FlinkDeployments and writes their status until ctx ends.
// The FlinkDeployment CRD may be installed after it starts: the informer
// retries its list until the resource is served.
func (o *Operator) Run(ctx context.Context) error {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.NewJobID == nil {
		o.NewJobID = NewJobID
	}
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName]())
	defer queue.ShutDown()

	factory := dynamicinformer.NewDynamicSharedInformerFactory(o.Client, 0)
	informer := factory.ForResource(GVR).Informer()
	enqueue := func(obj interface{}) {
		name, err := cache.DeletionHandlingObjectToName(obj)
		if err != nil || !o.watches(name.Namespace) {
			return
		}
		queue.Add(name)
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
	}); err != nil {
		return fmt.Errorf("flink stand-in: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return ctx.Err()
	}
	o.Log.Info("flink stand-in running")

	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	for {
		name, shutdown := queue.Get()
		if shutdown {
			return nil
		}
		err := o.syncKey(ctx, informer.GetIndexer(), name)
		switch {
		case err != nil && ctx.Err() == nil:
			o.Log.Info("flink stand-in: retrying", "flinkDeployment", name.String(), "error", err.Error())
			queue.AddRateLimited(name)
		default:
			queue.Forget(name)
		}
		queue.Done(name)
	}
}

func (o *Operator) watches(namespace string) bool {
	return o.Namespaces == nil || o.Namespaces(namespace)
}

func (o *Operator) syncKey(ctx context.Context, indexer cache.Indexer, name cache.ObjectName) error {
	item, exists, err := indexer.GetByKey(name.String())
	if err != nil || !exists {
		return err
	}
	obj, ok := item.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("unexpected %T in the informer", item)
	}
	return o.Sync(ctx, obj)
}

// Sync writes the status DesiredStatus gives obj, when it differs from
// the one obj has.
func (o *Operator) Sync(ctx context.Context, obj *unstructured.Unstructured) error {
	if obj.GetDeletionTimestamp() != nil {
		return nil
	}
	want := DesiredStatus(obj, o.Clock.Now(), o.NewJobID)
	// want holds JSON values only (strings, int64, maps), as the informer's
	// objects do, so a plain comparison finds an unchanged status.
	if equality.Semantic.DeepEqual(obj.Object["status"], want) {
		return nil
	}
	next := obj.DeepCopy()
	next.Object["status"] = want
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := o.Client.Resource(GVR).Namespace(obj.GetNamespace()).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("writing the status of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	job := want["jobStatus"].(map[string]interface{})
	o.Log.Info("flink stand-in: status written", "flinkDeployment", obj.GetNamespace()+"/"+obj.GetName(),
		"state", job["state"], "jobId", job["jobId"])
	return nil
}
