package bench

import (
	"os"
	"strings"
	"testing"
)

func TestCPUBetween(t *testing.T) {
	before := map[string]cpuSample{
		"apiserver":  {PID: 10, Seconds: 5},
		"controller": {PID: 11, Seconds: 2},
		"restarted":  {PID: 12, Seconds: 40},
		"stopped":    {PID: 13, Seconds: 1},
		"idle":       {PID: 14, Seconds: 3},
	}
	after := map[string]cpuSample{
		"apiserver":  {PID: 10, Seconds: 35},
		"controller": {PID: 11, Seconds: 12},
		"restarted":  {PID: 99, Seconds: 41}, // another process now: not counted
		"idle":       {PID: 14, Seconds: 3},
		"new":        {PID: 15, Seconds: 7}, // not sampled before: not counted
	}
	uses, total := cpuBetween(before, after)
	if total != 40 {
		t.Errorf("total %g CPU-s, want 40 (apiserver 30 + controller 10)", total)
	}
	var names []string
	for _, u := range uses {
		names = append(names, u.Name)
	}
	if got := strings.Join(names, ","); got != "apiserver,controller,idle" {
		t.Errorf("processes %s, want apiserver,controller,idle (most first)", got)
	}
	got := describeCPU("CPU", uses, total)
	want := "CPU: 40.0 CPU-s, apiserver 30.0 (75%), controller 10.0 (25%)"
	if got != want {
		t.Errorf("describeCPU = %q, want %q (processes under 1%% left out)", got, want)
	}
	if got := describeCPU("CPU", nil, 0); got != "CPU: no CPU time measured" {
		t.Errorf("describeCPU of nothing = %q", got)
	}
}

func TestMembersCPU(t *testing.T) {
	uses := []cpuUse{
		{Name: "lifeboat-apiserver", Seconds: 4},
		{Name: "member1-apiserver", Seconds: 3},
		{Name: "member1-kwok", Seconds: 0.5},
		{Name: "member10-scheduler", Seconds: 0.25},
		{Name: "member2-controller-manager", Seconds: 1},
		{Name: "etcd", Seconds: 2},
		{Name: selfProcess, Seconds: 1},
	}
	for _, tc := range []struct {
		name    string
		members []string
		want    float64
		wantOK  bool
	}{
		{name: "every member's components", members: []string{"member1", "member2", "member3"}, want: 4.5, wantOK: true},
		{name: "member1 is no prefix of member10", members: []string{"member1"}, want: 3.5, wantOK: true},
		{name: "ten members", members: []string{"member1", "member10"}, want: 3.75, wantOK: true},
		{name: "members the bench cannot see", members: []string{"cluster-a", "cluster-b"}, wantOK: false},
		{name: "no members", wantOK: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := membersCPU(uses, tc.members)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("membersCPU(%v) = %g, %t; want %g, %t", tc.members, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestAccountedProcessesIncludeTheBenchAndTheEnvironment(t *testing.T) {
	b := &Bench{Options: Options{
		Controllers:    map[string]int{"cm": 1},
		ExtraProcesses: map[string]int{"webhook": 2},
		EnvProcesses:   func() map[string]int { return map[string]int{"etcd": 3, "cm": 4} },
	}}
	got := b.accountedProcesses()
	want := map[string]int{selfProcess: os.Getpid(), "cm": 1, "webhook": 2, "etcd": 3}
	if len(got) != len(want) {
		t.Fatalf("accounted %v, want %v", got, want)
	}
	for name, pid := range want {
		if got[name] != pid {
			t.Errorf("%s: PID %d, want %d (a controller's PID as given wins)", name, got[name], pid)
		}
	}
}

const queueExposition = `# HELP workqueue_queue_duration_seconds How long in seconds an item stays in workqueue before being requested
# TYPE workqueue_queue_duration_seconds histogram
workqueue_queue_duration_seconds_bucket{controller="binding-status",name="binding-status",le="1"} 10
workqueue_queue_duration_seconds_bucket{controller="binding-status",name="binding-status",le="+Inf"} 20
workqueue_queue_duration_seconds_sum{controller="binding-status",name="binding-status"} 120
workqueue_queue_duration_seconds_count{controller="binding-status",name="binding-status"} 20
workqueue_queue_duration_seconds_sum{controller="execution",name="execution"} 1
workqueue_queue_duration_seconds_count{controller="execution",name="execution"} 110
workqueue_queue_duration_seconds_sum{controller="quiet",name="quiet"} 3
workqueue_queue_duration_seconds_count{controller="quiet",name="quiet"} 4
# HELP workqueue_work_duration_seconds How long in seconds processing an item from workqueue takes.
# TYPE workqueue_work_duration_seconds histogram
workqueue_work_duration_seconds_sum{controller="binding-status",name="binding-status"} 5
workqueue_work_duration_seconds_count{controller="binding-status",name="binding-status"} 20
workqueue_work_duration_seconds_sum{controller="execution",name="execution"} 2.2
workqueue_work_duration_seconds_count{controller="execution",name="execution"} 110
`

func TestDescribeQueues(t *testing.T) {
	after, err := queueStatsOf(queueExposition)
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]queueStats{
		"binding-status": {WaitSum: 20, WaitCount: 10, WorkSum: 1, WorkCount: 10},
		"execution":      {WaitSum: 0.5, WaitCount: 10, WorkSum: 0.2, WorkCount: 10},
		"quiet":          {WaitSum: 3, WaitCount: 4},
	}
	got := describeQueues("queues", before, after, 5)
	want := "queues (mean per item): binding-status 10.00 s wait, 400 ms work, 10 items; execution 0.01 s wait, 20 ms work, 100 items"
	if got != want {
		t.Errorf("describeQueues =\n%q\nwant\n%q (longest wait first, idle queues left out)", got, want)
	}
	if got := describeQueues("queues", before, after, 1); strings.Contains(got, "execution") {
		t.Errorf("describeQueues top 1 = %q, want binding-status only", got)
	}
	if got := describeQueues("queues", after, after, 5); got != "queues: no work queued" {
		t.Errorf("describeQueues with nothing between = %q", got)
	}
	// A histogram that started again (too many native buckets) holds less
	// than before: named, not measured, never a negative or a silent gap.
	restarted := map[string]queueStats{
		"binding-status": {WaitSum: 500, WaitCount: 30, WorkSum: 10, WorkCount: 30},
		"execution":      {WaitSum: 0.5, WaitCount: 10, WorkSum: 0.2, WorkCount: 10},
		"quiet":          {WaitSum: 3, WaitCount: 4},
	}
	got = describeQueues("queues", restarted, after, 5)
	want = "queues (mean per item): execution 0.01 s wait, 20 ms work, 100 items; not measured, their metrics started again during the window: binding-status"
	if got != want {
		t.Errorf("describeQueues across a reset =\n%q\nwant\n%q", got, want)
	}
}

func TestSumByLabelRefusesAnUnreadableLine(t *testing.T) {
	if _, err := sumByLabel("workqueue_queue_duration_seconds_sum{name=\"x\"", "workqueue_queue_duration_seconds_sum", "name"); err == nil {
		t.Error("sumByLabel of a line without its closing brace: no error")
	}
	if _, err := sumByLabel("workqueue_queue_duration_seconds_sum{name=\"x\"} many", "workqueue_queue_duration_seconds_sum", "name"); err == nil {
		t.Error("sumByLabel of a value that is not a number: no error")
	}
}
