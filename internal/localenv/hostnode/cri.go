package hostnode

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RemovePods stops and removes every pod sandbox containerd runs, through
// its CRI service at socket, as the kubelet does when it deletes a pod: the
// containers end, and the CNI plugin takes down each pod's network
// namespace and gives its address back. It is called after the kubelet has
// stopped and before containerd does, so that no container outlives the
// node.
func RemovePods(ctx context.Context, socket string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return 0, fmt.Errorf("connecting to containerd at %s: %w", socket, err)
	}
	defer conn.Close()
	rt := criv1.NewRuntimeServiceClient(conn)
	list, err := rt.ListPodSandbox(ctx, &criv1.ListPodSandboxRequest{})
	if err != nil {
		return 0, fmt.Errorf("listing pod sandboxes: %w", err)
	}
	var errs []error
	for _, sb := range list.Items {
		if _, err := rt.StopPodSandbox(ctx, &criv1.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			errs = append(errs, fmt.Errorf("stopping pod %s/%s: %w", sb.GetMetadata().GetNamespace(), sb.GetMetadata().GetName(), err))
			continue
		}
		if _, err := rt.RemovePodSandbox(ctx, &criv1.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			errs = append(errs, fmt.Errorf("removing pod %s/%s: %w", sb.GetMetadata().GetNamespace(), sb.GetMetadata().GetName(), err))
		}
	}
	return len(list.Items), errors.Join(errs...)
}

// Images lists the image references containerd's CRI service knows.
func Images(ctx context.Context, socket string) ([]string, error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("connecting to containerd at %s: %w", socket, err)
	}
	defer conn.Close()
	list, err := criv1.NewImageServiceClient(conn).ListImages(ctx, &criv1.ListImagesRequest{})
	if err != nil {
		return nil, fmt.Errorf("listing images: %w", err)
	}
	var refs []string
	for _, img := range list.Images {
		refs = append(refs, img.RepoTags...)
	}
	return refs, nil
}
