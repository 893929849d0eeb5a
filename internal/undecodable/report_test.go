package undecodable

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
)

// An object that stays undecodable is reported once per interval, and at
// once when it changes or after it was fixed or deleted.
func TestReportsAreRateLimitedPerObject(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	logs, events := &logLines{}, &eventLog{}
	r := newReporter(logs.logger(), clock, 10*time.Minute)
	r.setRecorder(events)
	standIn := func(name, rv string) *policyv1alpha1.PropagationPolicy {
		return &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	skip := func(name, rv string) {
		p := standIn(name, rv)
		r.skipped(policyGVK, p, p, "json: cannot unmarshal number 3000000000", watch.Modified, drop, nil)
	}
	reported := func(name string) int {
		return logs.count(`"msg"="object cannot be decoded; skipped"`, `"name"="`+name+`"`)
	}

	skip("a", "1")
	skip("a", "1") // the next relist, at once
	clock.SetTime(clock.Now().Add(9 * time.Minute))
	skip("a", "1")
	if n := reported("a"); n != 1 {
		t.Fatalf("reported a %d times within the interval, want 1:\n%s", n, logs)
	}
	skip("b", "1") // another object is its own
	if n := reported("b"); n != 1 {
		t.Errorf("b reported %d times, want 1", n)
	}
	clock.SetTime(clock.Now().Add(time.Minute))
	skip("a", "1")
	if n := reported("a"); n != 2 {
		t.Errorf("reported a %d times once the interval passed, want 2", n)
	}
	skip("a", "2") // changed, still undecodable
	if n := reported("a"); n != 3 {
		t.Errorf("reported a %d times after it changed, want 3", n)
	}
	r.forget(reportKey{gk: policyGVK.GroupKind(), namespace: "ns", name: "a"})
	skip("a", "2")
	if n := reported("a"); n != 4 {
		t.Errorf("reported a %d times after it was forgotten, want 4", n)
	}
	evs := events.all()
	if len(evs) != 5 {
		t.Errorf("%d events, want one per report (5): %q", len(evs), evs)
	}
	for _, e := range evs {
		if !strings.HasPrefix(e, "Warning DecodeFailed ns/") {
			t.Errorf("event %q: want a Warning DecodeFailed on the object", e)
		}
	}
}
