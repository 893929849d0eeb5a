package lua

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/lifeboat-dev/lifeboat/api/config/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
)

// Program is one compiled ResourceInterpreterCustomization.
type Program struct {
	// Name of the customization.
	Name string
	// Target is the kind it interprets.
	Target schema.GroupVersionKind
	// Scripts holds a compiled script per operation it defines.
	Scripts map[Operation]*Script
	// Errors holds, per operation, why its script cannot be used (syntax
	// error, function not defined). A script whose check ran out of time
	// is not recorded here: its calls report what goes wrong.
	Errors map[Operation]error
}

// Sources returns the scripts of a customization by operation.
// componentResource (GetComponents) is left out: Lifeboat's pipeline has
// no multi-component scheduling.
func Sources(c configv1alpha1.CustomizationRules) map[Operation]string {
	out := map[Operation]string{}
	if r := c.ReplicaResource; r != nil {
		out[InterpretReplica] = r.LuaScript
	}
	if r := c.ReplicaRevision; r != nil {
		out[ReviseReplica] = r.LuaScript
	}
	if r := c.Retention; r != nil {
		out[Retain] = r.LuaScript
	}
	if r := c.StatusReflection; r != nil {
		out[InterpretStatus] = r.LuaScript
	}
	if r := c.HealthInterpretation; r != nil {
		out[InterpretHealth] = r.LuaScript
	}
	if r := c.StatusAggregation; r != nil {
		out[AggregateStatus] = r.LuaScript
	}
	if r := c.DependencyInterpretation; r != nil {
		out[InterpretDependency] = r.LuaScript
	}
	return out
}

// CompileCustomization compiles every script of ric and checks that each
// defines its function. It never fails as a whole: a broken script is
// recorded in Program.Errors, and its rule answers with that error.
func (r *Runtime) CompileCustomization(ric *configv1alpha1.ResourceInterpreterCustomization) *Program {
	p := &Program{
		Name:    ric.Name,
		Target:  schema.FromAPIVersionAndKind(ric.Spec.Target.APIVersion, ric.Spec.Target.Kind),
		Scripts: map[Operation]*Script{},
		Errors:  map[Operation]error{},
	}
	for op, src := range Sources(ric.Spec.Customizations) {
		s, err := r.Compile(src)
		if err == nil {
			err = s.Defines(op.Function())
			if errors.Is(err, ErrTimeout) {
				// A busy moment, or a top level that never ends: one
				// more try tells them apart. A script whose top level
				// times out twice is refused, since every call would
				// run it to the timeout again.
				err = s.Defines(op.Function())
			}
		}
		if err != nil {
			p.Errors[op] = err
			continue
		}
		p.Scripts[op] = s
	}
	return p
}

// Defines reports whether the program has a rule (working or broken) for op.
func (p *Program) Defines(op Operation) bool {
	_, ok := p.Scripts[op]
	_, broken := p.Errors[op]
	return ok || broken
}

// Rules returns the program's rules. Each failing call is passed to
// onError (which may be nil) before the error is returned to the caller.
// An operation whose script does not compile has a rule that always fails:
// the customization is what the user asked for, and falling back to the
// next layer (often "Healthy") would hide the mistake.
func (p *Program) Rules(onError func(op Operation, err error)) interpreter.Rules {
	fail := func(op Operation, err error) error {
		err = fmt.Errorf("customization %s, %s: %w", p.Name, op, err)
		if onError != nil {
			onError(op, err)
		}
		return err
	}
	var rules interpreter.Rules
	if p.Defines(InterpretReplica) {
		rules.Replicas = func(obj *unstructured.Unstructured) (int32, *workv1alpha2.ReplicaRequirements, error) {
			s, err := p.script(InterpretReplica)
			if err != nil {
				return 0, nil, fail(InterpretReplica, err)
			}
			n, req, err := s.GetReplicas(obj)
			if err != nil {
				return 0, nil, fail(InterpretReplica, err)
			}
			return n, req, nil
		}
	}
	if p.Defines(ReviseReplica) {
		rules.ReviseReplica = func(obj *unstructured.Unstructured, replicas int64) (*unstructured.Unstructured, error) {
			s, err := p.script(ReviseReplica)
			if err == nil {
				obj, err = s.ReviseReplica(obj, replicas)
			}
			if err != nil {
				return nil, fail(ReviseReplica, err)
			}
			return obj, nil
		}
	}
	if p.Defines(Retain) {
		rules.Retain = func(desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
			s, err := p.script(Retain)
			if err == nil {
				desired, err = s.Retain(desired, observed)
			}
			if err != nil {
				return nil, fail(Retain, err)
			}
			return desired, nil
		}
	}
	if p.Defines(InterpretStatus) {
		rules.ReflectStatus = func(obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
			s, err := p.script(InterpretStatus)
			if err != nil {
				return nil, fail(InterpretStatus, err)
			}
			st, err := s.ReflectStatus(obj)
			if err != nil {
				return nil, fail(InterpretStatus, err)
			}
			return st, nil
		}
	}
	if p.Defines(InterpretHealth) {
		rules.Health = func(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, error) {
			s, err := p.script(InterpretHealth)
			if err != nil {
				return workv1alpha1.ResourceUnknown, fail(InterpretHealth, err)
			}
			h, err := s.InterpretHealth(obj)
			if err != nil {
				return workv1alpha1.ResourceUnknown, fail(InterpretHealth, err)
			}
			return h, nil
		}
	}
	if p.Defines(AggregateStatus) {
		rules.AggregateStatus = func(obj *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (*unstructured.Unstructured, error) {
			s, err := p.script(AggregateStatus)
			if err == nil {
				obj, err = s.AggregateStatus(obj, items)
			}
			if err != nil {
				return nil, fail(AggregateStatus, err)
			}
			return obj, nil
		}
	}
	if p.Defines(InterpretDependency) {
		rules.Dependencies = func(obj *unstructured.Unstructured) ([]interpreter.Dependency, error) {
			s, err := p.script(InterpretDependency)
			if err != nil {
				return nil, fail(InterpretDependency, err)
			}
			deps, err := s.GetDependencies(obj)
			if err != nil {
				return nil, fail(InterpretDependency, err)
			}
			return deps, nil
		}
	}
	return rules
}

func (p *Program) script(op Operation) (*Script, error) {
	if err := p.Errors[op]; err != nil {
		return nil, err
	}
	return p.Scripts[op], nil
}
