package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// syncTimeout bounds the initial list of a watch.
const syncTimeout = time.Minute

// watchClusters feeds every Cluster of the control plane into tr until ctx
// ends.
func watchClusters(ctx context.Context, e *Env, tr *Tracker) error {
	return startWatch(ctx, e, e.ControlPlaneConfig, "", tr, map[client.Object]func(client.Object) (string, []string){
		&clusterv1alpha1.Cluster{}: func(o client.Object) (string, []string) {
			c := o.(*clusterv1alpha1.Cluster)
			return Key(SourceCluster, "", c.Name), ClusterMarks(c)
		},
	})
}

// watchNamespace feeds the control plane's Deployments and ResourceBindings
// in namespace, and every member's Deployments in it, into tr until ctx
// ends.
func watchNamespace(ctx context.Context, e *Env, tr *Tracker, namespace string) error {
	err := startWatch(ctx, e, e.ControlPlaneConfig, namespace, tr, map[client.Object]func(client.Object) (string, []string){
		&appsv1.Deployment{}: func(o client.Object) (string, []string) {
			return Key(SourceControlPlaneDeployment, o.GetNamespace(), o.GetName()), []string{MarkPresent}
		},
		// Bindings are keyed by the template they bind (spec.resource), so
		// that no binding naming scheme is assumed.
		&workv1alpha2.ResourceBinding{}: func(o client.Object) (string, []string) {
			rb := o.(*workv1alpha2.ResourceBinding)
			return Key(SourceBinding, o.GetNamespace(), rb.Spec.Resource.Kind+"/"+rb.Spec.Resource.Name), BindingMarks(rb)
		},
	})
	if err != nil {
		return fmt.Errorf("watching the control plane: %w", err)
	}
	for _, m := range e.Members {
		src := MemberSource(m)
		err := startWatch(ctx, e, e.MemberConfigs[m], namespace, tr, map[client.Object]func(client.Object) (string, []string){
			&appsv1.Deployment{}: func(o client.Object) (string, []string) {
				return Key(src, o.GetNamespace(), o.GetName()), DeploymentMarks(o.(*appsv1.Deployment))
			},
		})
		if err != nil {
			return fmt.Errorf("watching member %s: %w", m, err)
		}
	}
	return nil
}

// startWatch starts an informer cache on cfg (restricted to namespace
// unless it is ""), with one handler per object type that records the
// object's marks in tr at the moment the event arrives.
func startWatch(ctx context.Context, e *Env, cfg *rest.Config, namespace string, tr *Tracker,
	types map[client.Object]func(client.Object) (string, []string)) error {
	opts := cache.Options{Scheme: e.Scheme}
	if namespace != "" {
		opts.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	c, err := cache.New(cfg, opts)
	if err != nil {
		return fmt.Errorf("creating informer cache: %w", err)
	}
	for obj, marks := range types {
		inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("informer for %T: %w", obj, err)
		}
		observe := func(o any) {
			if co, ok := o.(client.Object); ok {
				key, m := marks(co)
				tr.Observe(key, m)
			}
		}
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { observe(o) },
			UpdateFunc: func(_, o any) { observe(o) },
			DeleteFunc: func(o any) {
				if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
					o = d.Obj
				}
				if co, ok := o.(client.Object); ok {
					key, _ := marks(co)
					tr.Gone(key)
				}
			},
		})
		if err != nil {
			return fmt.Errorf("handler for %T: %w", obj, err)
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- c.Start(ctx) }()
	syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if !c.WaitForCacheSync(syncCtx) {
		select {
		case err := <-errc:
			return fmt.Errorf("informers stopped: %w", err)
		default:
		}
		return errors.New("informers did not sync within " + syncTimeout.String())
	}
	return nil
}
