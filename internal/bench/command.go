package bench

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"github.com/lifeboat-dev/lifeboat/internal/localenv"
)

// MemberControl stops and starts a member cluster's API server, to
// simulate a member outage.
type MemberControl interface {
	Stop(ctx context.Context, member string) error
	Start(ctx context.Context, member string) error
	// Describe says how members are stopped, for the report.
	Describe() string
}

// CommandControl runs shell command templates in which {member} is
// replaced by the member's name (shell-quoted), e.g.
// "lifeboat env stop {member} --state-dir .lifeboat".
type CommandControl struct {
	StopTemplate  string
	StartTemplate string
	// Vars are more placeholders ({kubeconfig}, ...), replaced like {member}.
	Vars map[string]string
}

// Stop runs the stop template for member.
func (c CommandControl) Stop(ctx context.Context, member string) error {
	return runTemplate(ctx, c.StopTemplate, c.vars(member))
}

// Start runs the start template for member.
func (c CommandControl) Start(ctx context.Context, member string) error {
	return runTemplate(ctx, c.StartTemplate, c.vars(member))
}

// Describe returns the templates.
func (c CommandControl) Describe() string {
	return fmt.Sprintf("stop: %s; start: %s", c.StopTemplate, c.StartTemplate)
}

func (c CommandControl) vars(member string) map[string]string {
	vars := map[string]string{"member": member}
	for k, v := range c.Vars {
		vars[k] = v
	}
	return vars
}

func runTemplate(ctx context.Context, tmpl string, vars map[string]string) error {
	if strings.TrimSpace(tmpl) == "" {
		return fmt.Errorf("no command given to stop or start a member (--member-stop-cmd, --member-start-cmd)")
	}
	line := ExpandTemplate(tmpl, vars)
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", line)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("running %q: %w: %s", line, err, strings.TrimSpace(out.String()))
	}
	return nil
}

// ExpandTemplate replaces each {name} of tmpl with the shell-quoted value
// of vars[name]; unknown placeholders are left as they are.
func ExpandTemplate(tmpl string, vars map[string]string) string {
	pairs := make([]string, 0, 2*len(vars))
	for k, v := range vars {
		pairs = append(pairs, "{"+k+"}", ShellQuote(v))
	}
	return strings.NewReplacer(pairs...).Replace(tmpl)
}

// ShellQuote quotes s for a POSIX shell, leaving plain words as they are.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@,+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// LocalEnvControl kills and starts members of the local environment in
// Dir, as `lifeboat env stop --kill` and `lifeboat env start` do.
type LocalEnvControl struct {
	Dir string
}

// Stop kills member's API server by its recorded PID (SIGKILL): the
// scenario is a member that fails, not one that is shut down.
func (l LocalEnvControl) Stop(_ context.Context, member string) error {
	return localenv.StopAPIServer(l.Dir, member, true)
}

// Start starts member's API server again and waits until it is ready.
func (l LocalEnvControl) Start(ctx context.Context, member string) error {
	return localenv.StartAPIServer(ctx, l.Dir, member)
}

// Describe names the environment.
func (l LocalEnvControl) Describe() string {
	return "local environment " + l.Dir + " (lifeboat env stop --kill|start)"
}

// ParsePIDs parses NAME=PID or PID items (a PID alone is named pid-PID).
func ParsePIDs(items []string) (map[string]int, error) {
	out := map[string]int{}
	for _, it := range items {
		name, p, ok := strings.Cut(it, "=")
		if !ok {
			name, p = "pid-"+it, it
		}
		pid, err := strconv.Atoi(p)
		if err != nil || pid <= 0 || name == "" {
			return nil, fmt.Errorf("%q: want NAME=PID or PID", it)
		}
		out[name] = pid
	}
	return out, nil
}

// ParsePairs parses KEY=VALUE items.
func ParsePairs(items []string) (map[string]string, error) {
	out := map[string]string{}
	for _, it := range items {
		k, v, ok := strings.Cut(it, "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("%q: want KEY=VALUE", it)
		}
		out[k] = v
	}
	return out, nil
}
