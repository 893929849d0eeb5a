package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/cluster"
)

var (
	// ErrPushCluster refuses a token for a cluster joined in Push mode.
	ErrPushCluster = errors.New("cluster is joined in Push mode")
	// ErrTokenNotFound is returned when no token has the given ID.
	ErrTokenNotFound = errors.New("no such bootstrap token")
)

// CheckClusterForPull decides whether a token may be made for the cluster
// name whose Cluster is existing (nil: none yet). A Push cluster is refused:
// an agent of the same name would fight the control plane's own
// connection.
func CheckClusterForPull(name string, existing *clusterv1alpha1.Cluster) error {
	switch {
	case existing == nil:
		return nil
	case existing.DeletionTimestamp != nil:
		return fmt.Errorf("cluster %s is being deleted; wait until it is gone, then create the token", name)
	case existing.Spec.SyncMode != clusterv1alpha1.Pull:
		return &pushClusterError{name: name, mode: existing.Spec.SyncMode}
	}
	return nil
}

// pushClusterError is ErrPushCluster for one cluster, worded for the user.
type pushClusterError struct {
	name string
	mode clusterv1alpha1.ClusterSyncMode
}

func (e *pushClusterError) Error() string {
	return fmt.Sprintf("cluster %s is joined in %s mode; unjoin it first or choose another name", e.name, e.mode)
}

func (e *pushClusterError) Is(target error) bool { return target == ErrPushCluster }

// TokenOptions describe a token to create.
type TokenOptions struct {
	// Cluster is the name of the Pull cluster the token registers.
	Cluster string
	// TTL is how long the token is accepted; it must be positive.
	TTL time.Duration
}

// CreatedToken is what CreateToken made.
type CreatedToken struct {
	Token   Token
	Expires time.Time
	// Changes are the objects created or updated for the agent, as
	// "Kind namespace/name created" or "... updated"; empty when all were
	// up to date.
	Changes []string
}

// CreateToken makes a bootstrap token for the agent of o.Cluster:
//  1. refuses a name that cannot be a cluster's, a TTL that is not
//     positive, and a Cluster of that name in Push mode;
//  2. ensures AgentObjects (EnsureAgentAccess), so that the agent has its
//     permissions before anyone can use the token;
//  3. creates the token's Secret (TokenSecret) in kube-system.
func CreateToken(ctx context.Context, c client.Client, o TokenOptions, now time.Time) (CreatedToken, error) {
	var res CreatedToken
	if err := ValidateTokenRequest(o.Cluster, o.TTL); err != nil {
		return res, err
	}
	existing, err := getCluster(ctx, c, o.Cluster)
	if err != nil {
		return res, err
	}
	if err := CheckClusterForPull(o.Cluster, existing); err != nil {
		return res, err
	}
	if res.Changes, err = EnsureAgentAccess(ctx, c, o.Cluster); err != nil {
		return res, err
	}
	// Two random IDs collide once in 36^6; a second draw settles it.
	for attempt := 0; ; attempt++ {
		tok, err := NewToken()
		if err != nil {
			return res, err
		}
		secret, err := TokenSecret(tok, o.Cluster, o.TTL, now)
		if err != nil {
			return res, err
		}
		err = c.Create(ctx, secret)
		if apierrors.IsAlreadyExists(err) && attempt == 0 {
			continue
		}
		if err != nil {
			return res, fmt.Errorf("creating bootstrap token Secret %s/%s: %w", secret.Namespace, secret.Name, err)
		}
		res.Token, res.Expires = tok, now.Add(o.TTL).UTC().Truncate(time.Second)
		return res, nil
	}
}

func getCluster(ctx context.Context, c client.Client, name string) (*clusterv1alpha1.Cluster, error) {
	var existing clusterv1alpha1.Cluster
	switch err := c.Get(ctx, client.ObjectKey{Name: name}, &existing); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading Cluster %s: %w", name, err)
	}
	return &existing, nil
}

// EnsureAgentAccess creates what AgentObjects lists for clusterName, or
// brings it up to date: a role's rules and a binding's subjects are set to
// the built ones (a binding whose role reference differs is replaced, as a
// role reference cannot change in place); a namespace, the Lease and the
// Cluster are only created when missing, never changed. Our labels are added
// to what exists. Running it again changes nothing. It returns what it
// created or updated.
func EnsureAgentAccess(ctx context.Context, c client.Client, clusterName string) ([]string, error) {
	if err := cluster.ValidateClusterName(clusterName); err != nil {
		return nil, err
	}
	var changes []string
	for _, want := range AgentObjects(clusterName) {
		action, err := ensureObject(ctx, c, want)
		if err != nil {
			return changes, fmt.Errorf("ensuring %s: %w", describe(want), err)
		}
		if action != "" {
			changes = append(changes, describe(want)+" "+action)
		}
	}
	return changes, nil
}

// describe names an object as "Kind name" or "Kind namespace/name".
func describe(o client.Object) string {
	kind := strings.TrimPrefix(fmt.Sprintf("%T", o), "*")
	if _, k, ok := strings.Cut(kind, "."); ok {
		kind = k
	}
	if o.GetNamespace() != "" {
		return kind + " " + o.GetNamespace() + "/" + o.GetName()
	}
	return kind + " " + o.GetName()
}

// ensureObject creates want, or updates the existing object as
// EnsureAgentAccess says; it returns "created", "updated", "replaced" or ""
// (nothing written).
func ensureObject(ctx context.Context, c client.Client, want client.Object) (string, error) {
	have := want.DeepCopyObject().(client.Object)
	err := c.Get(ctx, client.ObjectKeyFromObject(want), have)
	if apierrors.IsNotFound(err) {
		if err := c.Create(ctx, want.DeepCopyObject().(client.Object)); err != nil {
			return "", err
		}
		return "created", nil
	}
	if err != nil {
		return "", err
	}
	changed := addLabels(have, want.GetLabels())
	switch h := have.(type) {
	case *rbacv1.ClusterRole:
		w := want.(*rbacv1.ClusterRole)
		if !equality.Semantic.DeepEqual(h.Rules, w.Rules) {
			h.Rules, changed = w.Rules, true
		}
	case *rbacv1.Role:
		w := want.(*rbacv1.Role)
		if !equality.Semantic.DeepEqual(h.Rules, w.Rules) {
			h.Rules, changed = w.Rules, true
		}
	case *rbacv1.ClusterRoleBinding:
		w := want.(*rbacv1.ClusterRoleBinding)
		if h.RoleRef != w.RoleRef {
			return replace(ctx, c, have, want)
		}
		if !equality.Semantic.DeepEqual(h.Subjects, w.Subjects) {
			h.Subjects, changed = w.Subjects, true
		}
	case *rbacv1.RoleBinding:
		w := want.(*rbacv1.RoleBinding)
		if h.RoleRef != w.RoleRef {
			return replace(ctx, c, have, want)
		}
		if !equality.Semantic.DeepEqual(h.Subjects, w.Subjects) {
			h.Subjects, changed = w.Subjects, true
		}
	case *corev1.Namespace, *coordinationv1.Lease, *clusterv1alpha1.Cluster:
		// Created when missing, else someone else's (the cluster
		// controller's namespace, the agent's renewals, an existing Pull
		// Cluster): left as it is.
		return "", nil
	}
	if !changed {
		return "", nil
	}
	if err := c.Update(ctx, have); err != nil {
		return "", err
	}
	return "updated", nil
}

// addLabels adds want to o's labels; it says whether any was missing.
func addLabels(o client.Object, want map[string]string) bool {
	l := o.GetLabels()
	changed := false
	for k, v := range want {
		if l[k] != v {
			if l == nil {
				l = map[string]string{}
			}
			l[k], changed = v, true
		}
	}
	if changed {
		o.SetLabels(l)
	}
	return changed
}

// replace deletes have (only that very object) and creates want.
func replace(ctx context.Context, c client.Client, have, want client.Object) (string, error) {
	uid := have.GetUID()
	if err := c.Delete(ctx, have, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return "", err
	}
	if err := c.Create(ctx, want.DeepCopyObject().(client.Object)); err != nil {
		return "", err
	}
	return "replaced", nil
}

// ListTokens returns the bootstrap tokens `lifeboat token create` made, by
// cluster and then expiry.
func ListTokens(ctx context.Context, c client.Client) ([]TokenInfo, error) {
	var secrets corev1.SecretList
	if err := c.List(ctx, &secrets, client.InNamespace(TokenNamespace), client.MatchingLabels{LabelManagedBy: ManagedByValue}); err != nil {
		return nil, fmt.Errorf("listing bootstrap token Secrets in %s: %w", TokenNamespace, err)
	}
	var out []TokenInfo
	for i := range secrets.Items {
		if info, ok := TokenInfoFromSecret(&secrets.Items[i]); ok {
			out = append(out, info)
		}
	}
	slices.SortFunc(out, func(a, b TokenInfo) int {
		if n := strings.Compare(a.Cluster, b.Cluster); n != 0 {
			return n
		}
		if n := a.Expires.Compare(b.Expires); n != 0 {
			return n
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// DeleteToken revokes the token with that ID by deleting its Secret: the
// API server refuses it from then on. A token that `lifeboat token create`
// did not make (kubeadm's, say) is left alone.
func DeleteToken(ctx context.Context, c client.Client, id string) (TokenInfo, error) {
	if err := ValidateTokenID(id); err != nil {
		return TokenInfo{}, err
	}
	var s corev1.Secret
	name := TokenSecretName(id)
	if err := c.Get(ctx, client.ObjectKey{Namespace: TokenNamespace, Name: name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return TokenInfo{}, fmt.Errorf("%w: no Secret %s/%s (expired tokens are deleted by kube-controller-manager's token cleaner)", ErrTokenNotFound, TokenNamespace, name)
		}
		return TokenInfo{}, fmt.Errorf("reading Secret %s/%s: %w", TokenNamespace, name, err)
	}
	info, ok := TokenInfoFromSecret(&s)
	if !ok {
		return TokenInfo{}, fmt.Errorf("secret %s/%s is not a bootstrap token of lifeboat's (label %s=%s); delete it with kubectl if you mean to", TokenNamespace, name, LabelManagedBy, ManagedByValue)
	}
	uid := s.UID
	if err := c.Delete(ctx, &s, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return info, fmt.Errorf("deleting Secret %s/%s: %w", TokenNamespace, name, err)
	}
	return info, nil
}

// DeleteClusterTokens revokes every token of clusterName.
func DeleteClusterTokens(ctx context.Context, c client.Client, clusterName string) ([]TokenInfo, error) {
	all, err := ListTokens(ctx, c)
	if err != nil {
		return nil, err
	}
	var deleted []TokenInfo
	var errs []error
	for _, t := range all {
		if t.Cluster != clusterName {
			continue
		}
		if _, err := DeleteToken(ctx, c, t.ID); err != nil && !errors.Is(err, ErrTokenNotFound) {
			errs = append(errs, err)
			continue
		}
		deleted = append(deleted, t)
	}
	return deleted, errors.Join(errs...)
}

// RevokeAgent removes the agent of clusterName from the control plane: its
// tokens and the per-cluster objects of AgentObjects that carry its label
// (roles, bindings, the Lease). The Cluster and its execution namespace are
// unjoin's to delete; the shared roles stay for other agents. It returns
// what it deleted.
func RevokeAgent(ctx context.Context, c client.Client, clusterName string) ([]string, error) {
	tokens, err := DeleteClusterTokens(ctx, c, clusterName)
	var deleted []string
	for _, t := range tokens {
		deleted = append(deleted, "bootstrap token "+t.ID)
	}
	errs := []error{err}
	for _, o := range AgentObjects(clusterName) {
		switch o.(type) {
		case *corev1.Namespace, *clusterv1alpha1.Cluster:
			continue
		}
		if o.GetLabels()[LabelAgentCluster] != clusterName {
			continue
		}
		have := o.DeepCopyObject().(client.Object)
		switch err := c.Get(ctx, client.ObjectKeyFromObject(o), have); {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("reading %s: %w", describe(o), err))
			continue
		}
		if have.GetLabels()[LabelAgentCluster] != clusterName {
			continue
		}
		uid := have.GetUID()
		if err := c.Delete(ctx, have, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s: %w", describe(o), err))
			continue
		}
		deleted = append(deleted, describe(o))
	}
	return deleted, errors.Join(errs...)
}
