package localenv

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// kwokStages teach kwok how nodes and pods behave in a member: nodes become
// Ready, pods become Running and Ready, Job pods complete, and pods whose image
// is under the registry "fake/" never start (ErrImagePull), so an
// OverridePolicy that rewrites the registry makes an application unhealthy in
// exactly one member, as in the stateful-failover demo.
//
//go:embed kwok-stages.yaml
var kwokStages []byte

// kwokNodeAnnotation marks the nodes kwok manages.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// NodeName is the name of member's single node, as in the seeds' walkthroughs
// (`kubectl --context member2 cordon member2-control-plane`).
func NodeName(member string) string { return member + "-control-plane" }

// prepareMember creates the member's node and waits until it is Ready and the
// default ServiceAccount exists (pods cannot be created before it does).
func prepareMember(ctx context.Context, s *State, c ClusterInfo) error {
	cfg, err := s.RESTConfig(c.Name)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	// Room for every benchmark: the largest pins 5,000 single-replica
	// Deployments to one member, and its failover moves them to the
	// others.
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("10000"),
	}
	name := NodeName(c.Name)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{kwokNodeAnnotation: "fake"},
			Labels: map[string]string{
				"kubernetes.io/hostname":                name,
				"kubernetes.io/os":                      "linux",
				"kubernetes.io/arch":                    "amd64",
				"node-role.kubernetes.io/control-plane": "",
				"type":                                  "kwok",
			},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating node %s: %w", name, err)
	}
	var seen string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			seen = err.Error()
			return false, nil
		}
		ready := false
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		if !ready {
			seen = "node not Ready yet"
			return false, nil
		}
		// Admission taints a new node node.kubernetes.io/not-ready; the
		// node-lifecycle controller would lift it, but members do not run
		// that controller (kwok owns the node), so lift it here once.
		if len(n.Spec.Taints) > 0 {
			n.Spec.Taints = nil
			if _, err := cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
				seen = "removing node taints: " + err.Error()
			}
			return false, nil
		}
		if _, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
			seen = "default ServiceAccount: " + err.Error()
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("member %s not ready: %s: %w", c.Name, seen, err)
	}
	return nil
}
