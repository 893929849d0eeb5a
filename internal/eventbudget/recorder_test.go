package eventbudget

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

func TestRecordBoth(t *testing.T) {
	rb := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "nginx-deployment"}}
	deployment := workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: "nginx", UID: "u1"}
	tests := map[string]struct {
		resource workv1alpha2.ObjectReference
		want     []string
	}{
		"binding and template": {resource: deployment, want: []string{
			"Normal Reason message involvedObject{kind=ResourceBinding,apiVersion=work.karmada.io/v1alpha2}",
			"Normal Reason message involvedObject{kind=Deployment,apiVersion=apps/v1}",
		}},
		"no template named: the binding only": {resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment"}, want: []string{
			"Normal Reason message involvedObject{kind=ResourceBinding,apiVersion=work.karmada.io/v1alpha2}",
		}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			rec.IncludeObject = true
			b := rb.DeepCopy()
			b.SetGroupVersionKind(workv1alpha2.SchemeGroupVersion.WithKind("ResourceBinding"))
			RecordBoth(rec, b, &workv1alpha2.ResourceBindingSpec{Resource: tt.resource}, "Normal", "Reason", "message")
			close(rec.Events)
			var got []string
			for e := range rec.Events {
				got = append(got, e)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Events %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("Event %d: %q, want %q", i, got[i], tt.want[i])
				}
			}
		})
	}
	// Without a recorder nothing happens.
	RecordBoth(nil, rb, &workv1alpha2.ResourceBindingSpec{Resource: deployment}, "Normal", "Reason", "message")
}
