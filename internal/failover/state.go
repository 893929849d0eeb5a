package failover

import (
	"bytes"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/jsonpath"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/features"
)

// StateProblem is a statePreservation rule whose value could not be
// captured. It never blocks a failover: the failover goes on without that
// value, and the problem is reported in an Event and the failover history.
type StateProblem struct {
	// Alias is the rule's aliasLabelName.
	Alias string
	// Reason says what went wrong, for users.
	Reason string
}

func (p StateProblem) String() string { return fmt.Sprintf("rule %s: %s", p.Alias, p.Reason) }

// CaptureState evaluates every rule against the reflected status of the
// failed copy in cluster and returns aliasLabelName → value for the rules
// that produced a valid label value, and a problem for each that did not.
//
// A bare path (".updatedReplicas", "jobStatus.jobId") is read as if written
// "{.updatedReplicas}". Lists and maps are printed as JSON text, scalars as
// text, as kubectl -o jsonpath does.
func CaptureState(rules []policyv1alpha1.StatePreservationRule, raw *runtime.RawExtension, cluster string) (map[string]string, []StateProblem) {
	if len(rules) == 0 {
		return nil, nil
	}
	var problems []StateProblem
	failAll := func(reason string) (map[string]string, []StateProblem) {
		for _, r := range rules {
			problems = append(problems, StateProblem{Alias: r.AliasLabelName, Reason: reason})
		}
		return nil, problems
	}
	if raw == nil || len(bytes.TrimSpace(raw.Raw)) == 0 {
		return failAll(fmt.Sprintf("no status was reported from cluster %s", cluster))
	}
	// Integers decode as int64, as kubectl -o jsonpath reads them: as
	// float64 a checkpoint timestamp would print as 1.7e+12. Numbers stay
	// numbers, so that JSONPath filters can compare them.
	var data interface{}
	if err := utiljson.Unmarshal(raw.Raw, &data); err != nil {
		return failAll(fmt.Sprintf("the status reported from cluster %s is not JSON: %v", cluster, err))
	}

	state := map[string]string{}
	for _, r := range rules {
		value, reason := evalRule(r.JSONPath, data)
		if reason != "" {
			problems = append(problems, StateProblem{Alias: r.AliasLabelName, Reason: reason})
			continue
		}
		state[r.AliasLabelName] = value
	}
	if len(state) == 0 {
		state = nil
	}
	return state, problems
}

// ParseStatePath parses a statePreservation rule's jsonPath the way a
// failover evaluates it: a bare path (".a.b", "a.b") is read as the
// template "{.a.b}", and a missing key is an error, not an empty value. The
// policy checker calls it when a policy is applied, so that a path that
// cannot parse is reported then rather than at the first failover.
func ParseStatePath(path string) (*jsonpath.JSONPath, error) {
	jp := jsonpath.New("statePreservation").AllowMissingKeys(false)
	if err := jp.Parse(normaliseJSONPath(path)); err != nil {
		return nil, fmt.Errorf("invalid JSONPath %q: %w", path, err)
	}
	return jp, nil
}

// evalRule returns the value of path in data, or why there is none.
func evalRule(path string, data interface{}) (string, string) {
	template := normaliseJSONPath(path)
	jp, err := ParseStatePath(path)
	if err != nil {
		return "", err.Error()
	}
	results, err := jp.FindResults(data)
	if err != nil {
		if hint := missingFieldHint(template, data); hint != "" {
			return "", fmt.Sprintf("JSONPath %q: %s", path, hint)
		}
		return "", fmt.Sprintf("JSONPath %q: %v", path, err)
	}
	matched := false
	for _, set := range results {
		for _, v := range set {
			matched = matched || !nothing(v)
		}
	}
	if !matched {
		return "", fmt.Sprintf("JSONPath %q matched nothing in the reflected status", path)
	}
	var buf bytes.Buffer
	if err := jp.Execute(&buf, data); err != nil {
		return "", fmt.Sprintf("JSONPath %q: %v", path, err)
	}
	value := buf.String()
	if value == "" {
		return "", fmt.Sprintf("JSONPath %q matched an empty value in the reflected status", path)
	}
	if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
		return "", fmt.Sprintf("value %q of JSONPath %q is not a valid label value: %s", truncate(value, 80), path, strings.Join(errs, "; "))
	}
	return value, ""
}

// nothing says whether a JSONPath match is a JSON null (or no value at
// all): a field the member reports as null holds no state.
func nothing(v reflect.Value) bool {
	for v.IsValid() && v.Kind() == reflect.Interface {
		if v.IsNil() {
			return true
		}
		v = v.Elem()
	}
	return !v.IsValid()
}

// normaliseJSONPath turns a bare path into a JSONPath template:
// ".a.b" and "a.b" become "{.a.b}"; templates with braces are unchanged.
func normaliseJSONPath(path string) string {
	p := strings.TrimSpace(path)
	if strings.Contains(p, "{") {
		return p
	}
	if !strings.HasPrefix(p, ".") && !strings.HasPrefix(p, "$") && !strings.HasPrefix(p, "[") {
		p = "." + p
	}
	return "{" + p + "}"
}

// missingFieldHint walks the plain field steps of template through data and
// names the first missing field, with a case-insensitive match if there is
// one ("jobID not found; did you mean jobId?"). Empty when the path has
// other kinds of steps before the missing field.
func missingFieldHint(template string, data interface{}) string {
	parser, err := jsonpath.Parse("hint", template)
	if err != nil || parser.Root == nil {
		return ""
	}
	cur := data
	for _, n := range parser.Root.Nodes {
		list, ok := n.(*jsonpath.ListNode)
		if !ok {
			continue
		}
		for _, step := range list.Nodes {
			field, ok := step.(*jsonpath.FieldNode)
			if !ok {
				return ""
			}
			if field.Value == "" { // a leading "." or "$"
				continue
			}
			obj, ok := cur.(map[string]interface{})
			if !ok {
				return ""
			}
			next, ok := obj[field.Value]
			if !ok {
				keys := make([]string, 0, len(obj))
				for k := range obj {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					if strings.EqualFold(k, field.Value) {
						return fmt.Sprintf("%s not found; did you mean %s?", field.Value, k)
					}
				}
				return fmt.Sprintf("%s not found", field.Value)
			}
			cur = next
		}
	}
	return ""
}

// failoverRecord is one eviction as seen in a task or a history entry.
type failoverRecord struct {
	reason         string
	fromCluster    string
	time           int64 // unix seconds of the task's creationTimestamp
	purgeMode      policyv1alpha1.PurgeMode
	clustersBefore []string
	clustersAfter  []string
	state          map[string]string
	healthy        bool // the replacement became Healthy
}

// failoverRecords merges the history entries and the tasks that have no
// entry yet, newest first.
func failoverRecords(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus) []failoverRecord {
	seen := map[historyKey]bool{}
	var out []failoverRecord
	for _, h := range status.FailoverHistory {
		seen[historyKey{h.FromCluster, h.Time.Unix()}] = true
		out = append(out, failoverRecord{
			reason:         h.Reason,
			fromCluster:    h.FromCluster,
			time:           h.Time.Unix(),
			purgeMode:      policyv1alpha1.NormalizePurgeMode(h.PurgeMode),
			clustersBefore: h.ClustersBefore,
			clustersAfter:  h.ClustersAfter,
			state:          h.PreservedLabelState,
			healthy:        h.ReplacementHealthyTime != nil,
		})
	}
	for _, t := range spec.GracefulEvictionTasks {
		if t.CreationTimestamp == nil || seen[historyKey{t.FromCluster, t.CreationTimestamp.Unix()}] {
			continue
		}
		out = append(out, failoverRecord{
			reason:         t.Reason,
			fromCluster:    t.FromCluster,
			time:           t.CreationTimestamp.Unix(),
			purgeMode:      policyv1alpha1.NormalizePurgeMode(t.PurgeMode),
			clustersBefore: t.ClustersBeforeFailover,
			state:          t.PreservedLabelState,
		})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].time > out[j].time })
	return out
}

// placedBy returns the newest record that placed cluster as a replacement:
// the cluster was not scheduled before that eviction (and, once known, is
// among the clusters after it). An abandoned failback placed nothing: it
// gave back the copy that was already running, so the record that placed
// that copy still counts.
func placedBy(records []failoverRecord, cluster string) (failoverRecord, bool) {
	for _, r := range records {
		if r.reason == workv1alpha2.EvictionReasonFailbackAbandoned {
			continue
		}
		if len(r.clustersBefore) == 0 || contains(r.clustersBefore, cluster) || r.fromCluster == cluster {
			continue
		}
		if len(r.clustersAfter) > 0 && !contains(r.clustersAfter, cluster) {
			continue
		}
		return r, true
	}
	return failoverRecord{}, false
}

// inheritedState returns the state to carry forward when cluster fails:
// if cluster was placed by an earlier failover and never became Healthy,
// its own status is not trustworthy (the job never ran there), so the
// state captured at that earlier failover is used instead. This is what
// makes a chained failover A→B→C restore A's state when B never came up.
func inheritedState(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, cluster string) (map[string]string, string, bool) {
	r, ok := placedBy(failoverRecords(spec, status), cluster)
	if !ok || r.healthy || len(r.state) == 0 {
		return nil, "", false
	}
	return r.state, r.fromCluster, true
}

// aggregatedItem returns cluster's item of status.aggregatedStatus.
func aggregatedItem(status *workv1alpha2.ResourceBindingStatus, cluster string) *workv1alpha2.AggregatedStatusItem {
	for i := range status.AggregatedStatus {
		if status.AggregatedStatus[i].ClusterName == cluster {
			return &status.AggregatedStatus[i]
		}
	}
	return nil
}

// captureForEviction is the state of an eviction of cluster: captured from
// its reflected status, or carried forward from an earlier failover when
// the cluster never became healthy. notes are for users (Events, history
// message); problems are the rules that produced nothing.
func captureForEviction(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, rules []policyv1alpha1.StatePreservationRule, cluster string) (map[string]string, []StateProblem, string) {
	if len(rules) == 0 {
		return nil, nil, ""
	}
	if state, from, ok := inheritedState(spec, status, cluster); ok {
		return state, nil, fmt.Sprintf("cluster %s never became healthy after the failover from %s; carrying the state captured from %s forward", cluster, from, from)
	}
	var raw *runtime.RawExtension
	if item := aggregatedItem(status, cluster); item != nil {
		raw = item.Status
	}
	state, problems := CaptureState(rules, raw, cluster)
	return state, problems, ""
}

// FailbackState is the state a failback carries in the eviction task of
// the cluster it leaves, as a failover would: captured, with the gate
// StatefulFailoverInjection on, by the statePreservation rules of
// spec.failover.cluster (else spec.failover.application) from the copy
// that runs in cluster. message says which rules produced nothing.
func FailbackState(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, cluster string, gates *features.Gates) (map[string]string, string) {
	if spec.Failover == nil || !gates.Enabled(features.StatefulFailoverInjection) {
		return nil, ""
	}
	var sp *policyv1alpha1.StatePreservation
	switch {
	case spec.Failover.Cluster != nil && spec.Failover.Cluster.StatePreservation != nil:
		sp = spec.Failover.Cluster.StatePreservation
	case spec.Failover.Application != nil && spec.Failover.Application.StatePreservation != nil:
		sp = spec.Failover.Application.StatePreservation
	default:
		return nil, ""
	}
	state, problems, carried := captureForEviction(spec, status, sp.Rules, cluster)
	var notes []string
	if carried != "" {
		notes = append(notes, carried)
	}
	for _, p := range problems {
		notes = append(notes, "state not preserved for "+p.String())
	}
	return state, strings.Join(notes, "; ")
}
