package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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
	figFootCPUPrefix    = "cpu:"
	figFootIdlePrefix   = "idle:"
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
	specs = append(specs,
		FigureSpec{ID: FigFootCPUTotal, Name: "controller CPU time since start, all processes", Unit: UnitCPU},
		FigureSpec{ID: FigFootIdleCPU, Name: fmt.Sprintf("idle CPU per minute (window %s), all processes", b.Options.IdleWindow), Unit: UnitCPUPerMin},
	)
	for _, name := range b.processNames() {
		of := name
		if _, extra := b.Options.ExtraProcesses[name]; extra {
			of += " (not in the totals)"
		}
		specs = append(specs,
			FigureSpec{ID: figFootRSSPrefix + name, Name: "RSS of " + of, Unit: UnitMiB},
			FigureSpec{ID: figFootCPUPrefix + name, Name: "CPU time since start of " + of, Unit: UnitCPU},
			FigureSpec{ID: figFootIdlePrefix + name, Name: "idle CPU per minute of " + of, Unit: UnitCPUPerMin},
		)
	}
	if n := b.Options.SteadyBindings; n > 0 {
		rss, idle := steadyTargets(n)
		specs = append(specs,
			FigureSpec{ID: FigFootSteadyRSS, Name: fmt.Sprintf("RSS at %d bindings over %d members", n, len(b.Env.Members)), Unit: UnitMiB, Target: rss},
			FigureSpec{ID: FigFootSteadyIdle, Name: fmt.Sprintf("idle CPU per minute at %d bindings", n), Unit: UnitCPUPerMin, Target: idle},
			FigureSpec{ID: FigFootSteadySettle, Name: "last Healthy → controllers quiet (settle before the idle window)", Unit: UnitSeconds},
		)
	}
	return specs
}

// steadyTargets are the steady state's targets for n bindings: those set
// at 5,000 and at 10,000 bindings (over ten members), none for other sizes.
func steadyTargets(n int) (rss, idle *Target) {
	switch {
	case n >= 10000:
		return &Target{Stat: "max", Limit: 300, Reference: "10 members × 10,000 bindings ≤ 300 MiB"},
			&Target{Stat: "max", Limit: 0.3, Reference: "10,000 bindings ≤ 0.3"}
	case n >= 5000:
		return &Target{Stat: "max", Limit: 200, Reference: "5,000 bindings ≤ 200 MiB"},
			&Target{Stat: "max", Limit: 0.25, Reference: "5,000 bindings ≤ 0.25"}
	}
	return nil, nil
}

func (b *Bench) controllerNames() []string {
	names := make([]string, 0, len(b.Options.Controllers))
	for n := range b.Options.Controllers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// processNames are the controllers, then the extra processes, each sorted.
func (b *Bench) processNames() []string {
	extra := make([]string, 0, len(b.Options.ExtraProcesses))
	for n := range b.Options.ExtraProcesses {
		extra = append(extra, n)
	}
	sort.Strings(extra)
	return append(b.controllerNames(), extra...)
}

// pidOf is the PID of a controller or extra process.
func (b *Bench) pidOf(name string) int {
	if pid, ok := b.Options.Controllers[name]; ok {
		return pid
	}
	return b.Options.ExtraProcesses[name]
}

func (b *Bench) footprint(ctx context.Context) *ScenarioResult {
	settings := map[string]string{"idleWindow": b.Options.IdleWindow.String()}
	for name, pid := range b.Options.Controllers {
		settings["pid:"+name] = strconv.Itoa(pid)
	}
	for name, pid := range b.Options.ExtraProcesses {
		settings["pid:"+name+" (not in the totals)"] = strconv.Itoa(pid)
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

// footprintRun samples the RSS and CPU time of the controllers (summed)
// and the extra processes (each on its own), lets them idle for IdleWindow
// and samples their CPU time again.
func (b *Bench) footprintRun(ctx context.Context, r *RunResult) error {
	before, err := b.sampleProcesses()
	if err != nil {
		return err
	}
	rss, cpu := b.controllerTotals(before)
	r.Add(FigFootRSSTotal, "", float64(rss)/mib)
	r.Add(FigFootCPUTotal, "", cpu)
	for _, name := range b.processNames() {
		r.Add(figFootRSSPrefix+name, "", float64(before[name].RSSBytes)/mib)
		r.Add(figFootCPUPrefix+name, "", before[name].CPUSeconds)
	}
	b.logf("footprint: idling for %s", b.Options.IdleWindow)
	if err := b.wait(ctx, b.Options.IdleWindow); err != nil {
		return err
	}
	after, err := b.sampleProcesses()
	if err != nil {
		return err
	}
	perMinute := func(from, to float64) float64 { return (to - from) / b.Options.IdleWindow.Minutes() }
	_, cpuAfter := b.controllerTotals(after)
	r.Add(FigFootIdleCPU, "", perMinute(cpu, cpuAfter))
	for _, name := range b.processNames() {
		r.Add(figFootIdlePrefix+name, "", perMinute(before[name].CPUSeconds, after[name].CPUSeconds))
	}
	return nil
}

// sampleProcesses samples every controller and extra process by name.
func (b *Bench) sampleProcesses() (map[string]ProcSample, error) {
	out := map[string]ProcSample{}
	for _, name := range b.processNames() {
		pid := b.pidOf(name)
		s, err := ReadProc(pid)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s (PID %d) is no longer running: it exited, or was restarted, during the run, so what was sampled before is not the same process's; see its log", name, pid)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = s
	}
	return out, nil
}

// controllerTotals sums the controllers' samples; extra processes are not
// counted.
func (b *Bench) controllerTotals(samples map[string]ProcSample) (uint64, float64) {
	var rss uint64
	var cpu float64
	for _, name := range b.controllerNames() {
		rss += samples[name].RSSBytes
		cpu += samples[name].CPUSeconds
	}
	return rss, cpu
}

func (b *Bench) idleCPU(ctx context.Context, before float64) (float64, error) {
	b.logf("footprint: idling for %s", b.Options.IdleWindow)
	if err := b.wait(ctx, b.Options.IdleWindow); err != nil {
		return 0, err
	}
	_, after, err := b.sampleControllers()
	if err != nil {
		return 0, err
	}
	return (after - before) / b.Options.IdleWindow.Minutes(), nil
}

// sampleControllers returns the total RSS and CPU seconds of the
// controller processes.
func (b *Bench) sampleControllers() (uint64, float64, error) {
	samples, err := b.sampleProcesses()
	if err != nil {
		return 0, 0, err
	}
	rss, cpu := b.controllerTotals(samples)
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
		_, cpu, err := b.sampleControllers()
		return cpu, err
	})
	if err != nil {
		return err
	}
	r.Add(FigFootSteadySettle, "", settled.Seconds())
	rss, cpu, err := b.sampleControllers()
	if err != nil {
		return err
	}
	r.Add(FigFootSteadyRSS, "", float64(rss)/mib)
	idle, err := b.idleCPU(ctx, cpu)
	if err != nil {
		return err
	}
	r.Add(FigFootSteadyIdle, "", idle)
	rss2, _, err := b.sampleControllers()
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
