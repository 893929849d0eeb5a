package lua

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
)

const workload = `
apiVersion: workload.example.io/v1alpha1
kind: Workload
metadata:
  name: sample
  namespace: default
  generation: 2
  labels: {}
spec:
  replicas: 3
  paused: false
  template:
    spec:
      containers:
      - name: app
        image: nginx
        resources: {limits: {cpu: 100m}}
status:
  readyReplicas: 2
  observedGeneration: 2
`

func TestOperations(t *testing.T) {
	rt := New(Options{})
	o := obj(t, workload)

	t.Run("GetReplicas", func(t *testing.T) {
		s := compile(t, rt, `
local kube = require("kube")
function GetReplicas(obj)
  replica = obj.spec.replicas
  requirement = kube.accuratePodRequirements(obj.spec.template)
  return replica, requirement
end`)
		n, req, err := s.GetReplicas(o)
		if err != nil {
			t.Fatal(err)
		}
		if n != 3 || req.ResourceRequest.Cpu().String() != "100m" || req.NodeClaim != nil {
			t.Errorf("got %d, %+v", n, req)
		}
	})
	t.Run("GetReplicas without requirements", func(t *testing.T) {
		s := compile(t, rt, `function GetReplicas(obj) return 2, {resourceRequest = {}, nodeClaim = {}} end`)
		n, req, err := s.GetReplicas(o)
		if err != nil || n != 2 || req != nil {
			t.Errorf("got %d, %+v, %v", n, req, err)
		}
	})
	t.Run("ReviseReplica", func(t *testing.T) {
		s := compile(t, rt, `
function ReviseReplica(obj, desiredReplica)
  obj.spec.replicas = desiredReplica
  return obj
end`)
		out, err := s.ReviseReplica(o, 5)
		if err != nil {
			t.Fatal(err)
		}
		want := o.DeepCopy()
		want.Object["spec"].(map[string]any)["replicas"] = int64(5)
		if diff := cmp.Diff(want.Object, out.Object); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if o.Object["spec"].(map[string]any)["replicas"] != int64(3) {
			t.Errorf("input modified")
		}
	})
	t.Run("Retain", func(t *testing.T) {
		s := compile(t, rt, `
function Retain(desiredObj, observedObj)
  desiredObj.spec.paused = observedObj.spec.paused
  return desiredObj
end`)
		observed := o.DeepCopy()
		observed.Object["spec"].(map[string]any)["paused"] = true
		out, err := s.Retain(o, observed)
		if err != nil {
			t.Fatal(err)
		}
		if out.Object["spec"].(map[string]any)["paused"] != true {
			t.Errorf("paused not retained: %v", out.Object["spec"])
		}
		if _, ok := out.GetLabels(), true; !ok || out.Object["metadata"].(map[string]any)["labels"] == nil {
			t.Errorf("empty labels lost: %v", out.Object["metadata"])
		}
	})
	t.Run("ReflectStatus", func(t *testing.T) {
		s := compile(t, rt, `
function ReflectStatus(observedObj)
  status = {}
  if observedObj == nil or observedObj.status == nil then
    return status
  end
  status.readyReplicas = observedObj.status.readyReplicas
  status.generation = observedObj.metadata.generation
  return status
end`)
		st, err := s.ReflectStatus(o)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(st.Raw); got != `{"generation":2,"readyReplicas":2}` {
			t.Errorf("status %s", got)
		}
		noStatus := o.DeepCopy()
		delete(noStatus.Object, "status")
		if st, err := s.ReflectStatus(noStatus); err != nil || st != nil {
			t.Errorf("empty result: %v, %v; want no status", st, err)
		}
	})
	t.Run("InterpretHealth", func(t *testing.T) {
		s := compile(t, rt, `
function InterpretHealth(observedObj)
  if observedObj.status.observedGeneration ~= observedObj.metadata.generation then
    return false
  end
  return observedObj.status.readyReplicas == observedObj.spec.replicas
end`)
		h, err := s.InterpretHealth(o)
		if err != nil || h != "Unhealthy" {
			t.Errorf("got %s, %v", h, err)
		}
		notBool := compile(t, rt, `function InterpretHealth(o) return nil end`)
		if h, err := notBool.InterpretHealth(o); err == nil || h != "Unknown" {
			t.Errorf("nil result: %s, %v; want Unknown and an error", h, err)
		}
	})
	t.Run("AggregateStatus", func(t *testing.T) {
		s := compile(t, rt, `
function AggregateStatus(desiredObj, statusItems)
  if statusItems == nil then
    return desiredObj
  end
  if desiredObj.status == nil then
    desiredObj.status = {}
  end
  local ready = 0
  local clusters = {}
  for i = 1, #statusItems do
    if statusItems[i].status ~= nil and statusItems[i].status.readyReplicas ~= nil then
      ready = ready + statusItems[i].status.readyReplicas
    end
    table.insert(clusters, statusItems[i].clusterName .. "=" .. statusItems[i].health)
  end
  desiredObj.status.readyReplicas = ready
  desiredObj.status.clusters = clusters
  desiredObj.status.conditions = {}
  return desiredObj
end`)
		items := []workv1alpha2.AggregatedStatusItem{
			{ClusterName: "member1", Status: &runtime.RawExtension{Raw: []byte(`{"readyReplicas":2}`)}, Applied: true, Health: "Healthy"},
			{ClusterName: "member2", Status: &runtime.RawExtension{Raw: []byte(`{"readyReplicas":1}`)}, Applied: true, Health: "Unhealthy"},
		}
		tmpl := o.DeepCopy()
		delete(tmpl.Object, "status")
		out, err := s.AggregateStatus(tmpl, items)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"readyReplicas": int64(3), "clusters": []any{"member1=Healthy", "member2=Unhealthy"}, "conditions": []any{}}
		if diff := cmp.Diff(want, out.Object["status"]); diff != "" {
			t.Errorf("status (-want +got):\n%s", diff)
		}
	})
	t.Run("GetDependencies", func(t *testing.T) {
		s := compile(t, rt, `
function GetDependencies(desiredObj)
  dependentSas = {}
  refs = {}
  dependentSas["sa-" .. desiredObj.metadata.name] = true
  for key, value in pairs(dependentSas) do
    dependObj = {}
    dependObj.apiVersion = "v1"
    dependObj.kind = "ServiceAccount"
    dependObj.name = key
    dependObj.namespace = desiredObj.metadata.namespace
    table.insert(refs, dependObj)
  end
  return refs
end`)
		deps, err := s.GetDependencies(o)
		if err != nil {
			t.Fatal(err)
		}
		want := []interpreter.Dependency{{APIVersion: "v1", Kind: "ServiceAccount", Namespace: "default", Name: "sa-sample"}}
		if diff := cmp.Diff(want, deps); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		selector := compile(t, rt, `function GetDependencies(o) return {{apiVersion = "v1", kind = "Secret", namespace = "default", labelSelector = {matchLabels = {a = "b"}}}} end`)
		if _, err := selector.GetDependencies(o); err == nil || !strings.Contains(err.Error(), "labelSelector") {
			t.Errorf("labelSelector: %v", err)
		}
	})
}

func TestOperationErrors(t *testing.T) {
	rt := New(Options{})
	o := obj(t, workload)
	cases := map[string]struct {
		src  string
		call func(s *Script) error
	}{
		"runtime error": {
			src:  `function InterpretHealth(o) return o.spec.missing.field end`,
			call: func(s *Script) error { _, err := s.InterpretHealth(o); return err },
		},
		"replicas not a number": {
			src:  `function GetReplicas(o) return "three" end`,
			call: func(s *Script) error { _, _, err := s.GetReplicas(o); return err },
		},
		"fractional replicas": {
			src:  `function GetReplicas(o) return 0.5 end`,
			call: func(s *Script) error { _, _, err := s.GetReplicas(o); return err },
		},
		"replicas just under an integer": {
			src:  `function GetReplicas(o) return 1.9 end`,
			call: func(s *Script) error { _, _, err := s.GetReplicas(o); return err },
		},
		"negative replicas": {
			src:  `function GetReplicas(o) return -1 end`,
			call: func(s *Script) error { _, _, err := s.GetReplicas(o); return err },
		},
		"replicas past int32": {
			src:  `function GetReplicas(o) return 2147483648 end`,
			call: func(s *Script) error { _, _, err := s.GetReplicas(o); return err },
		},
		"revise returns a list": {
			src:  `function ReviseReplica(o, n) return {1, 2} end`,
			call: func(s *Script) error { _, err := s.ReviseReplica(o, 1); return err },
		},
		"function missing": {
			src:  `function Other(o) return true end`,
			call: func(s *Script) error { _, err := s.InterpretHealth(o); return err },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := tc.call(compile(t, rt, tc.src)); err == nil {
				t.Fatal("want an error")
			}
		})
	}
}

func TestParseOperation(t *testing.T) {
	for in, want := range map[string]Operation{
		"InterpretHealth": InterpretHealth, "GetReplicas": InterpretReplica, "InterpretReplica": InterpretReplica,
		"ReflectStatus": InterpretStatus, "GetDependencies": InterpretDependency, "Retain": Retain,
	} {
		if got, err := ParseOperation(in); err != nil || got != want {
			t.Errorf("%s: got %s, %v", in, got, err)
		}
	}
	if _, err := ParseOperation("Prune"); err == nil {
		t.Errorf("Prune accepted")
	}
}

// TestReplicasMustBeWhole: a fractional replica count is an error naming
// it, never truncated (0.5 would scale the workload to 0).
func TestReplicasMustBeWhole(t *testing.T) {
	rt := New(Options{})
	for _, n := range []string{"0.5", "1.9"} {
		s := compile(t, rt, `function GetReplicas(o) return `+n+` end`)
		if _, _, err := s.GetReplicas(obj(t, workload)); err == nil || !strings.Contains(err.Error(), "returned "+n+" replicas") {
			t.Errorf("GetReplicas returning %s: %v, want an error naming it", n, err)
		}
	}
}
