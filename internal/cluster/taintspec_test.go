package cluster

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
)

func TestParseTaintSpecs(t *testing.T) {
	cases := map[string]struct {
		specs   []string
		want    TaintEdit
		wantErr string
	}{
		"key=value:effect": {
			specs: []string{"dedicated=gpu:NoSchedule"},
			want:  TaintEdit{Add: []corev1.Taint{taint("dedicated", "gpu", corev1.TaintEffectNoSchedule)}},
		},
		"key:effect without value": {
			specs: []string{"example.com/maintenance:NoExecute"},
			want:  TaintEdit{Add: []corev1.Taint{taint("example.com/maintenance", "", corev1.TaintEffectNoExecute)}},
		},
		"several, adds and removals": {
			specs: []string{"a=1:NoSchedule", "b-", "c:NoExecute-", "d=x:NoSchedule-"},
			want: TaintEdit{
				Add:    []corev1.Taint{taint("a", "1", corev1.TaintEffectNoSchedule)},
				Remove: []corev1.Taint{{Key: "b"}, {Key: "c", Effect: corev1.TaintEffectNoExecute}, {Key: "d", Effect: corev1.TaintEffectNoSchedule}},
			},
		},
		"same key with two effects": {
			specs: []string{"a:NoSchedule", "a:NoExecute"},
			want:  TaintEdit{Add: []corev1.Taint{taint("a", "", corev1.TaintEffectNoSchedule), taint("a", "", corev1.TaintEffectNoExecute)}},
		},
		"missing effect":            {specs: []string{"dedicated=gpu"}, wantErr: "missing effect"},
		"PreferNoSchedule refused":  {specs: []string{"a:PreferNoSchedule"}, wantErr: "PreferNoSchedule is not supported"},
		"unknown effect":            {specs: []string{"a:Evict"}, wantErr: `unknown effect "Evict"`},
		"unknown effect in removal": {specs: []string{"a:Evict-"}, wantErr: "unknown effect"},
		"invalid key":               {specs: []string{"bad key:NoSchedule"}, wantErr: "invalid key"},
		"empty key":                 {specs: []string{"=v:NoSchedule"}, wantErr: "empty key"},
		"invalid value":             {specs: []string{"a=has space:NoSchedule"}, wantErr: "invalid value"},
		"duplicate":                 {specs: []string{"a=1:NoSchedule", "a=2:NoSchedule"}, wantErr: "given twice"},
		"add and remove the same":   {specs: []string{"a=1:NoSchedule", "a-"}, wantErr: "both added and removed"},
		"nothing":                   {specs: nil, wantErr: "no taint given"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseTaintSpecs(tc.specs)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("edit (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApplyTaintEdit(t *testing.T) {
	earlier := t0.Add(-time.Hour)
	gpu := taint("dedicated", "gpu", corev1.TaintEffectNoSchedule)
	maint := taintAt("maintenance", "", corev1.TaintEffectNoExecute, earlier)
	cases := map[string]struct {
		taints       []corev1.Taint
		specs        []string
		overwrite    bool
		want         []corev1.Taint
		wantResult   TaintEditResult
		wantErr      string
		wantNotFound bool
	}{
		"add to none": {
			specs:      []string{"dedicated=gpu:NoSchedule"},
			want:       []corev1.Taint{gpu},
			wantResult: TaintEditResult{Added: []string{"dedicated=gpu:NoSchedule"}},
		},
		"NoExecute gets timeAdded": {
			specs:      []string{"maintenance:NoExecute"},
			want:       []corev1.Taint{taintAt("maintenance", "", corev1.TaintEffectNoExecute, t0)},
			wantResult: TaintEditResult{Added: []string{"maintenance:NoExecute"}},
		},
		"identical taint is left as it is (timeAdded kept)": {
			taints:     []corev1.Taint{maint},
			specs:      []string{"maintenance:NoExecute"},
			want:       []corev1.Taint{maint},
			wantResult: TaintEditResult{Unchanged: []string{"maintenance:NoExecute"}},
		},
		"different value without --overwrite is refused": {
			taints: []corev1.Taint{gpu}, specs: []string{"dedicated=fpga:NoSchedule"},
			wantErr: "use --overwrite",
		},
		"different value with --overwrite replaces in place": {
			taints: []corev1.Taint{gpu, maint}, specs: []string{"dedicated=fpga:NoSchedule"}, overwrite: true,
			want:       []corev1.Taint{taint("dedicated", "fpga", corev1.TaintEffectNoSchedule), maint},
			wantResult: TaintEditResult{Replaced: []string{"dedicated=fpga:NoSchedule"}},
		},
		"same key, other effect is added alongside": {
			taints: []corev1.Taint{gpu}, specs: []string{"dedicated=gpu:NoExecute"},
			want:       []corev1.Taint{gpu, taintAt("dedicated", "gpu", corev1.TaintEffectNoExecute, t0)},
			wantResult: TaintEditResult{Added: []string{"dedicated=gpu:NoExecute"}},
		},
		"remove by key removes every effect": {
			taints: []corev1.Taint{gpu, taint("dedicated", "", corev1.TaintEffectNoExecute), maint}, specs: []string{"dedicated-"},
			want:       []corev1.Taint{maint},
			wantResult: TaintEditResult{Removed: []string{"dedicated=gpu:NoSchedule", "dedicated:NoExecute"}},
		},
		"remove by key and effect": {
			taints: []corev1.Taint{gpu, taint("dedicated", "", corev1.TaintEffectNoExecute)}, specs: []string{"dedicated:NoExecute-"},
			want:       []corev1.Taint{gpu},
			wantResult: TaintEditResult{Removed: []string{"dedicated:NoExecute"}},
		},
		"removing the last taint leaves none": {
			taints: []corev1.Taint{gpu}, specs: []string{"dedicated-"},
			want: nil, wantResult: TaintEditResult{Removed: []string{"dedicated=gpu:NoSchedule"}},
		},
		"removing a missing taint is an error": {
			taints: []corev1.Taint{gpu}, specs: []string{"dedicated:NoExecute-"},
			wantErr: "taint not found: dedicated:NoExecute", wantNotFound: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			edit, err := ParseTaintSpecs(tc.specs)
			if err != nil {
				t.Fatal(err)
			}
			got, res, err := applyTaintEdit(tc.taints, edit, tc.overwrite, t0)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				if errors.Is(err, errTaintNotFound) != tc.wantNotFound {
					t.Errorf("errors.Is(err, errTaintNotFound) = %t", !tc.wantNotFound)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("taints (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantResult, res, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}
