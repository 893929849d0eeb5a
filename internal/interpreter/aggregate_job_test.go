package interpreter

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// jobStatus describes a Job status compactly; times are minutes (0 = unset)
// and conditions are True condition types at the completion (or start)
// time.
type jobStatus struct {
	active, succeeded, failed int
	start, completion         int
	conditions                []string
	reason, message           string
}

func (s jobStatus) obj() map[string]any {
	out := map[string]any{}
	for k, v := range map[string]int{"active": s.active, "succeeded": s.succeeded, "failed": s.failed} {
		if v != 0 {
			out[k] = int64(v)
		}
	}
	if s.start != 0 {
		out["startTime"] = jsonValue(at(s.start))
	}
	if s.completion != 0 {
		out["completionTime"] = jsonValue(at(s.completion))
	}
	when := s.completion
	if when == 0 {
		when = s.start
	}
	var conds []any
	for _, c := range s.conditions {
		cond := map[string]any{"type": c, "status": "True", "lastProbeTime": jsonValue(at(when)), "lastTransitionTime": jsonValue(at(when))}
		if s.reason != "" {
			cond["reason"], cond["message"] = s.reason, s.message
		}
		conds = append(conds, cond)
	}
	if conds != nil {
		out["conditions"] = conds
	}
	return out
}

func TestAggregateJobStatus(t *testing.T) {
	running := jobStatus{active: 2, succeeded: 1, failed: 1, start: 2}
	complete := func(start, completion int) jobStatus {
		return jobStatus{succeeded: 3, start: start, completion: completion, conditions: []string{"SuccessCriteriaMet", "Complete"}}
	}
	failed := jobStatus{failed: 6, start: 1, completion: 0, conditions: []string{"FailureTarget", "Failed"}}
	jobTemplate := func(s *jobStatus) *unstructured.Unstructured {
		w := makeObj(jobGVK, "batch")
		if s != nil {
			w.status(s.obj())
		}
		return w.obj()
	}
	items := func(statuses ...*jobStatus) []workv1alpha2.AggregatedStatusItem {
		var out []workv1alpha2.AggregatedStatusItem
		for i, s := range statuses {
			name := "member" + string(rune('1'+i))
			if s == nil {
				out = append(out, item(name, nil))
				continue
			}
			out = append(out, item(name, s.obj()))
		}
		return out
	}

	tests := map[string]struct {
		template *unstructured.Unstructured
		items    []workv1alpha2.AggregatedStatusItem
		want     jobStatus
	}{
		"running: counters summed, earliest start": {
			template: jobTemplate(nil),
			items:    items(&running, &jobStatus{active: 1, start: 1}),
			want:     jobStatus{active: 3, succeeded: 1, failed: 1, start: 1},
		},
		"complete everywhere: Complete with SuccessCriteriaMet at the latest completion": {
			template: jobTemplate(nil),
			items:    items(ptrTo(complete(1, 4)), ptrTo(complete(2, 6))),
			want: jobStatus{succeeded: 6, start: 1, completion: 6, conditions: []string{"SuccessCriteriaMet", "Complete"},
				reason: jobReasonCompleted, message: "Job completed in every member cluster"},
		},
		"complete in one member, running in another: not complete": {
			template: jobTemplate(nil),
			items:    items(ptrTo(complete(1, 4)), &running),
			want:     jobStatus{active: 2, succeeded: 4, failed: 1, start: 1},
		},
		"complete in one member, no status from another: not complete": {
			template: jobTemplate(nil),
			items:    items(ptrTo(complete(1, 4)), nil),
			want:     jobStatus{succeeded: 3, start: 1},
		},
		"failed in one member while another runs: not failed yet": {
			template: jobTemplate(nil),
			items:    items(&failed, &running),
			want:     jobStatus{active: 2, succeeded: 1, failed: 7, start: 1},
		},
		"every member finished, one failed: Failed with FailureTarget": {
			template: jobTemplate(nil),
			items:    items(ptrTo(complete(2, 4)), &failed),
			want: jobStatus{succeeded: 3, failed: 6, start: 1, conditions: []string{"FailureTarget", "Failed"},
				reason: jobReasonFailed, message: "Job failed in member clusters: member2"},
		},
		"counters never decrease (a member left after failover)": {
			template: jobTemplate(&jobStatus{active: 1, succeeded: 5, failed: 2, start: 3}),
			items:    items(&running),
			want:     jobStatus{active: 2, succeeded: 5, failed: 2, start: 3},
		},
		"start time never changes once set": {
			template: jobTemplate(&jobStatus{active: 1, start: 3}),
			items:    items(&jobStatus{active: 1, start: 1}),
			want:     jobStatus{active: 1, start: 3},
		},
		"a finished template is final": {
			template: jobTemplate(ptrTo(complete(1, 2))),
			items:    items(&running),
			want:     complete(1, 2),
		},
		"no members": {
			template: jobTemplate(nil),
			items:    nil,
			want:     jobStatus{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := NewDefault().AggregateStatus(tc.template, tc.items)
			if err != nil {
				t.Fatalf("AggregateStatus: %v", err)
			}
			if diff := cmp.Diff(jsonValue(tc.want.obj()), got.Object["status"]); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
