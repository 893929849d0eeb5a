package thirdparty

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter/lua"
)

func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	return u
}

func chain(t *testing.T) interpreter.Interpreter {
	t.Helper()
	layer, err := NewLayer(lua.New(lua.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	return interpreter.NewChain(layer, interpreter.Native())
}

func TestShippedCustomizationsCompile(t *testing.T) {
	programs, err := Programs(lua.New(lua.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, p := range programs {
		targets = append(targets, p.Target.String())
	}
	want := []string{
		"apps.kruise.io/v1alpha1, Kind=CloneSet",
		"flink.apache.org/v1beta1, Kind=FlinkDeployment",
		"argoproj.io/v1alpha1, Kind=Rollout",
	}
	if diff := cmp.Diff(want, targets); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
}

func flink(status string) string {
	return `
apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata: {name: job, namespace: default}
spec: {}
status: ` + status
}

func TestFlinkHealth(t *testing.T) {
	in := chain(t)
	cases := map[string]struct {
		status string
		want   workv1alpha1.ResourceHealth
	}{
		"running":                      {`{jobStatus: {state: RUNNING, jobId: abc}, lifecycleState: STABLE, jobManagerDeploymentStatus: READY}`, "Healthy"},
		"finished":                     {`{jobStatus: {state: FINISHED}}`, "Healthy"},
		"suspended":                    {`{jobStatus: {state: SUSPENDED}, lifecycleState: SUSPENDED}`, "Healthy"},
		"restarting":                   {`{jobStatus: {state: RESTARTING}}`, "Healthy"},
		"failed":                       {`{jobStatus: {state: FAILED}, error: "job failed"}`, "Unhealthy"},
		"created, no error":            {`{jobStatus: {state: CREATED}}`, "Unhealthy"},
		"created, image pull error":    {`{jobStatus: {state: CREATED}, error: "Back-off pulling image: ErrImagePull"}`, "Healthy"},
		"reconciling, crash loop":      {`{jobStatus: {state: RECONCILING}, error: "{\"message\":\"CrashLoopBackOff\"}"}`, "Healthy"},
		"initializing, other error":    {`{jobStatus: {state: INITIALIZING}, error: "checkpoint storage unreachable"}`, "Unhealthy"},
		"no state, stable and ready":   {`{lifecycleState: STABLE, jobManagerDeploymentStatus: READY}`, "Healthy"},
		"no state, deploying":          {`{lifecycleState: DEPLOYED, jobManagerDeploymentStatus: DEPLOYING}`, "Unhealthy"},
		"no state, lifecycle FAILED":   {`{lifecycleState: FAILED, jobManagerDeploymentStatus: READY}`, "Unhealthy"},
		"no status reported yet (nil)": {`null`, "Unhealthy"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := in.InterpretHealth(obj(t, flink(tc.status)))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("health %s, want %s", got, tc.want)
			}
		})
	}
}

func TestFlinkReplicas(t *testing.T) {
	in := chain(t)
	cases := map[string]struct {
		spec     string
		replicas int32
		cpu      string
		memory   string
	}{
		"parallelism over slots; Flink's 2048m is 2 GiB": {
			spec:     `{jobManager: {resource: {cpu: 1, memory: 2048m}}, taskManager: {resource: {cpu: 2, memory: 1Gi}}, job: {parallelism: 5}, flinkConfiguration: {taskmanager.numberOfTaskSlots: "2"}}`,
			replicas: 1 + 3, cpu: "2", memory: "2Gi",
		},
		"Flink's units: g, mb, bytes, upper case and spaces": {
			spec:     `{jobManager: {resource: {cpu: 1, memory: 1g}}, taskManager: {replicas: 1, resource: {cpu: 1, memory: "3072 MB"}}}`,
			replicas: 2, cpu: "1", memory: "3Gi",
		},
		"a size in bytes": {
			spec:     `{jobManager: {resource: {cpu: 1, memory: "1073741824"}}, taskManager: {replicas: 1, resource: {cpu: 1, memory: 1048576b}}}`,
			replicas: 2, cpu: "1", memory: "1073741824",
		},
		"a number is bytes": {
			spec:     `{jobManager: {resource: {cpu: 1, memory: 3221225472}}, taskManager: {replicas: 1, resource: {cpu: 1, memory: 1g}}}`,
			replicas: 2, cpu: "1", memory: "3221225472",
		},
		"a number no size can be is left out": {
			spec:     `{jobManager: {resource: {cpu: 1, memory: 1e300}}, taskManager: {replicas: 1, resource: {cpu: 1, memory: -5}}}`,
			replicas: 2, cpu: "1", memory: "0",
		},
		"a memory Flink would not read is left out": {
			spec:     `{jobManager: {resource: {cpu: 1, memory: lots}}, taskManager: {replicas: 1, resource: {cpu: 1, memory: 1.5g}}}`,
			replicas: 2, cpu: "1", memory: "0",
		},
		"explicit task managers": {
			spec:     `{jobManager: {replicas: 2, resource: {cpu: 0.5, memory: 4Gi}}, taskManager: {replicas: 4, resource: {cpu: 0.5, memory: 1Gi}}}`,
			replicas: 6, cpu: "500m", memory: "4Gi",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := obj(t, "apiVersion: flink.apache.org/v1beta1\nkind: FlinkDeployment\nmetadata: {name: job, namespace: default}\nspec: "+tc.spec)
			n, req, ok, err := in.GetReplicas(o)
			if err != nil || !ok {
				t.Fatalf("ok %v, err %v", ok, err)
			}
			if n != tc.replicas || req.ResourceRequest.Cpu().String() != tc.cpu || req.ResourceRequest.Memory().String() != tc.memory {
				t.Errorf("got %d, cpu %s, memory %s", n, req.ResourceRequest.Cpu(), req.ResourceRequest.Memory())
			}
			// No replicaRevision: every cluster keeps the template's replicas.
			revised, err := in.ReviseReplica(o, 1)
			if err != nil || !cmp.Equal(revised.Object, o.Object) {
				t.Errorf("revised %v, %v", revised, err)
			}
		})
	}
}

func TestFlinkStatus(t *testing.T) {
	in := chain(t)
	member := obj(t, flink(`{jobStatus: {state: RUNNING, jobId: 0123456789abcdef0123456789abcdef}, lifecycleState: STABLE, jobManagerDeploymentStatus: READY, clusterInfo: {flink-version: "1.18"}}`))
	st, err := in.ReflectStatus(member)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"clusterInfo":{"flink-version":"1.18"},"jobManagerDeploymentStatus":"READY","jobStatus":{"jobId":"0123456789abcdef0123456789abcdef","state":"RUNNING"},"lifecycleState":"STABLE"}`
	if string(st.Raw) != want {
		t.Errorf("reflected %s", st.Raw)
	}
	failed := &runtime.RawExtension{Raw: []byte(`{"jobStatus":{"state":"FAILED","jobId":"old"},"lifecycleState":"FAILED"}`)}
	tmpl := obj(t, "apiVersion: flink.apache.org/v1beta1\nkind: FlinkDeployment\nmetadata: {name: job, namespace: default}\nspec: {}")
	out, err := in.AggregateStatus(tmpl, []workv1alpha2.AggregatedStatusItem{
		{ClusterName: "member1", Status: failed, Applied: true, Health: "Unhealthy"},
		{ClusterName: "member2", Status: st, Applied: true, Health: "Healthy"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedString(out.Object, "status", "jobStatus", "jobId"); got != "0123456789abcdef0123456789abcdef" {
		t.Errorf("aggregated jobId %q, want the healthy member's", got)
	}
}

func TestRolloutAndCloneSet(t *testing.T) {
	in := chain(t)
	template := `template: {spec: {serviceAccountName: app, containers: [{name: c, image: nginx, resources: {requests: {cpu: 200m}}}]}}`
	cases := map[string]struct {
		apiVersion, kind string
		status           string
		health           workv1alpha1.ResourceHealth
	}{
		"rollout healthy":         {"argoproj.io/v1alpha1", "Rollout", `{observedGeneration: "3", phase: Healthy, replicas: 4, updatedReplicas: 4, availableReplicas: 4}`, "Healthy"},
		"rollout degraded":        {"argoproj.io/v1alpha1", "Rollout", `{observedGeneration: "3", phase: Degraded}`, "Unhealthy"},
		"rollout old generation":  {"argoproj.io/v1alpha1", "Rollout", `{observedGeneration: "2", phase: Healthy}`, "Unhealthy"},
		"cloneset healthy":        {"apps.kruise.io/v1alpha1", "CloneSet", `{observedGeneration: 3, replicas: 4, updatedReplicas: 4, availableReplicas: 4}`, "Healthy"},
		"cloneset still updating": {"apps.kruise.io/v1alpha1", "CloneSet", `{observedGeneration: 3, replicas: 4, updatedReplicas: 2, availableReplicas: 4}`, "Unhealthy"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := obj(t, "apiVersion: "+tc.apiVersion+"\nkind: "+tc.kind+
				"\nmetadata: {name: app, namespace: ns, generation: 3, annotations: {resourcetemplate.karmada.io/generation: \"3\"}}\nspec: {replicas: 4, "+template+"}\nstatus: "+tc.status)
			h, err := in.InterpretHealth(o)
			if err != nil || h != tc.health {
				t.Errorf("health %s, %v; want %s", h, err, tc.health)
			}
			n, req, ok, err := in.GetReplicas(o)
			if err != nil || !ok || n != 4 || req.ResourceRequest.Cpu().String() != "200m" {
				t.Errorf("replicas %d, %+v, %v, %v", n, req, ok, err)
			}
			revised, err := in.ReviseReplica(o, 2)
			if got, _, _ := unstructured.NestedInt64(revised.Object, "spec", "replicas"); err != nil || got != 2 {
				t.Errorf("revised replicas %d, %v", got, err)
			}
			deps, err := in.GetDependencies(o)
			want := []interpreter.Dependency{{APIVersion: "v1", Kind: "ServiceAccount", Namespace: "ns", Name: "app"}}
			if err != nil || !cmp.Equal(deps, want) {
				t.Errorf("dependencies %v, %v", deps, err)
			}
			st, err := in.ReflectStatus(o)
			if err != nil {
				t.Fatal(err)
			}
			tmpl := o.DeepCopy()
			delete(tmpl.Object, "status")
			items := []workv1alpha2.AggregatedStatusItem{{ClusterName: "m1", Status: st}, {ClusterName: "m2", Status: st}}
			agg, err := in.AggregateStatus(tmpl, items)
			if err != nil {
				t.Fatal(err)
			}
			replicas, _, _ := unstructured.NestedInt64(agg.Object, "status", "replicas")
			observed, _, _ := unstructured.NestedInt64(agg.Object, "status", "observedGeneration")
			memberReplicas, _, _ := unstructured.NestedInt64(o.Object, "status", "replicas")
			if replicas != 2*memberReplicas || (tc.health == "Healthy" && observed != 3) {
				t.Errorf("aggregated status %v", agg.Object["status"])
			}
		})
	}
}
