// Package eventbudget keeps the Events of a mass failover or a mass
// rollout within what the control plane can take, without losing count of
// them.
//
// A failover records a few Events on each workload's binding and resource
// template (the eviction, the new placement, the task closing), and a
// rollout a few more (the policy applied, a placement without an eviction
// task). One
// workload at a time that is what a user wants in `kubectl describe`. A
// thousand workloads leaving one failed cluster, or matched by one policy,
// make thousands of Events within a minute: client-go's recorder sends
// them one at a time, keeps at most 1,000 waiting and drops the rest
// unseen, and the ones it does send compete with the controllers' own
// writes for the API server.
//
// A Budget lets the Events of one kind (reason) about one subject's
// workloads (those evicted from a cluster or whose Works were applied to
// it, or those a policy propagates) through up to a burst, then one more
// per refill period; the rest are counted, and every summary period one
// Event on the subject (the Cluster, the policy) says how many there were
// and names a few of the workloads. Each binding's status still holds
// every eviction (spec.gracefulEvictionTasks, status.failoverHistory, its
// conditions) and its placement, each template its policy's claim, and
// each Work its Applied condition, whatever was summarised.
package eventbudget

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/claim"
)

// Defaults of a Budget.
const (
	// DefaultBurst is how many Events of one reason about one subject are
	// recorded on the workloads at once: a failover or a rollout of up to
	// this many workloads is described in full.
	DefaultBurst = 50
	// DefaultRefill is how often one more Event is let through once the
	// burst is spent; a full burst is back after Burst × Refill of quiet.
	DefaultRefill = 6 * time.Second
	// DefaultSummaryPeriod is how long after the first Event held back the
	// first summary is recorded on the subject. Each further summary of
	// the same kind waits twice as long as the one before, up to
	// maxSummaryPeriod, so that a long mass failover says a handful of
	// summaries: client-go's recorder lets about 25 Events per object and
	// type through before it throttles them to one per 5 minutes, and
	// folds more than 10 of one reason within 10 minutes into one.
	DefaultSummaryPeriod = 10 * time.Second
)

// maxSummaryPeriod bounds the time between two summaries of one kind.
const maxSummaryPeriod = 5 * time.Minute

// summaryChecks is how many times per summary period Start looks for
// summaries due: a summary comes at most a fifth of a period late.
const summaryChecks = 5

// subjectReadTimeout bounds the read of a summary's subject; past it the
// summary is recorded without the subject's UID.
const subjectReadTimeout = 5 * time.Second

// examplesKept is how many workloads a summary names.
const examplesKept = 3

// Budget decides which per-workload Events of a failover or a rollout are
// recorded, and summarises the others on their subject. It is safe for concurrent use;
// one Budget serves every controller of a process. A nil *Budget lets
// every Event through.
type Budget struct {
	burst         int
	refill        time.Duration
	summaryPeriod time.Duration

	clock    clock.PassiveClock
	reader   client.Reader
	recorder record.EventRecorder
	held     *prometheus.CounterVec

	// stopRecorder is called once the last summaries are recorded.
	stopRecorder func()

	mu      sync.Mutex
	buckets map[key]*bucket
	// closed is set by the last summaries: a controller still finishing
	// a reconcile then records its Events itself, as nothing would say
	// its count any more.
	closed bool
}

// Subject is the object whose workloads a budgeted Event is about, and on
// which its summary is recorded: a Cluster, a PropagationPolicy or a
// ClusterPropagationPolicy. The zero Subject budgets nothing.
type Subject struct {
	// Kind is "Cluster", "PropagationPolicy" or "ClusterPropagationPolicy".
	Kind string
	// Namespace is a PropagationPolicy's; empty for the others.
	Namespace string
	Name      string
}

// Cluster is the subject of Events about the workloads evicted from the
// named cluster, or whose Works were applied to it; "" is none.
func Cluster(name string) Subject {
	if name == "" {
		return Subject{}
	}
	return Subject{Kind: kindCluster, Name: name}
}

// Policy is the subject of Events about the workloads a policy propagates:
// the PropagationPolicy namespace/name, or with an empty namespace the
// ClusterPropagationPolicy name; an empty name is none.
func Policy(namespace, name string) Subject {
	switch {
	case name == "":
		return Subject{}
	case namespace == "":
		return Subject{Kind: kindClusterPropagationPolicy, Name: name}
	default:
		return Subject{Kind: kindPropagationPolicy, Namespace: namespace, Name: name}
	}
}

// PolicyOf is the subject of Events about a binding's (or template's)
// workload: the policy of its claim, read as the detector reads it
// (claim.Read); none without a complete claim.
func PolicyOf(obj metav1.Object) Subject {
	c, ok := claim.Read(obj)
	switch {
	case !ok:
		return Subject{}
	case c.Cluster:
		return Policy("", c.Name)
	default:
		return Policy(c.Namespace, c.Name)
	}
}

// Subject kinds.
const (
	kindCluster                  = "Cluster"
	kindPropagationPolicy        = "PropagationPolicy"
	kindClusterPropagationPolicy = "ClusterPropagationPolicy"
)

// String names the subject in a summary: "cluster member1",
// "PropagationPolicy default/nginx".
func (s Subject) String() string {
	switch s.Kind {
	case kindCluster:
		return "cluster " + s.Name
	case kindPropagationPolicy:
		return s.Kind + " " + s.Namespace + "/" + s.Name
	default:
		return s.Kind + " " + s.Name
	}
}

// key is one reason about one subject.
type key struct {
	subject Subject
	reason  string
}

// bucket is what a key has left to spend, and what it held back since its
// last summary.
type bucket struct {
	tokens float64
	filled time.Time

	eventType string
	heldBack  int
	examples  []string
	since     time.Time

	// total is what the bucket held back since first; summaries is how
	// many summaries said it.
	total     int
	first     time.Time
	summaries int
}

// Options configure a Budget; zero durations take the defaults, and a
// Burst of 0 or less makes New return nil (every Event recorded).
type Options struct {
	Burst         int
	Refill        time.Duration
	SummaryPeriod time.Duration
	// Clock (nil: the real one).
	Clock clock.PassiveClock
	// Reader reads the Cluster or policy a summary is recorded on.
	Reader client.Reader
	// Recorder records the summaries (NewRecorder's, say).
	Recorder record.EventRecorder
	// StopRecorder, if set, is called after the last summaries are
	// recorded, when Start returns.
	StopRecorder func()
	// Registerer takes the lifeboat_events_summarised_total counter (nil:
	// none).
	Registerer prometheus.Registerer
}

// New returns a Budget, or nil when o.Burst is not positive.
func New(o Options) (*Budget, error) {
	if o.Burst <= 0 {
		return nil, nil
	}
	b := &Budget{
		burst:         o.Burst,
		refill:        o.Refill,
		summaryPeriod: o.SummaryPeriod,
		clock:         o.Clock,
		reader:        o.Reader,
		recorder:      o.Recorder,
		stopRecorder:  o.StopRecorder,
		buckets:       map[key]*bucket{},
		held: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lifeboat_events_summarised_total",
			Help: "Per-workload Events (a failover's, a rollout's, and those of Works applied to or cleaned up from a member) not recorded on each object but counted in a summary Event on their Cluster or policy, by reason.",
		}, []string{"reason"}),
	}
	if b.refill <= 0 {
		b.refill = DefaultRefill
	}
	if b.summaryPeriod <= 0 {
		b.summaryPeriod = DefaultSummaryPeriod
	}
	if b.clock == nil {
		b.clock = clock.RealClock{}
	}
	if o.Registerer != nil {
		if err := o.Registerer.Register(b.held); err != nil {
			return nil, fmt.Errorf("registering lifeboat_events_summarised_total: %w", err)
		}
	}
	return b, nil
}

// Allow reports whether an Event of reason about a workload of subject (one
// evicted from a cluster, placed after such an eviction, or applied to it;
// one a policy propagates) should be recorded on the workload's objects.
// When it returns false the Event is counted for the next summary on the
// subject, with workload (namespace/name) as a possible example. The zero
// Subject is always allowed.
func (b *Budget) Allow(subject Subject, eventType, reason, workload string) bool {
	if b == nil || subject.Name == "" {
		return true
	}
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return true
	}
	k := key{subject: subject, reason: reason}
	bk := b.buckets[k]
	if bk == nil {
		bk = &bucket{tokens: float64(b.burst), filled: now}
		b.buckets[k] = bk
	}
	bk.fill(now, b.burst, b.refill)
	if bk.tokens >= 1 {
		bk.tokens--
		return true
	}
	if bk.heldBack == 0 {
		bk.since = now
	}
	if bk.total == 0 {
		bk.first = now
	}
	bk.heldBack++
	bk.total++
	bk.eventType = eventType
	if len(bk.examples) < examplesKept {
		bk.examples = append(bk.examples, workload)
	}
	b.held.WithLabelValues(reason).Inc()
	return false
}

// fill adds the tokens earned since the last fill, up to burst. A clock
// that went back earns nothing until it passes the last fill again.
func (bk *bucket) fill(now time.Time, burst int, refill time.Duration) {
	if elapsed := now.Sub(bk.filled); elapsed > 0 {
		bk.tokens = min(float64(burst), bk.tokens+float64(elapsed)/float64(refill))
		bk.filled = now
	}
}

// Summary is one Event a Budget records on its subject.
type Summary struct {
	Subject                    Subject
	EventType, Reason, Message string
}

// Due takes the summaries whose period has passed: one per reason and
// subject that held Events back at least its period ago (the summary
// period, doubled for each summary of the kind before), or all of them
// when final; after a final Due, Allow lets every Event through. Buckets
// with nothing held back and a full burst again are forgotten.
func (b *Budget) Due(final bool) []Summary {
	if b == nil {
		return nil
	}
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if final {
		b.closed = true
	}
	var out []Summary
	for k, bk := range b.buckets {
		if bk.heldBack > 0 && (final || now.Sub(bk.since) >= b.period(bk.summaries)) {
			out = append(out, Summary{
				Subject:   k.subject,
				EventType: bk.eventType,
				Reason:    k.reason,
				Message:   b.message(k, bk, now),
			})
			bk.heldBack, bk.examples = 0, nil
			bk.summaries++
			continue
		}
		bk.fill(now, b.burst, b.refill)
		if bk.heldBack == 0 && bk.tokens >= float64(b.burst) {
			delete(b.buckets, k)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if a, b := out[i].Subject.String(), out[j].Subject.String(); a != b {
			return a < b
		}
		return out[i].Reason < out[j].Reason
	})
	return out
}

// period is how long the summary after n others of its kind waits.
func (b *Budget) period(n int) time.Duration {
	p := b.summaryPeriod
	for ; n > 0 && p < maxSummaryPeriod; n-- {
		p *= 2
	}
	return min(p, maxSummaryPeriod)
}

// message says what a summary stands for.
func (b *Budget) message(k key, bk *bucket, now time.Time) string {
	names := strings.Join(bk.examples, ", ")
	if bk.heldBack > len(bk.examples) {
		names += " and others"
	}
	total := ""
	if bk.total > bk.heldBack {
		total = fmt.Sprintf(" (%d since %s)", bk.total, bk.first.UTC().Format(time.TimeOnly+" MST"))
	}
	return fmt.Sprintf("%d more %s Events about workloads of %s in the last %s%s, counted here instead of recorded on each object: %s. "+
		"Past %d at once, one such Event per %s is recorded on the objects themselves; the workloads' bindings and Works hold what each one said.",
		bk.heldBack, k.reason, k.subject, now.Sub(bk.since).Round(time.Second), total, names, b.burst, b.refill)
}

// Start records the summaries as they come due until ctx ends, then the
// last ones, which is best effort: the process may end before they are
// sent. It is a manager Runnable.
func (b *Budget) Start(ctx context.Context) error {
	t := time.NewTicker(b.summaryPeriod / summaryChecks)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			// The manager's context is done: the subjects' reads use a
			// fresh one, bounded, so that the last counts are said.
			last, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			b.record(last, b.Due(true))
			cancel()
			if b.stopRecorder != nil {
				b.stopRecorder()
			}
			return nil
		case <-t.C:
			b.record(ctx, b.Due(false))
		}
	}
}

// NeedLeaderElection is true: only the leader's controllers record Events.
func (b *Budget) NeedLeaderElection() bool { return true }

// record records each summary on its subject.
func (b *Budget) record(ctx context.Context, sums []Summary) {
	if b.recorder == nil {
		return
	}
	for _, s := range sums {
		b.recorder.Event(b.subjectRef(ctx, s.Subject), s.EventType, s.Reason, s.Message)
	}
}

// subjectRef is the subject's reference, with its UID when the reader has
// it (kubectl describe matches Events by UID).
func (b *Budget) subjectRef(ctx context.Context, s Subject) *corev1.ObjectReference {
	var obj client.Object
	ref := &corev1.ObjectReference{Kind: s.Kind, Namespace: s.Namespace, Name: s.Name}
	switch s.Kind {
	case kindCluster:
		ref.APIVersion = clusterv1alpha1.SchemeGroupVersion.String()
		obj = &clusterv1alpha1.Cluster{}
	case kindPropagationPolicy:
		ref.APIVersion = policyv1alpha1.SchemeGroupVersion.String()
		obj = &policyv1alpha1.PropagationPolicy{}
	default:
		ref.APIVersion = policyv1alpha1.SchemeGroupVersion.String()
		obj = &policyv1alpha1.ClusterPropagationPolicy{}
	}
	if b.reader == nil {
		return ref
	}
	// A cache that has to start an informer for the kind first must not
	// hold up the summaries after this one.
	ctx, cancel := context.WithTimeout(ctx, subjectReadTimeout)
	defer cancel()
	if err := b.reader.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: s.Name}, obj); err != nil {
		if !apierrors.IsNotFound(err) {
			ctrl.LoggerFrom(ctx).V(1).Info("reading the subject of an Event summary", "subject", s.String(), "error", err.Error())
		}
		return ref
	}
	ref.UID = obj.GetUID()
	ref.ResourceVersion = obj.GetResourceVersion()
	return ref
}

// Workload names a binding's workload for a summary: its resource
// template, or the binding itself.
func Workload(obj client.Object, spec *workv1alpha2.ResourceBindingSpec) string {
	res := spec.Resource
	if res.Name == "" {
		return client.ObjectKeyFromObject(obj).String()
	}
	return Template(res.Kind, res.Namespace, res.Name)
}

// Template names a resource template for a summary: "Deployment
// shop/web", "ClusterRole/view".
func Template(kind, namespace, name string) string {
	if namespace == "" {
		return kind + "/" + name
	}
	return kind + " " + namespace + "/" + name
}
