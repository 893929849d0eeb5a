package bench

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExpandTemplate(t *testing.T) {
	cases := map[string]struct {
		tmpl string
		vars map[string]string
		want string
	}{
		"member": {tmpl: "lifeboat env stop {member} --state-dir .lifeboat", vars: map[string]string{"member": "member1"},
			want: "lifeboat env stop member1 --state-dir .lifeboat"},
		"twice": {tmpl: "echo {member} {member}", vars: map[string]string{"member": "m"}, want: "echo m m"},
		"quoted": {tmpl: "ssh host stop {member}", vars: map[string]string{"member": "a b;rm -rf /"},
			want: `ssh host stop 'a b;rm -rf /'`},
		"single quote": {tmpl: "x {member}", vars: map[string]string{"member": "it's"}, want: `x 'it'\''s'`},
		"empty value":  {tmpl: "x {member}", vars: map[string]string{"member": ""}, want: "x ''"},
		"unknown kept": {tmpl: "x {other} {member}", vars: map[string]string{"member": "m"}, want: "x {other} m"},
		"extra var": {tmpl: "kubectl --kubeconfig {kubeconfig} x {member}", vars: map[string]string{"member": "m", "kubeconfig": "/tmp/k c"},
			want: "kubectl --kubeconfig '/tmp/k c' x m"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := ExpandTemplate(tc.tmpl, tc.vars); got != tc.want {
				t.Errorf("ExpandTemplate(%q) = %q, want %q", tc.tmpl, got, tc.want)
			}
		})
	}
}

func TestCommandControlRunsTemplates(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	c := CommandControl{
		StopTemplate:  "echo stop {member} >> {log}",
		StartTemplate: "echo start {member} >> {log}",
		Vars:          map[string]string{"log": log},
	}
	ctx := context.Background()
	if err := c.Stop(ctx, "member2"); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx, "member2"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(data), "stop member2\nstart member2\n"; got != want {
		t.Errorf("commands wrote %q, want %q", got, want)
	}
}

func TestCommandControlReportsFailure(t *testing.T) {
	c := CommandControl{StopTemplate: "echo broken {member} >&2; exit 3"}
	err := c.Stop(context.Background(), "member1")
	if err == nil || !strings.Contains(err.Error(), "broken member1") {
		t.Errorf("Stop error = %v, want one carrying the command's output", err)
	}
	if err := (CommandControl{}).Start(context.Background(), "member1"); err == nil {
		t.Error("Start without a template succeeded")
	}
}

func TestParsePIDs(t *testing.T) {
	cases := map[string]struct {
		in      []string
		want    map[string]int
		wantErr bool
	}{
		"named":   {in: []string{"karmada-controller-manager=42", "karmada-scheduler=43"}, want: map[string]int{"karmada-controller-manager": 42, "karmada-scheduler": 43}},
		"bare":    {in: []string{"42"}, want: map[string]int{"pid-42": 42}},
		"not pid": {in: []string{"x=abc"}, wantErr: true},
		"zero":    {in: []string{"0"}, wantErr: true},
		"no name": {in: []string{"=5"}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParsePIDs(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParsePIDs error = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && !maps.Equal(got, tc.want) {
				t.Errorf("ParsePIDs = %v, want %v", got, tc.want)
			}
		})
	}
	if _, err := ParsePairs([]string{"member1"}); err == nil {
		t.Error("ParsePairs accepted an item without =")
	}
	if got, err := ParsePairs([]string{"member1=kind-member1"}); err != nil || got["member1"] != "kind-member1" {
		t.Errorf("ParsePairs = %v, %v", got, err)
	}
}
