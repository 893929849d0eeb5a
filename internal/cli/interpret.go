package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/lifeboat-dev/lifeboat/api/config/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter/customization"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter/lua"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter/thirdparty"
	"github.com/lifeboat-dev/lifeboat/internal/yamlfile"
)

// interpretOptions are the flags of `lifeboat interpret`.
type interpretOptions struct {
	customizationFile string
	customizationName string
	operation         string
	observedFile      string
	desiredFile       string
	desiredReplica    int64
	// desiredReplicaSet says --desired-replica was given: its 0 default
	// is a valid count, so it cannot tell.
	desiredReplicaSet bool
	statusFile        string
	controlPlane      controlPlaneFlags
}

// newInterpretCommand returns `lifeboat interpret`: run one interpreter
// operation of a ResourceInterpreterCustomization (or of the built-in
// rules) on objects from files, like karmadactl interpret.
func newInterpretCommand() *cobra.Command {
	o := &interpretOptions{}
	cmd := &cobra.Command{
		Use:   "interpret --operation OPERATION [--customization FILE | --customization-name NAME] --observed-file OBJ.yaml",
		Short: "Run a resource interpreter operation on sample objects",
		Long: `Run one operation of a ResourceInterpreterCustomization on objects read from files
and print the result as YAML: the way to test a customization before applying it.

The customization comes from a file (--customization), from the control plane
(--customization-name; the control plane is --kubeconfig/--context, default
$KUBECONFIG, else ~/.kube/config, and its current context, and is contacted only
then), or, with neither, the built-in rules are used (Lifeboat's shipped
third-party customizations, then the native rules).

Operations (Karmada's operation name or the Lua function name):
  InterpretHealth (InterpretHealth)      observed object      -> health
  InterpretReplica (GetReplicas)         desired object       -> replicas, requirements
  ReviseReplica (ReviseReplica)          desired object, --desired-replica -> object
  Retain (Retain)                        desired and observed -> object
  InterpretStatus (ReflectStatus)        observed object      -> status
  AggregateStatus (AggregateStatus)      desired object, --status-file -> object
  InterpretDependency (GetDependencies)  desired object       -> dependencies

When only one of --desired-file and --observed-file is given it is used for both.
--status-file holds one YAML list of {clusterName, status, applied, health} items.
--desired-replica is only for ReviseReplica and --status-file only for
AggregateStatus: with another operation they are refused, not ignored.
--customization, --customization-name and the file flags given an empty value
are refused, not taken for left out.`,
		Example: `  lifeboat interpret --customization ric.yaml --operation InterpretHealth --observed-file flink.yaml
  lifeboat interpret --customization ric.yaml --operation ReviseReplica --desired-file app.yaml --desired-replica 2
  lifeboat interpret --customization-name my-ric --operation AggregateStatus --desired-file app.yaml --status-file items.yaml
  lifeboat interpret --operation InterpretHealth --observed-file flinkdeployment.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Left out, each of these means something else: the built-in
			// rules, or the other object file standing in.
			if err := refuseEmptyFlags(cmd, "customization", "customization-name", "desired-file", "observed-file", "status-file"); err != nil {
				return err
			}
			o.desiredReplicaSet = cmd.Flags().Changed("desired-replica")
			return o.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.customizationFile, "customization", "", "File holding the ResourceInterpreterCustomization to run.")
	f.StringVar(&o.customizationName, "customization-name", "", "Name of a ResourceInterpreterCustomization in the control plane to run.")
	f.StringVar(&o.operation, "operation", "", "Operation to run (see above).")
	f.StringVar(&o.observedFile, "observed-file", "", "File holding the object as it is in a member cluster.")
	f.StringVar(&o.desiredFile, "desired-file", "", "File holding the object as the control plane wants it.")
	f.Int64Var(&o.desiredReplica, "desired-replica", 0, "Replicas to revise the object to, 0 to 2147483647: only for ReviseReplica, which needs it.")
	f.StringVar(&o.statusFile, "status-file", "", "File holding the member status items: only for AggregateStatus.")
	o.controlPlane.add(f)
	_ = cmd.MarkFlagRequired("operation")
	return cmd
}

func (o *interpretOptions) run(ctx context.Context, out io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	op, err := lua.ParseOperation(o.operation)
	if err != nil {
		return err
	}
	// An operation that does not read a flag would run without it, and its
	// output would pass for an answer that took the flag into account.
	switch {
	case o.desiredReplicaSet && op != lua.ReviseReplica:
		return fmt.Errorf("--desired-replica is only for %s; %s does not read it", lua.ReviseReplica, op)
	case o.statusFile != "" && op != lua.AggregateStatus:
		return fmt.Errorf("--status-file is only for %s; %s does not read it", lua.AggregateStatus, op)
	}
	if op == lua.ReviseReplica {
		// A replica count is an int32 in every workload; without the
		// flag the script would be given 0.
		switch {
		case !o.desiredReplicaSet:
			return errors.New("ReviseReplica needs --desired-replica, the replicas to revise the object to")
		case o.desiredReplica < 0 || o.desiredReplica > math.MaxInt32:
			return fmt.Errorf("--desired-replica %d: want 0 to %d", o.desiredReplica, math.MaxInt32)
		}
	}
	in, program, err := o.interpreter(ctx, op)
	if err != nil {
		return err
	}
	desired, observed, err := o.objects()
	if err != nil {
		return err
	}
	if program != nil {
		// The rules answer by the object's kind: for another kind the
		// customization's script would not run, and the built-in default
		// would be printed as if it were its answer.
		for _, f := range []struct {
			path string
			obj  *unstructured.Unstructured
		}{{o.desiredFile, desired}, {o.observedFile, observed}} {
			if f.path == "" {
				continue
			}
			if got := f.obj.GroupVersionKind(); got != program.Target {
				return fmt.Errorf("%s is %s, but customization %s targets %s: its scripts would not run on it",
					f.path, describeGVK(got), program.Name, describeGVK(program.Target))
			}
		}
	}
	result, err := runOperation(in, op, desired, observed, o.desiredReplica, o.statusFile)
	if err != nil {
		return err
	}
	raw, err := yaml.Marshal(result)
	if err != nil {
		return fmt.Errorf("print result: %w", err)
	}
	_, err = out.Write(raw)
	return err
}

// describeGVK names a kind as an object's apiVersion and kind say it.
func describeGVK(gvk schema.GroupVersionKind) string {
	apiVersion, kind := gvk.ToAPIVersionAndKind()
	return fmt.Sprintf("apiVersion %q, kind %q", apiVersion, kind)
}

// interpreter returns what runs the operation: only the customization when
// one is given (an operation it does not script is an error, not a silent
// fallback), with its compiled program, else the shipped and native rules
// (and no program).
func (o *interpretOptions) interpreter(ctx context.Context, op lua.Operation) (interpreter.Interpreter, *lua.Program, error) {
	rt := lua.New(lua.Options{})
	var ric *configv1alpha1.ResourceInterpreterCustomization
	switch {
	case o.customizationFile != "" && o.customizationName != "":
		return nil, nil, errors.New("give --customization or --customization-name, not both")
	case o.customizationFile != "":
		raw, err := yamlfile.ReadOne(o.customizationFile, "one ResourceInterpreterCustomization")
		if err != nil {
			return nil, nil, fmt.Errorf("read customization: %w", err)
		}
		if ric, err = parseCustomization(raw); err != nil {
			return nil, nil, fmt.Errorf("parse customization %s: %w", o.customizationFile, err)
		}
	case o.customizationName != "":
		c, err := o.controlPlane.client()
		if err != nil {
			return nil, nil, err
		}
		ric = &configv1alpha1.ResourceInterpreterCustomization{}
		if err := c.Get(ctx, types.NamespacedName{Name: o.customizationName}, ric); err != nil {
			return nil, nil, fmt.Errorf("get customization %s: %w", o.customizationName, err)
		}
	default:
		shipped, err := thirdparty.NewLayer(rt)
		if err != nil {
			return nil, nil, err
		}
		return interpreter.NewChain(shipped, interpreter.Native()), nil, nil
	}
	layer := customization.NewLayer(rt, nil, clock.RealClock{})
	program, _ := layer.Set(ric)
	if err := program.Errors[op]; err != nil {
		return nil, nil, fmt.Errorf("customization %s, %s: %w", ric.Name, op, err)
	}
	if !program.Defines(op) {
		return nil, nil, fmt.Errorf("customization %s has no script for %s (function %s)", ric.Name, op, op.Function())
	}
	return interpreter.NewChain(layer), program, nil
}

// wantCustomization names what a --customization file must hold.
const wantCustomization = "a config.karmada.io/v1alpha1 ResourceInterpreterCustomization"

// parseCustomization decodes a ResourceInterpreterCustomization. Its
// apiVersion and kind are checked first: the decoding reads the fields
// whatever the type says, so a file of another kind with the same fields
// would otherwise be run as a customization.
func parseCustomization(raw []byte) (*configv1alpha1.ResourceInterpreterCustomization, error) {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(raw, &tm); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	switch gvk := schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind); {
	case gvk == configv1alpha1.SchemeGroupVersion.WithKind("ResourceInterpreterCustomization"):
		// The one type wanted: decoded below.
	case tm.APIVersion == "" && tm.Kind == "":
		return nil, errors.New("found no apiVersion and kind; want " + wantCustomization)
	default:
		kind := tm.Kind
		if kind == "" {
			kind = "object without kind"
		}
		return nil, fmt.Errorf("found a %s of apiVersion %q; want %s", kind, tm.APIVersion, wantCustomization)
	}
	ric := &configv1alpha1.ResourceInterpreterCustomization{}
	if err := yaml.UnmarshalStrict(raw, ric); err != nil {
		return nil, err
	}
	return ric, nil
}

// objects reads the desired and observed objects; one stands in for the
// other when only one is given.
func (o *interpretOptions) objects() (desired, observed *unstructured.Unstructured, err error) {
	if o.desiredFile == "" && o.observedFile == "" {
		return nil, nil, errors.New("give --observed-file or --desired-file")
	}
	if o.desiredFile != "" {
		if desired, err = readObject(o.desiredFile); err != nil {
			return nil, nil, err
		}
	}
	if o.observedFile != "" {
		if observed, err = readObject(o.observedFile); err != nil {
			return nil, nil, err
		}
	}
	if desired == nil {
		desired = observed
	}
	if observed == nil {
		observed = desired
	}
	return desired, observed, nil
}

func readObject(path string) (*unstructured.Unstructured, error) {
	raw, err := yamlfile.ReadOne(path, "one object to interpret")
	if err != nil {
		return nil, fmt.Errorf("read object: %w", err)
	}
	jsonRaw, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(jsonRaw); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return u, nil
}

// runOperation runs op and returns what to print.
func runOperation(in interpreter.Interpreter, op lua.Operation, desired, observed *unstructured.Unstructured, replicas int64, statusFile string) (any, error) {
	switch op {
	case lua.InterpretHealth:
		h, err := in.InterpretHealth(observed)
		if err != nil {
			return nil, err
		}
		return map[string]any{"health": h}, nil
	case lua.InterpretReplica:
		n, req, ok, err := in.GetReplicas(desired)
		if err != nil {
			return nil, err
		}
		if !ok {
			return map[string]any{"replicas": nil, "note": "this kind has no replicas: it is propagated whole"}, nil
		}
		return map[string]any{"replicas": n, "requirements": req}, nil
	case lua.ReviseReplica:
		obj, err := in.ReviseReplica(desired, replicas)
		if err != nil {
			return nil, err
		}
		return obj.Object, nil
	case lua.Retain:
		obj, err := in.Retain(desired, observed)
		if err != nil {
			return nil, err
		}
		return obj.Object, nil
	case lua.InterpretStatus:
		st, err := in.ReflectStatus(observed)
		if err != nil {
			return nil, err
		}
		if st == nil {
			return map[string]any{"status": nil}, nil
		}
		var status any
		if err := yaml.Unmarshal(st.Raw, &status); err != nil {
			return nil, fmt.Errorf("decode status: %w", err)
		}
		return map[string]any{"status": status}, nil
	case lua.AggregateStatus:
		var items []workv1alpha2.AggregatedStatusItem
		if statusFile != "" {
			var err error
			if items, err = readStatusItems(statusFile); err != nil {
				return nil, err
			}
		}
		obj, err := in.AggregateStatus(desired, items)
		if err != nil {
			return nil, err
		}
		return obj.Object, nil
	case lua.InterpretDependency:
		deps, err := in.GetDependencies(desired)
		if err != nil {
			return nil, err
		}
		if deps == nil {
			deps = []interpreter.Dependency{}
		}
		return map[string]any{"dependencies": deps}, nil
	}
	return nil, fmt.Errorf("operation %s is not supported", op)
}

// wantStatusItems names what a --status-file must hold.
const wantStatusItems = "one list of status items"

// readStatusItems reads the --status-file: one YAML or JSON list of
// {clusterName, status, applied, health} items.
func readStatusItems(path string) ([]workv1alpha2.AggregatedStatusItem, error) {
	doc, err := yamlfile.ReadList(path, wantStatusItems)
	if err != nil {
		return nil, fmt.Errorf("read status items: %w", err)
	}
	var items []workv1alpha2.AggregatedStatusItem
	if err := yaml.UnmarshalStrict(doc, &items); err != nil {
		return nil, fmt.Errorf("parse status items %s: %w", path, err)
	}
	return items, nil
}
