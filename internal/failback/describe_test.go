package failback

import (
	"testing"
	"time"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
)

func TestDescribe(t *testing.T) {
	cases := map[string]struct {
		binding     *binding
		annotations map[string]string
		clusters    []*clusterv1alpha1.Cluster
		want        string
		cluster     string
		at          time.Time
		reason      string
	}{
		"an open failback is Moving, whatever Decide would say": {
			binding:     makeBinding("a"),
			annotations: map[string]string{FailbackAnnotation: inFlight{cluster: "member1", readySince: at(-700)}.String()},
			clusters:    []*clusterv1alpha1.Cluster{notReady("member1"), readySince("member2", -7200)},
			want:        StateMoving, cluster: "member1", reason: "current copy stays",
		},
		"a broken annotation is still Moving, and says why": {
			binding:     makeBinding("a"),
			annotations: map[string]string{FailbackAnnotation: "member1"},
			want:        StateMoving, reason: "want <cluster>,<time>",
		},
		"stable for the window: Due": {
			binding:  makeBinding("a"),
			clusters: []*clusterv1alpha1.Cluster{readySince("member1", -600), readySince("member2", -7200)},
			want:     StateDue, cluster: "member1", reason: "--failback-max-concurrent",
		},
		"Ready for less than the window: Waiting until it ends": {
			binding:  makeBinding("a"),
			clusters: []*clusterv1alpha1.Cluster{readySince("member1", -100), readySince("member2", -7200)},
			want:     StateWaiting, cluster: "member1", at: at(500), reason: "Ready only since",
		},
		"not configured: None": {
			binding:  makeBinding("a").noFailback(),
			clusters: []*clusterv1alpha1.Cluster{readySince("member1", -600), readySince("member2", -7200)},
			want:     StateNone, reason: "not configured",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := tc.binding.obj()
			got := Describe(b.Labels, tc.annotations, &b.Spec, &b.Status, tc.clusters, t0)
			if got.State != tc.want || got.Cluster != tc.cluster || !got.At.Equal(tc.at) || !contains(got.Reason, tc.reason) {
				t.Errorf("Describe = %+v, want state %s, cluster %q, at %s, a reason with %q", got, tc.want, tc.cluster, tc.at, tc.reason)
			}
		})
	}
}
