package failback

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// The workload was moved back to member1; member1 failed again before the
// copy there was Healthy, its own eviction undid the failback (member2,
// whose copy was kept, is the placement again) and member2's copy is
// Healthy. The failback did not complete, whatever the Failback entry
// says: a history written before its healthy time was checked against the
// placement still carries one.
func TestProgressNotCompletedWhenTheClusterFailedAgain(t *testing.T) {
	b := following(func(b *workv1alpha2.ResourceBinding) {
		last := metav1.NewTime(at(20))
		b.Status.LastScheduledTime = &last
		b.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member2", Replicas: 2}}
		b.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: "member1", Reason: workv1alpha2.EvictionReasonTaintUntolerated}}
		b.Status.FailoverHistory = append(b.Status.FailoverHistory,
			workv1alpha2.FailoverHistoryItem{Time: metav1.NewTime(at(1)), Reason: workv1alpha2.EvictionReasonFailback, FromCluster: "member2",
				ClustersBefore: []string{"member2"}, ClustersAfter: []string{"member1"}, ReplacementHealthyTime: &metav1.Time{Time: at(25)}},
			workv1alpha2.FailoverHistoryItem{Time: metav1.NewTime(at(10)), Reason: workv1alpha2.EvictionReasonTaintUntolerated, FromCluster: "member1",
				ClustersBefore: []string{"member1"}, ClustersAfter: []string{"member2"}, ReplacementHealthyTime: &metav1.Time{Time: at(25)}})
	})
	f, err := parseInFlight(b.Annotations[FailbackAnnotation])
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := progress(&b.Spec, &b.Status, f); got != Incomplete {
		t.Errorf("progress %s, want %s: member1 failed again and the workload runs on member2", got, Incomplete)
	}

	// Back on member1 and Healthy there: completed.
	b.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 2}}
	b.Spec.GracefulEvictionTasks = nil
	b.Status.FailoverHistory = b.Status.FailoverHistory[:len(b.Status.FailoverHistory)-1]
	if got, at := progress(&b.Spec, &b.Status, f); got != Completed || !at.Equal(b.Status.FailoverHistory[len(b.Status.FailoverHistory)-1].ReplacementHealthyTime.Time) {
		t.Errorf("progress %s at %s, want Completed", got, at)
	}
}
