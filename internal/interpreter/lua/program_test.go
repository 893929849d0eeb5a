package lua

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	configv1alpha1 "github.com/lifeboat-dev/lifeboat/api/config/v1alpha1"
)

// TestDefinesTimeoutTwiceIsInvalid: a script whose definition check runs out
// of time may only have met a busy moment, so the check is tried once more;
// one whose top level runs out of time twice is refused (every call would
// run it to the timeout), and the other scripts of the customization stay.
func TestDefinesTimeoutTwiceIsInvalid(t *testing.T) {
	rt := New(Options{Timeout: 20 * time.Millisecond, MaxInstructions: 1 << 62})
	ric := &configv1alpha1.ResourceInterpreterCustomization{}
	ric.Name = "slow"
	ric.Spec.Target = configv1alpha1.CustomizationTarget{APIVersion: "example.io/v1", Kind: "Thing"}
	ric.Spec.Customizations.HealthInterpretation = &configv1alpha1.HealthInterpretation{
		LuaScript: `local t = os.clock() while os.clock() - t < 1 do end function InterpretHealth(o) return true end`,
	}
	ric.Spec.Customizations.StatusReflection = &configv1alpha1.StatusReflection{
		LuaScript: `function Misspelt(o) return {} end`,
	}
	ric.Spec.Customizations.ReplicaResource = &configv1alpha1.ReplicaResourceRequirement{
		LuaScript: `function GetReplicas(o) return 1 end`,
	}
	p := rt.CompileCustomization(ric)
	if err := p.Errors[InterpretHealth]; !errors.Is(err, ErrTimeout) {
		t.Errorf("a top level that never ends in time: %v, want it refused with the time budget", err)
	}
	if p.Errors[InterpretStatus] == nil {
		t.Errorf("a missing function not recorded")
	}
	if p.Scripts[InterpretReplica] == nil || p.Errors[InterpretReplica] != nil {
		t.Errorf("a good script of the same customization was not kept: %v", p.Errors[InterpretReplica])
	}
	_, err := p.Rules(nil).Health(obj(t, "{apiVersion: example.io/v1, kind: Thing}"))
	if !errors.Is(err, ErrTimeout) {
		t.Errorf("call: %v, want the time budget", err)
	}
}

// TestLongErrorsAreCut: a script can raise an error as long as its longest
// string; what a call returns is cut to a few KiB, saying so, and still
// names the budget a run exceeded.
func TestLongErrorsAreCut(t *testing.T) {
	rt := New(Options{})
	s := compile(t, rt, `function InterpretHealth(o) error(string.rep("x", 1e6)) end`)
	_, err := s.InterpretHealth(obj(t, "{apiVersion: v1, kind: X}"))
	if err == nil {
		t.Fatal("want an error")
	}
	if msg := err.Error(); len(msg) > maxErrorBytes+64 || !strings.Contains(msg, "more bytes cut)") || !strings.HasPrefix(msg, "call InterpretHealth: script:1: xxx") {
		t.Errorf("error of %d bytes: %.100q...%q", len(msg), msg, msg[max(len(msg)-40, 0):])
	}

	long := fmt.Errorf("call f: script:1: %s: %w", strings.Repeat("é", 1e4), ErrMemoryBudget)
	cut := limitError(long)
	if !errors.Is(cut, ErrMemoryBudget) || len(cut.Error()) > maxErrorBytes+64 || !utf8.ValidString(cut.Error()) {
		t.Errorf("cut budget error: %v (%d bytes), errors.Is %v", cut, len(cut.Error()), errors.Is(cut, ErrMemoryBudget))
	}
	if short := fmt.Errorf("x: %w", ErrTimeout); limitError(short) != short {
		t.Errorf("a short error was changed")
	}
}
