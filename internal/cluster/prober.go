package cluster

import (
	"context"
	"sync"
	"time"
)

// probes runs the members' probes off the reconcile workers. A probe of a
// member cut off by a network partition waits its whole timeout; run in a
// worker, a few such members would keep the others from being probed within
// the period, which the storm guard's settling window counts on. Each probe
// runs in its own goroutine, at most one per cluster, and done is called
// with the cluster's name when it ends, so that a reconcile records the
// result.
type probes struct {
	done func(name string)

	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
	byName map[string]*probeRun
}

// probeRun is one probe of a cluster, running or ended.
type probeRun struct {
	// started is when the probe started, the time its result is written
	// for (see StatusReconciler.Reconcile).
	started time.Time
	ended   bool
	result  ProbeResult
	cancel  context.CancelFunc
}

func newProbes(done func(name string)) *probes {
	ctx, cancel := context.WithCancel(context.Background())
	return &probes{done: done, ctx: ctx, cancel: cancel, byName: map[string]*probeRun{}}
}

// take returns the ended probe of the cluster and forgets it; nil, true
// while one is running; nil, false when there is none.
func (p *probes) take(name string) (run *probeRun, running bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	run, ok := p.byName[name]
	switch {
	case !ok:
		return nil, false
	case !run.ended:
		return nil, true
	}
	delete(p.byName, name)
	return run, false
}

// start runs probe for the cluster in its own goroutine unless one is
// running or waiting to be taken already. The probe's context carries the
// values of ctx and ends when the cluster is forgotten or on Stop, not
// when the reconcile that started it returns.
func (p *probes) start(ctx context.Context, name string, started time.Time, probe func(context.Context) ProbeResult) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.byName[name]; ok || p.ctx.Err() != nil {
		return
	}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(p.ctx, cancel)
	run := &probeRun{started: started, cancel: cancel}
	p.byName[name] = run
	go func() {
		res := probe(pctx)
		stop()
		cancel()
		p.mu.Lock()
		current := p.byName[name] == run
		run.ended, run.result = true, res
		p.mu.Unlock()
		if current && p.done != nil {
			p.done(name)
		}
	}()
}

// forget cancels the cluster's probe and drops its result.
func (p *probes) forget(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if run, ok := p.byName[name]; ok {
		run.cancel()
		delete(p.byName, name)
	}
}

// Stop cancels every probe and starts no more.
func (p *probes) Stop() { p.cancel() }
