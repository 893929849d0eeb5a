package bench

import "testing"

func TestReconcileTotal(t *testing.T) {
	exposition := `# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="rb-failback",result="error"} 1
controller_runtime_reconcile_total{controller="rb-failback",result="success"} 12
controller_runtime_reconcile_total{controller="crb-failback",result="requeue_after"} 3
controller_runtime_reconcile_total{controller="workload-rebalancer",result="success"} 2
controller_runtime_reconcile_total{controller="rb-failback-extra",result="success"} 100
controller_runtime_reconcile_total{controller="scheduler-resourcebinding",result="success"} 500
controller_runtime_reconcile_errors_total{controller="rb-failback"} 1
`
	got, err := reconcileTotal(exposition, idleControllers)
	if err != nil {
		t.Fatal(err)
	}
	if got != 18 {
		t.Errorf("reconcileTotal = %g, want 18 (only the named controllers, every result)", got)
	}
	if got, err := reconcileTotal("", idleControllers); err != nil || got != 0 {
		t.Errorf("empty exposition: %g, %v", got, err)
	}
	if _, err := reconcileTotal(`controller_runtime_reconcile_total{controller="rb-failback" 1`, idleControllers); err == nil {
		t.Error("an unreadable line was accepted")
	}
	if _, err := reconcileTotal(`controller_runtime_reconcile_total{controller="rb-failback"} x`, idleControllers); err == nil {
		t.Error("a value that is no number was accepted")
	}
}
