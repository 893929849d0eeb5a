package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const interpretRIC = `apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata:
  name: workload
spec:
  target:
    apiVersion: workload.example.io/v1alpha1
    kind: Workload
  customizations:
    healthInterpretation:
      luaScript: |
        function InterpretHealth(observedObj)
          return observedObj.status.readyReplicas == observedObj.spec.replicas
        end
    replicaRevision:
      luaScript: |
        function ReviseReplica(obj, desiredReplica)
          obj.spec.replicas = desiredReplica
          return obj
        end
    statusAggregation:
      luaScript: |
        function AggregateStatus(desiredObj, statusItems)
          local ready = 0
          for i = 1, #statusItems do
            ready = ready + statusItems[i].status.readyReplicas
          end
          desiredObj.status = {readyReplicas = ready}
          return desiredObj
        end
`

const interpretWorkload = `apiVersion: workload.example.io/v1alpha1
kind: Workload
metadata: {name: sample, namespace: default}
spec: {replicas: 3}
status: {readyReplicas: 3}
`

const interpretItems = `- clusterName: member1
  status: {readyReplicas: 2}
  applied: true
  health: Healthy
- clusterName: member2
  status: {readyReplicas: 1}
  applied: true
  health: Healthy
`

const interpretFlink = `apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata: {name: job, namespace: default}
spec: {}
status:
  jobStatus: {state: CREATED}
  error: "Back-off pulling image \"fake/flink\": ImagePullBackOff"
`

func TestInterpretCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ric := write("ric.yaml", interpretRIC)
	obj := write("obj.yaml", interpretWorkload)
	items := write("items.yaml", interpretItems)
	flink := write("flink.yaml", interpretFlink)
	versionless := write("versionless.yaml", "kind: Workload\nmetadata: {name: x}\nspec: {replicas: 1}\nstatus: {readyReplicas: 1}\n")
	twoObjects := write("two.yaml", interpretWorkload+"\n---\n"+interpretWorkload)
	twoRICs := write("two-rics.yaml", interpretRIC+"\n---\n"+interpretRIC)
	twoItemLists := write("two-items.yaml", interpretItems+"---\n"+interpretItems)
	commentedItems := write("commented-items.yaml", "# status of the members\n---\n- clusterName: member1\n  status: {readyReplicas: 7}\n---\n# end\n")
	jsonItems := write("items.json", `[{"clusterName": "member1", "status": {"readyReplicas": 4}, "applied": true}]`)
	emptyItems := write("empty-items.yaml", "# nothing yet\n")
	objectItems := write("object-items.yaml", "clusterName: member1\nstatus: {readyReplicas: 2}\n")
	hugeItems := write("huge-items.yaml", "- clusterName: member1\n"+strings.Repeat("#", 8<<20))
	banana := write("banana.yaml", strings.Replace(strings.Replace(interpretRIC,
		"config.karmada.io/v1alpha1", "fruit/v9", 1), "kind: ResourceInterpreterCustomization", "kind: Banana", 1))
	otherVersion := write("v1beta1.yaml", strings.Replace(interpretRIC, "config.karmada.io/v1alpha1", "config.karmada.io/v1beta1", 1))
	typeless := write("typeless.yaml", interpretRIC[strings.Index(interpretRIC, "metadata:"):])
	emptyFile := write("empty.yaml", "")
	separators := write("separators.yaml", "---\n---\n")
	oneSeparator := write("one-separator.yaml", "---\n")
	commentedSeparators := write("commented-separators.yaml", "# nothing yet\n--- # first\n---\n")

	cases := map[string]struct {
		args    []string
		want    []string
		wantErr string
	}{
		"health": {
			args: []string{"--customization", ric, "--operation", "InterpretHealth", "--observed-file", obj},
			want: []string{"health: Healthy"},
		},
		"revise by function name": {
			args: []string{"--customization", ric, "--operation", "ReviseReplica", "--desired-file", obj, "--desired-replica", "2"},
			want: []string{"replicas: 2", "kind: Workload"},
		},
		"aggregate": {
			args: []string{"--customization", ric, "--operation", "AggregateStatus", "--desired-file", obj, "--status-file", items},
			want: []string{"readyReplicas: 3"},
		},
		"operation the customization lacks": {
			args:    []string{"--customization", ric, "--operation", "GetReplicas", "--desired-file", obj},
			wantErr: "no script for InterpretReplica",
		},
		"two objects in the observed file": {
			args:    []string{"--customization", ric, "--operation", "InterpretHealth", "--observed-file", twoObjects},
			wantErr: "found 2 objects; want one object to interpret",
		},
		"two customizations in the file": {
			args:    []string{"--customization", twoRICs, "--operation", "InterpretHealth", "--observed-file", obj},
			wantErr: "found 2 objects; want one ResourceInterpreterCustomization",
		},
		"status items after the first list": {
			args:    []string{"--customization", ric, "--operation", "AggregateStatus", "--desired-file", obj, "--status-file", twoItemLists},
			wantErr: "found 2 documents; want one list of status items",
		},
		"status items between comment documents": {
			args: []string{"--customization", ric, "--operation", "AggregateStatus", "--desired-file", obj, "--status-file", commentedItems},
			want: []string{"readyReplicas: 7"},
		},
		"status items as JSON": {
			args: []string{"--customization", ric, "--operation", "AggregateStatus", "--desired-file", obj, "--status-file", jsonItems},
			want: []string{"readyReplicas: 4"},
		},
		"status file without items": {
			args:    []string{"--customization", ric, "--operation", "AggregateStatus", "--desired-file", obj, "--status-file", emptyItems},
			wantErr: "found no list; want one list of status items",
		},
		"status file of one item, not a list": {
			args:    []string{"--customization", ric, "--operation", "AggregateStatus", "--desired-file", obj, "--status-file", objectItems},
			wantErr: "found an object; want one list of status items",
		},
		"status file past the size limit": {
			args:    []string{"--customization", ric, "--operation", "AggregateStatus", "--desired-file", obj, "--status-file", hugeItems},
			wantErr: "is larger than 8 MiB; want one list of status items",
		},
		"status file with a misspelt field": {
			args:    []string{"--customization", ric, "--operation", "AggregateStatus", "--desired-file", obj, "--status-file", write("typo.yaml", "- clusterNmae: member1\n")},
			wantErr: `parse status items`,
		},
		"status file with another operation": {
			args:    []string{"--customization", ric, "--operation", "InterpretHealth", "--observed-file", obj, "--status-file", items},
			wantErr: "--status-file is only for AggregateStatus; InterpretHealth does not read it",
		},
		"desired replica with another operation": {
			args:    []string{"--operation", "GetReplicas", "--desired-file", obj, "--desired-replica", "2"},
			wantErr: "--desired-replica is only for ReviseReplica; InterpretReplica does not read it",
		},
		"customization of another kind": {
			args:    []string{"--customization", banana, "--operation", "InterpretHealth", "--observed-file", obj},
			wantErr: `found a Banana of apiVersion "fruit/v9"; want a config.karmada.io/v1alpha1 ResourceInterpreterCustomization`,
		},
		"customization of another version": {
			args:    []string{"--customization", otherVersion, "--operation", "InterpretHealth", "--observed-file", obj},
			wantErr: `found a ResourceInterpreterCustomization of apiVersion "config.karmada.io/v1beta1"`,
		},
		"customization without apiVersion and kind": {
			args:    []string{"--customization", typeless, "--operation", "InterpretHealth", "--observed-file", obj},
			wantErr: "found no apiVersion and kind; want a config.karmada.io/v1alpha1 ResourceInterpreterCustomization",
		},
		"built-in rules": {
			args: []string{"--operation", "InterpretHealth", "--observed-file", flink},
			want: []string{"health: Healthy"},
		},
		"built-in reflection": {
			args: []string{"--operation", "ReflectStatus", "--observed-file", flink},
			want: []string{"state: CREATED"},
		},
		"revise without --desired-replica": {
			args:    []string{"--customization", ric, "--operation", "ReviseReplica", "--desired-file", obj},
			wantErr: "ReviseReplica needs --desired-replica",
		},
		"revise to zero": {
			args: []string{"--customization", ric, "--operation", "ReviseReplica", "--desired-file", obj, "--desired-replica", "0"},
			want: []string{"replicas: 0"},
		},
		"revise to a negative count": {
			args:    []string{"--customization", ric, "--operation", "ReviseReplica", "--desired-file", obj, "--desired-replica", "-5"},
			wantErr: "--desired-replica -5: want 0 to 2147483647",
		},
		"revise past int32": {
			args:    []string{"--customization", ric, "--operation", "ReviseReplica", "--desired-file", obj, "--desired-replica", "99999999999"},
			wantErr: "--desired-replica 99999999999: want 0 to 2147483647",
		},
		"object of another kind": {
			args:    []string{"--customization", ric, "--operation", "InterpretHealth", "--observed-file", flink},
			wantErr: `is apiVersion "flink.apache.org/v1beta1", kind "FlinkDeployment", but customization workload targets apiVersion "workload.example.io/v1alpha1", kind "Workload"`,
		},
		"desired object of another kind": {
			args:    []string{"--customization", ric, "--operation", "AggregateStatus", "--desired-file", flink, "--observed-file", obj, "--status-file", items},
			wantErr: "but customization workload targets",
		},
		"object without an apiVersion": {
			args:    []string{"--customization", ric, "--operation", "InterpretHealth", "--observed-file", versionless},
			wantErr: `is apiVersion "", kind "Workload", but customization workload targets`,
		},
		"empty --customization": {
			args:    []string{"--customization", "", "--operation", "InterpretHealth", "--observed-file", flink},
			wantErr: "--customization is empty",
		},
		"empty --customization=": {
			args:    []string{"--customization=", "--operation", "InterpretHealth", "--observed-file", flink},
			wantErr: "--customization is empty",
		},
		"empty --customization-name": {
			args:    []string{"--customization-name", "", "--operation", "InterpretHealth", "--observed-file", flink},
			wantErr: "--customization-name is empty",
		},
		"empty --desired-file next to an observed one": {
			args:    []string{"--customization", ric, "--operation", "InterpretHealth", "--observed-file", obj, "--desired-file", ""},
			wantErr: "--desired-file is empty",
		},
		"empty --observed-file next to a desired one": {
			args:    []string{"--customization", ric, "--operation", "InterpretHealth", "--desired-file", obj, "--observed-file", ""},
			wantErr: "--observed-file is empty",
		},
		"empty --status-file": {
			args:    []string{"--customization", ric, "--operation", "AggregateStatus", "--desired-file", obj, "--status-file", ""},
			wantErr: "--status-file is empty",
		},
		"empty object file": {
			args:    []string{"--operation", "InterpretHealth", "--observed-file", emptyFile},
			wantErr: "empty.yaml: found no object; want one object to interpret",
		},
		"object file of separators only": {
			args:    []string{"--operation", "InterpretHealth", "--observed-file", separators},
			wantErr: "separators.yaml: found no object; want one object to interpret",
		},
		"object file of one separator": {
			args:    []string{"--operation", "InterpretHealth", "--observed-file", oneSeparator},
			wantErr: "one-separator.yaml: found no object; want one object to interpret",
		},
		"object file of separators and comments": {
			args:    []string{"--customization", ric, "--operation", "InterpretHealth", "--desired-file", commentedSeparators},
			wantErr: "commented-separators.yaml: found no object; want one object to interpret",
		},
		"customization file of separators only": {
			args:    []string{"--customization", separators, "--operation", "InterpretHealth", "--observed-file", obj},
			wantErr: "separators.yaml: found no object; want one ResourceInterpreterCustomization",
		},
		"unknown operation": {
			args:    []string{"--operation", "Prune", "--observed-file", obj},
			wantErr: "unknown operation",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := execute(newInterpretCommand(), tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
