package lua

import (
	"errors"
	"testing"
	"time"

	configv1alpha1 "github.com/lifeboat-dev/lifeboat/api/config/v1alpha1"
)

// TestDefinesTimeoutIsNotInvalid: a script whose definition check runs out
// of time may only have met a busy moment. It is kept as a rule, whose
// calls fail while they time out, rather than recorded as invalid until the
// customization is edited.
func TestDefinesTimeoutIsNotInvalid(t *testing.T) {
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
	p := rt.CompileCustomization(ric)
	if err := p.Errors[InterpretHealth]; err != nil {
		t.Errorf("a timeout recorded as an invalid script: %v", err)
	}
	if p.Scripts[InterpretHealth] == nil {
		t.Errorf("the script timing out was dropped")
	}
	if p.Errors[InterpretStatus] == nil {
		t.Errorf("a missing function not recorded")
	}
	_, err := p.Rules(nil).Health(obj(t, "{apiVersion: example.io/v1, kind: Thing}"))
	if !errors.Is(err, ErrTimeout) {
		t.Errorf("call: %v, want the time budget", err)
	}
}
