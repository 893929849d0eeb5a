package bench

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Figures of the footprint scenario.
const (
	FigFootRSSTotal    = "rss-total"
	FigFootCPUTotal    = "cpu-seconds-total"
	FigFootIdleCPU     = "idle-cpu-per-minute"
	FigFootSteadyRSS   = "steady-rss-total"
	FigFootSteadyIdle  = "steady-idle-cpu-per-minute"
	figFootRSSPrefix   = "rss:"
	settleBeforeSteady = 30 * time.Second
)

const mib = 1 << 20

func (b *Bench) footprintFigures() []FigureSpec {
	specs := []FigureSpec{
		{ID: FigFootRSSTotal, Name: "controller RSS after the scenarios, all processes", Unit: UnitMiB,
			Target: &Target{Stat: "max", Limit: 100, Reference: "Karmada 134 MiB + 58 MiB"}},
	}
	for _, name := range b.controllerNames() {
		specs = append(specs, FigureSpec{ID: figFootRSSPrefix + name, Name: "RSS of " + name, Unit: UnitMiB})
	}
	specs = append(specs,
		FigureSpec{ID: FigFootCPUTotal, Name: "controller CPU time since start, all processes", Unit: UnitCPU},
		FigureSpec{ID: FigFootIdleCPU, Name: fmt.Sprintf("idle CPU per minute (window %s)", b.Options.IdleWindow), Unit: UnitCPUPerMin},
	)
	if n := b.Options.SteadyBindings; n > 0 {
		specs = append(specs,
			FigureSpec{ID: FigFootSteadyRSS, Name: fmt.Sprintf("RSS at %d bindings over %d members", n, len(b.Env.Members)), Unit: UnitMiB,
				Target: &Target{Stat: "max", Limit: 200, Reference: "5,000 bindings ≤ 200 MiB"}},
			FigureSpec{ID: FigFootSteadyIdle, Name: fmt.Sprintf("idle CPU per minute at %d bindings", n), Unit: UnitCPUPerMin,
				Target: &Target{Stat: "max", Limit: 0.25, Reference: "5,000 bindings ≤ 0.25"}},
		)
	}
	return specs
}

func (b *Bench) controllerNames() []string {
	names := make([]string, 0, len(b.Options.Controllers))
	for n := range b.Options.Controllers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (b *Bench) footprint(ctx context.Context) *ScenarioResult {
	settings := map[string]string{"idleWindow": b.Options.IdleWindow.String()}
	for name, pid := range b.Options.Controllers {
		settings["pid:"+name] = strconv.Itoa(pid)
	}
	if len(b.Options.Controllers) == 0 {
		return &ScenarioResult{Name: ScenarioFootprint, Settings: settings,
			Skipped: "no controller processes to measure: give --state-dir of a local environment or --controller-pids"}
	}
	if b.Options.SteadyBindings > 0 {
		settings["steadyBindings"] = strconv.Itoa(b.Options.SteadyBindings)
	}
	res := b.runScenario(ctx, ScenarioFootprint, settings, nil, b.footprintRun)
	if b.Options.SteadyBindings > 0 && ctx.Err() == nil {
		r := &RunResult{Index: len(res.Runs) + 1, Started: b.Clock.Now(), Values: map[string][]Value{}}
		b.logf("footprint: steady state at %d bindings", b.Options.SteadyBindings)
		if err := b.steadyRun(ctx, r); err != nil {
			r.Error = err.Error()
			b.logf("footprint steady state FAILED: %v", err)
		}
		r.Duration = b.Clock.Since(r.Started)
		res.Runs = append(res.Runs, r)
	}
	res.Figures = Pool(b.footprintFigures(), res.Runs)
	return res
}

// footprintRun samples the controllers' RSS and CPU time, lets them idle
// for IdleWindow and samples their CPU time again.
func (b *Bench) footprintRun(ctx context.Context, r *RunResult) error {
	rss, cpu, err := b.sampleControllers(r, true)
	if err != nil {
		return err
	}
	r.Add(FigFootRSSTotal, "", float64(rss)/mib)
	r.Add(FigFootCPUTotal, "", cpu)
	idle, err := b.idleCPU(ctx, cpu)
	if err != nil {
		return err
	}
	r.Add(FigFootIdleCPU, "", idle)
	return nil
}

func (b *Bench) idleCPU(ctx context.Context, before float64) (float64, error) {
	b.logf("footprint: idling for %s", b.Options.IdleWindow)
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-b.Clock.After(b.Options.IdleWindow):
	}
	_, after, err := b.sampleControllers(nil, false)
	if err != nil {
		return 0, err
	}
	return (after - before) / b.Options.IdleWindow.Minutes(), nil
}

// sampleControllers returns the total RSS and CPU seconds of the
// controller processes, recording each one's RSS in r when perProcess.
func (b *Bench) sampleControllers(r *RunResult, perProcess bool) (uint64, float64, error) {
	var rss uint64
	var cpu float64
	for _, name := range b.controllerNames() {
		s, err := ReadProc(b.Options.Controllers[name])
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", name, err)
		}
		rss += s.RSSBytes
		cpu += s.CPUSeconds
		if perProcess {
			r.Add(figFootRSSPrefix+name, "", float64(s.RSSBytes)/mib)
		}
	}
	return rss, cpu, nil
}

// steadyRun creates SteadyBindings single-replica Deployments, a share
// pinned to each member, waits until every binding is Healthy and settled,
// and measures RSS and idle CPU.
func (b *Bench) steadyRun(ctx context.Context, r *RunResult) error {
	ns, cleanup, err := b.newNamespace(ctx, "steady", r)
	if err != nil {
		return err
	}
	defer cleanup()
	var objs []client.Object
	var names []string
	for i, m := range b.Env.Members {
		group := "steady-" + strconv.Itoa(i)
		p, err := decodePolicy(pinnedPolicyYAML(group, group, m, others(b.Env.Members, m)), ns)
		if err != nil {
			return err
		}
		if err := b.Env.ControlPlane.Create(ctx, p); err != nil {
			return fmt.Errorf("creating policy %s: %w", group, err)
		}
	}
	b.Clock.Sleep(time.Second)
	for i := 0; i < b.Options.SteadyBindings; i++ {
		name := fmt.Sprintf("steady-%05d", i)
		d, err := decodeDeployment(deploymentYAML(name, "steady-"+strconv.Itoa(i%len(b.Env.Members)), 1), ns)
		if err != nil {
			return err
		}
		objs = append(objs, d)
		names = append(names, name)
	}
	b.logf("creating %d Deployments over %d members", len(objs), len(b.Env.Members))
	if err := createAll(ctx, b.Env.ControlPlane, objs); err != nil {
		return err
	}
	if err := b.tracker.WaitFor(ctx, b.timeout(len(names)), fmt.Sprintf("%d bindings Healthy", len(names)), b.progressLine, func() (bool, string) {
		n := countBindings(ns, names, b.healthyElsewhere(""))
		return n == len(names), fmt.Sprintf("%d/%d Healthy", n, len(names))
	}); err != nil {
		return err
	}
	b.logf("all Healthy; settling for %s", settleBeforeSteady)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-b.Clock.After(settleBeforeSteady):
	}
	rss, cpu, err := b.sampleControllers(r, false)
	if err != nil {
		return err
	}
	r.Add(FigFootSteadyRSS, "", float64(rss)/mib)
	idle, err := b.idleCPU(ctx, cpu)
	if err != nil {
		return err
	}
	r.Add(FigFootSteadyIdle, "", idle)
	rss2, _, err := b.sampleControllers(nil, false)
	if err == nil {
		r.Add(FigFootSteadyRSS, "", float64(rss2)/mib)
	}
	return nil
}
