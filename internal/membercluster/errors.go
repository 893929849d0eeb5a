package membercluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
)

// UnreachableError says a member cluster could not be reached: the
// connection failed, timed out, or the cache is waiting out a back-off after
// earlier failures. It is retryable; RetryAfter says when the cache will try
// the member again, so callers can requeue instead of retrying hot.
type UnreachableError struct {
	Cluster    string
	RetryAfter time.Duration
	Err        error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("member cluster %s is unreachable (next attempt in %s): %v", e.Cluster, e.RetryAfter.Round(time.Second), e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// IsUnreachable reports whether err (or an error it wraps) is an
// UnreachableError.
func IsUnreachable(err error) bool {
	var u *UnreachableError
	return errors.As(err, &u)
}

// RetryAfter returns the back-off of an UnreachableError in err's chain, and
// false when there is none.
func RetryAfter(err error) (time.Duration, bool) {
	var u *UnreachableError
	if errors.As(err, &u) {
		return u.RetryAfter, true
	}
	return 0, false
}

// NotConnectedError says the cache could not build clients for a member: its
// Cluster or credentials are missing or invalid. It is retryable once the
// Cluster or its Secret changes.
type NotConnectedError struct {
	Cluster string
	Err     error
}

func (e *NotConnectedError) Error() string {
	return fmt.Sprintf("no connection to member cluster %s: %v", e.Cluster, e.Err)
}

func (e *NotConnectedError) Unwrap() error { return e.Err }

// IsNotConnected reports whether err (or an error it wraps) is a
// NotConnectedError.
func IsNotConnected(err error) bool {
	var n *NotConnectedError
	return errors.As(err, &n)
}

// isConnectionFailure tells transport failures (refused, reset, DNS, TLS,
// timeouts) from answers of a reachable API server. Any API status, even a
// 500, proves the member answered; a missing kind is a discovery answer too.
// A cancelled caller context is not the member's fault.
func isConnectionFailure(callerCtx context.Context, err error) bool {
	if err == nil {
		return false
	}
	if callerCtx.Err() != nil {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		// 503 from an aggregated or overloaded server and 504 gateway
		// timeouts mean the member cannot serve us right now.
		return code == 503 || code == 504
	}
	if meta.IsNoMatchError(err) {
		return false
	}
	return true
}
