package failover

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

func rawJSON(v interface{}) *runtime.RawExtension {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return &runtime.RawExtension{Raw: b}
}

func TestCaptureState(t *testing.T) {
	flink := map[string]interface{}{
		"jobStatus":      map[string]interface{}{"jobId": "a1b2c3d4e5f60718293a4b5c6d7e8f90", "state": "FAILED"},
		"lifecycleState": "STABLE",
		"replicas":       2,
		"message":        "this is not / a label value!",
		"nested":         map[string]interface{}{"list": []interface{}{"x", "y"}},
	}
	for name, tc := range map[string]struct {
		rules        []policyv1alpha1.StatePreservationRule
		raw          *runtime.RawExtension
		wantState    map[string]string
		wantProblems []string // substrings, one per problem, in order
	}{
		"template with spaces (seed)": {
			rules:     []policyv1alpha1.StatePreservationRule{rule("application.karmada.io/failover-jobid", "{ .jobStatus.jobId }")},
			raw:       rawJSON(flink),
			wantState: map[string]string{"application.karmada.io/failover-jobid": "a1b2c3d4e5f60718293a4b5c6d7e8f90"},
		},
		"bare path with a dot (seed demo)": {
			rules:     []policyv1alpha1.StatePreservationRule{rule("cztest-replicas", ".replicas")},
			raw:       rawJSON(flink),
			wantState: map[string]string{"cztest-replicas": "2"},
		},
		"integers print as kubectl prints them (a checkpoint timestamp, an id past 2^53)": {
			rules:     []policyv1alpha1.StatePreservationRule{rule("ts", "{.ts}"), rule("id", "{.id}"), rule("small", "{.small}"), rule("ratio", "{.ratio}")},
			raw:       &runtime.RawExtension{Raw: []byte(`{"ts":1717171717000,"id":1234567890123456789,"small":1000000,"ratio":0.00001}`)},
			wantState: map[string]string{"ts": "1717171717000", "id": "1234567890123456789", "small": "1000000", "ratio": "1e-05"},
		},
		"a filter compares numbers": {
			rules:     []policyv1alpha1.StatePreservationRule{rule("id", "{.conds[?(@.code==2)].id}")},
			raw:       &runtime.RawExtension{Raw: []byte(`{"conds":[{"code":1,"id":"x"},{"code":2,"id":"y"}]}`)},
			wantState: map[string]string{"id": "y"},
		},
		"must not: a null or empty field carries no state": {
			rules:        []policyv1alpha1.StatePreservationRule{rule("jobid", "{.jobStatus.jobId}"), rule("path", "{.path}")},
			raw:          &runtime.RawExtension{Raw: []byte(`{"jobStatus":{"jobId":null},"path":""}`)},
			wantProblems: []string{`JSONPath "{.jobStatus.jobId}" matched nothing`, `JSONPath "{.path}" matched an empty value`},
		},
		"bare path without a dot": {
			rules:     []policyv1alpha1.StatePreservationRule{rule("jobid", "jobStatus.jobId")},
			raw:       rawJSON(flink),
			wantState: map[string]string{"jobid": "a1b2c3d4e5f60718293a4b5c6d7e8f90"},
		},
		"missing field with a case-insensitive twin: did you mean": {
			rules: []policyv1alpha1.StatePreservationRule{
				rule("jobid", "{ .jobStatus.jobID }"),
				rule("state", "{.lifecycleState}"),
			},
			raw:          rawJSON(flink),
			wantState:    map[string]string{"state": "STABLE"},
			wantProblems: []string{"jobID not found; did you mean jobId?"},
		},
		"missing field without a twin": {
			rules:        []policyv1alpha1.StatePreservationRule{rule("x", "{.savepoint.path}")},
			raw:          rawJSON(flink),
			wantProblems: []string{"savepoint not found"},
		},
		"value that is not a label value": {
			rules:        []policyv1alpha1.StatePreservationRule{rule("msg", "{.message}")},
			raw:          rawJSON(flink),
			wantProblems: []string{"is not a valid label value"},
		},
		"filter that matches nothing": {
			rules:        []policyv1alpha1.StatePreservationRule{rule("x", `{.nested.list[?(@=="z")]}`)},
			raw:          rawJSON(flink),
			wantProblems: []string{"matched nothing"},
		},
		"invalid JSONPath": {
			rules:        []policyv1alpha1.StatePreservationRule{rule("x", "{.a[}")},
			raw:          rawJSON(flink),
			wantProblems: []string{"invalid JSONPath"},
		},
		"no status reported": {
			rules:        []policyv1alpha1.StatePreservationRule{rule("a", ".replicas"), rule("b", ".x")},
			wantProblems: []string{"no status was reported from cluster member1", "no status was reported from cluster member1"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			state, problems := CaptureState(tc.rules, tc.raw, "member1")
			if diff := cmp.Diff(tc.wantState, state); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
			if len(problems) != len(tc.wantProblems) {
				t.Fatalf("problems = %v, want %d", problems, len(tc.wantProblems))
			}
			for i, p := range problems {
				if !strings.Contains(p.Reason, tc.wantProblems[i]) {
					t.Errorf("problem %d = %q, want it to contain %q", i, p.Reason, tc.wantProblems[i])
				}
			}
		})
	}
}

func TestCaptureForEvictionChained(t *testing.T) {
	rules := []policyv1alpha1.StatePreservationRule{rule("jobid", "{.jobStatus.jobId}")}
	bStatus := map[string]interface{}{"jobStatus": map[string]interface{}{"jobId": "bbbb"}}
	healthyAt := mt(200)
	for name, tc := range map[string]struct {
		binding   *bindingWrapper
		wantState map[string]string
		wantNote  string
	}{
		"A→B, B never healthy (history): B→C carries A's state": {
			binding: makeBinding("a").clusters("member2").reflected("member2", bStatus).
				history(workv1alpha2.FailoverHistoryItem{Time: *mt(100), FromCluster: "member1", PurgeMode: policyv1alpha1.PurgeModeDirectly,
					ClustersBefore: []string{"member1"}, ClustersAfter: []string{"member2"}, PreservedLabelState: map[string]string{"jobid": "aaaa"}}),
			wantState: map[string]string{"jobid": "aaaa"},
			wantNote:  "member2 never became healthy after the failover from member1",
		},
		"A→B, B never healthy (open task, no history yet)": {
			binding: makeBinding("a").clusters("member2").reflected("member2", bStatus).
				task(withState(makeTask("member1", policyv1alpha1.PurgeModeDirectly, 100, "member1"), "jobid", "aaaa")),
			wantState: map[string]string{"jobid": "aaaa"},
			wantNote:  "carrying the state captured from member1 forward",
		},
		"A→B, B became healthy: B's own state": {
			binding: makeBinding("a").clusters("member2").reflected("member2", bStatus).
				history(workv1alpha2.FailoverHistoryItem{Time: *mt(100), FromCluster: "member1", PurgeMode: policyv1alpha1.PurgeModeDirectly,
					ClustersBefore: []string{"member1"}, ClustersAfter: []string{"member2"}, PreservedLabelState: map[string]string{"jobid": "aaaa"},
					ReplacementHealthyTime: healthyAt}),
			wantState: map[string]string{"jobid": "bbbb"},
		},
		"first failover: own state": {
			binding:   makeBinding("a").clusters("member2").reflected("member2", bStatus),
			wantState: map[string]string{"jobid": "bbbb"},
		},
		"earlier failover did not place this cluster: own state": {
			binding: makeBinding("a").clusters("member2", "member3").reflected("member2", bStatus).
				history(workv1alpha2.FailoverHistoryItem{Time: *mt(100), FromCluster: "member1", PurgeMode: policyv1alpha1.PurgeModeDirectly,
					ClustersBefore: []string{"member1", "member2"}, ClustersAfter: []string{"member2", "member3"}, PreservedLabelState: map[string]string{"jobid": "aaaa"}}),
			wantState: map[string]string{"jobid": "bbbb"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := tc.binding.obj()
			state, problems, note := captureForEviction(&b.Spec, &b.Status, rules, "member2")
			if len(problems) != 0 {
				t.Errorf("problems: %v", problems)
			}
			if diff := cmp.Diff(tc.wantState, state); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
			if !strings.Contains(note, tc.wantNote) || (tc.wantNote == "" && note != "") {
				t.Errorf("note = %q, want %q", note, tc.wantNote)
			}
		})
	}
}
