package rebalancer

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/lifeboat-dev/lifeboat/api/apps/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

func mt(seconds int) *metav1.Time {
	return ptr.To(metav1.NewTime(t0.Add(time.Duration(seconds) * time.Second)))
}

func deploy(name string) appsv1alpha1.ObjectReference {
	return appsv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: name}
}

func TestDecideWorkload(t *testing.T) {
	requested := *mt(0)
	cases := map[string]struct {
		binding *bindingView
		want    step
	}{
		"no binding: Failed, ReferencedBindingNotFound": {
			want: step{result: appsv1alpha1.RebalanceFailed, reason: appsv1alpha1.RebalanceObjectNotFound},
		},
		"no request yet: request at the rebalancer's time": {
			binding: &bindingView{lastScheduledTime: mt(-60)},
			want:    step{trigger: mt(0)},
		},
		"an older request: request again": {
			binding: &bindingView{rescheduleTriggeredAt: mt(-120), lastScheduledTime: mt(-60)},
			want:    step{trigger: mt(0)},
		},
		"scheduled in the same second as the request time: one second later, or the scheduler would not take it as new": {
			binding: &bindingView{lastScheduledTime: mt(0)},
			want:    step{trigger: mt(1)},
		},
		"scheduled after the request time: one second after that schedule": {
			binding: &bindingView{lastScheduledTime: mt(5)},
			want:    step{trigger: mt(6)},
		},
		"must not: requested already (a restart after the binding write) is not requested again; waiting": {
			binding: &bindingView{rescheduleTriggeredAt: mt(0), lastScheduledTime: mt(-60)},
		},
		"must not: a later request of someone else is not overwritten; waiting": {
			binding: &bindingView{rescheduleTriggeredAt: mt(30), lastScheduledTime: mt(-60)},
		},
		"the scheduler consumed the request: Successful": {
			binding: &bindingView{rescheduleTriggeredAt: mt(0), lastScheduledTime: mt(0)},
			want:    step{result: appsv1alpha1.RebalanceSuccessful},
		},
		"the scheduler consumed a request made one second late: Successful": {
			binding: &bindingView{rescheduleTriggeredAt: mt(6), lastScheduledTime: mt(8)},
			want:    step{result: appsv1alpha1.RebalanceSuccessful},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := decideWorkload(requested, tc.binding)
			sameTrigger := (got.trigger == nil) == (tc.want.trigger == nil) && (got.trigger == nil || got.trigger.Equal(tc.want.trigger))
			if got.result != tc.want.result || got.reason != tc.want.reason || !sameTrigger {
				t.Errorf("got %+v (trigger %v), want %+v (trigger %v)", got, got.trigger, tc.want, tc.want.trigger)
			}
		})
	}
}

func TestObserveGeneration(t *testing.T) {
	done := appsv1alpha1.ObservedWorkload{Workload: deploy("a"), Result: appsv1alpha1.RebalanceSuccessful}
	failed := appsv1alpha1.ObservedWorkload{Workload: deploy("b"), Result: appsv1alpha1.RebalanceFailed, Reason: appsv1alpha1.RebalanceObjectNotFound}
	cases := map[string]struct {
		status    appsv1alpha1.WorkloadRebalancerStatus
		workloads []appsv1alpha1.ObjectReference
		want      appsv1alpha1.WorkloadRebalancerStatus
	}{
		"first generation: every workload pending, duplicates once": {
			workloads: []appsv1alpha1.ObjectReference{deploy("a"), deploy("b"), deploy("a")},
			want: appsv1alpha1.WorkloadRebalancerStatus{ObservedGeneration: 2, RescheduleTriggeredAt: mt(10),
				ObservedWorkloads: []appsv1alpha1.ObservedWorkload{{Workload: deploy("a")}, {Workload: deploy("b")}}},
		},
		"a workload added: the finished ones keep their result, the new one is pending, finishTime goes": {
			status: appsv1alpha1.WorkloadRebalancerStatus{ObservedGeneration: 1, RescheduleTriggeredAt: mt(0), FinishTime: mt(5),
				ObservedWorkloads: []appsv1alpha1.ObservedWorkload{done, failed}},
			workloads: []appsv1alpha1.ObjectReference{deploy("a"), deploy("b"), deploy("c")},
			want: appsv1alpha1.WorkloadRebalancerStatus{ObservedGeneration: 2, RescheduleTriggeredAt: mt(10),
				ObservedWorkloads: []appsv1alpha1.ObservedWorkload{done, failed, {Workload: deploy("c")}}},
		},
		"a workload removed: the rest finished, finishTime kept": {
			status: appsv1alpha1.WorkloadRebalancerStatus{ObservedGeneration: 1, RescheduleTriggeredAt: mt(0), FinishTime: mt(5),
				ObservedWorkloads: []appsv1alpha1.ObservedWorkload{done, failed}},
			workloads: []appsv1alpha1.ObjectReference{deploy("a")},
			want: appsv1alpha1.WorkloadRebalancerStatus{ObservedGeneration: 2, RescheduleTriggeredAt: mt(10), FinishTime: mt(5),
				ObservedWorkloads: []appsv1alpha1.ObservedWorkload{done}},
		},
		"a pending workload of the old generation stays pending, under the new request time": {
			status: appsv1alpha1.WorkloadRebalancerStatus{ObservedGeneration: 1, RescheduleTriggeredAt: mt(0),
				ObservedWorkloads: []appsv1alpha1.ObservedWorkload{{Workload: deploy("a")}}},
			workloads: []appsv1alpha1.ObjectReference{deploy("a")},
			want: appsv1alpha1.WorkloadRebalancerStatus{ObservedGeneration: 2, RescheduleTriggeredAt: mt(10),
				ObservedWorkloads: []appsv1alpha1.ObservedWorkload{{Workload: deploy("a")}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, dropped := observeGeneration(tc.status, 2, tc.workloads, t0.Add(10*time.Second))
			if dropped != 0 {
				t.Errorf("dropped %d", dropped)
			}
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestObserveGenerationBoundsWorkloads(t *testing.T) {
	var many []appsv1alpha1.ObjectReference
	for i := 0; i < appsv1alpha1.MaxWorkloads+3; i++ {
		many = append(many, deploy(time.Duration(i).String()))
	}
	got, dropped := observeGeneration(appsv1alpha1.WorkloadRebalancerStatus{}, 1, many, t0)
	if len(got.ObservedWorkloads) != appsv1alpha1.MaxWorkloads || dropped != 3 {
		t.Errorf("kept %d, dropped %d", len(got.ObservedWorkloads), dropped)
	}
}

func TestExpiry(t *testing.T) {
	cases := map[string]struct {
		ttl    *int32
		finish *metav1.Time
		want   *metav1.Time
	}{
		"finished with a TTL":               {ttl: ptr.To[int32](60), finish: mt(0), want: mt(60)},
		"TTL 0: at once":                    {ttl: ptr.To[int32](0), finish: mt(0), want: mt(0)},
		"must not: not finished":            {ttl: ptr.To[int32](60)},
		"must not: finished, without a TTL": {finish: mt(0)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			at, ok := expiry(appsv1alpha1.WorkloadRebalancerSpec{TTLSecondsAfterFinished: tc.ttl}, appsv1alpha1.WorkloadRebalancerStatus{FinishTime: tc.finish})
			if ok != (tc.want != nil) || (ok && !at.Equal(tc.want.Time)) {
				t.Errorf("got %v %v, want %v", at, ok, tc.want)
			}
		})
	}
}

func TestFailedOverFrom(t *testing.T) {
	binding := func(name string, clusters []string, history ...workv1alpha2.FailoverHistoryItem) bindingRecord {
		spec := &workv1alpha2.ResourceBindingSpec{Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: name}}
		for _, c := range clusters {
			spec.Clusters = append(spec.Clusters, workv1alpha2.TargetCluster{Name: c})
		}
		return bindingRecord{spec: spec, status: &workv1alpha2.ResourceBindingStatus{FailoverHistory: history}}
	}
	from := func(cluster, reason string) workv1alpha2.FailoverHistoryItem {
		return workv1alpha2.FailoverHistoryItem{FromCluster: cluster, Reason: reason}
	}
	got := failedOverFrom([]bindingRecord{
		binding("moved", []string{"member2"}, from("member1", workv1alpha2.EvictionReasonTaintUntolerated)),
		binding("app", []string{"member3"}, from("member1", workv1alpha2.EvictionReasonApplicationFailure)),
		binding("back-already", []string{"member1"}, from("member1", workv1alpha2.EvictionReasonTaintUntolerated)),
		binding("other-cluster", []string{"member1"}, from("member2", workv1alpha2.EvictionReasonTaintUntolerated)),
		binding("rebalanced-away", []string{"member2"}, from("member1", workv1alpha2.EvictionReasonRebalance)),
		binding("failed-back-away", []string{"member2"}, from("member1", workv1alpha2.EvictionReasonFailback)),
		binding("failback-abandoned", []string{"member2"}, from("member1", workv1alpha2.EvictionReasonFailbackAbandoned)),
		binding("never-failed", []string{"member2"}),
	}, "member1")
	want := []appsv1alpha1.ObjectReference{deploy("app"), deploy("moved")}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestMoving(t *testing.T) {
	rebalanceTask := []workv1alpha2.GracefulEvictionTask{{FromCluster: "member1", Reason: workv1alpha2.EvictionReasonRebalance}}
	failed := func(generation int64) []metav1.Condition {
		return []metav1.Condition{{Type: workv1alpha2.Scheduled, Status: metav1.ConditionFalse, ObservedGeneration: generation}}
	}
	cases := map[string]struct {
		spec        workv1alpha2.ResourceBindingSpec
		status      workv1alpha2.ResourceBindingStatus
		annotations map[string]string
		untaken     bool
		want        bool
	}{
		"nothing asked":                       {},
		"a request not made yet":              {spec: workv1alpha2.ResourceBindingSpec{RescheduleTriggeredAt: mt(10)}, status: workv1alpha2.ResourceBindingStatus{LastScheduledTime: mt(0)}, want: true},
		"a request never scheduled before":    {spec: workv1alpha2.ResourceBindingSpec{RescheduleTriggeredAt: mt(10)}, want: true},
		"a request made":                      {spec: workv1alpha2.ResourceBindingSpec{RescheduleTriggeredAt: mt(10)}, status: workv1alpha2.ResourceBindingStatus{LastScheduledTime: mt(10)}},
		"a Rebalance task":                    {spec: workv1alpha2.ResourceBindingSpec{GracefulEvictionTasks: rebalanceTask}, want: true},
		"a Rebalance task, untaken":           {spec: workv1alpha2.ResourceBindingSpec{GracefulEvictionTasks: rebalanceTask}, untaken: true, want: true},
		"a failover's task":                   {spec: workv1alpha2.ResourceBindingSpec{GracefulEvictionTasks: []workv1alpha2.GracefulEvictionTask{{FromCluster: "member1", Reason: workv1alpha2.EvictionReasonTaintUntolerated}}}},
		"a request no scheduler takes":        {spec: workv1alpha2.ResourceBindingSpec{RescheduleTriggeredAt: mt(10)}, untaken: true},
		"a failback's request":                {spec: workv1alpha2.ResourceBindingSpec{RescheduleTriggeredAt: mt(10)}, annotations: map[string]string{workv1alpha2.RescheduleReasonAnnotation: workv1alpha2.EvictionReasonFailback}},
		"a request placed nowhere":            {spec: workv1alpha2.ResourceBindingSpec{RescheduleTriggeredAt: mt(10)}, status: workv1alpha2.ResourceBindingStatus{Conditions: failed(7)}},
		"a request, an older failure":         {spec: workv1alpha2.ResourceBindingSpec{RescheduleTriggeredAt: mt(10)}, status: workv1alpha2.ResourceBindingStatus{Conditions: failed(6)}, want: true},
		"a Rebalance task, a failed schedule": {spec: workv1alpha2.ResourceBindingSpec{GracefulEvictionTasks: rebalanceTask, RescheduleTriggeredAt: mt(10)}, status: workv1alpha2.ResourceBindingStatus{Conditions: failed(7)}, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Moving(&tc.spec, &tc.status, tc.annotations, 7, !tc.untaken); got != tc.want {
				t.Errorf("Moving = %t, want %t", got, tc.want)
			}
		})
	}
}
