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
	FigFootRSSTotal     = "rss-total"
	FigFootCPUTotal     = "cpu-seconds-total"
	FigFootIdleCPU      = "idle-cpu-per-minute"
	FigFootSteadyRSS    = "steady-rss-total"
	FigFootSteadyIdle   = "steady-idle-cpu-per-minute"
	FigFootSteadySettle = "steady-settle-seconds"
	figFootRSSPrefix    = "rss:"
)

// How the steady state is reached after the last binding is Healthy: at
// least settleBeforeSteady, then until the controllers use less than
// quietCPU a minute over a quietWindow, for at most settleMax. The last
// Healthy binding is not the end of the controllers' work (template
// statuses, the last summaries of the members), and an idle window that
// starts in that tail measures the tail.
const (
	settleBeforeSteady = 30 * time.Second
	quietWindow        = 10 * time.Second
	quietCPU           = 1.0 // CPU-seconds a minute: four times the idle target
	settleMax          = 5 * time.Minute
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
			FigureSpec{ID: FigFootSteadySettle, Name: "last Healthy → controllers quiet (settle before the idle window)", Unit: UnitSeconds},
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
	if err := b.wait(ctx, b.Options.IdleWindow); err != nil {
		return 0, err
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
	settled, err := b.settle(ctx, func() (float64, error) {
		_, cpu, err := b.sampleControllers(nil, false)
		return cpu, err
	})
	if err != nil {
		return err
	}
	r.Add(FigFootSteadySettle, "", settled.Seconds())
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

// settle waits after the last binding is Healthy until the controllers are
// quiet (see quietCPU), reading their CPU seconds with cpu, and returns how
// long it waited. Without controller processes to watch it waits
// settleBeforeSteady.
func (b *Bench) settle(ctx context.Context, cpu func() (float64, error)) (time.Duration, error) {
	start := b.Clock.Now()
	b.logf("all Healthy; settling for at least %s, until the controllers use less than %.1f CPU-s a minute", settleBeforeSteady, quietCPU)
	if err := b.wait(ctx, settleBeforeSteady); err != nil {
		return 0, err
	}
	if len(b.Options.Controllers) == 0 {
		return b.Clock.Since(start), nil
	}
	last, err := cpu()
	if err != nil {
		return 0, err
	}
	for {
		if err := b.wait(ctx, quietWindow); err != nil {
			return 0, err
		}
		now, err := cpu()
		if err != nil {
			return 0, err
		}
		rate := (now - last) / quietWindow.Minutes()
		last = now
		waited := b.Clock.Since(start)
		if rate < quietCPU {
			b.logf("controllers quiet after %s (%.2f CPU-s a minute)", waited.Round(time.Second), rate)
			return waited, nil
		}
		if waited >= settleMax {
			b.logf("controllers still busy after %s (%.2f CPU-s a minute); measuring anyway", waited.Round(time.Second), rate)
			return waited, nil
		}
	}
}

// wait waits d on the bench's clock, or until ctx ends.
func (b *Bench) wait(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-b.Clock.After(d):
		return nil
	}
}
