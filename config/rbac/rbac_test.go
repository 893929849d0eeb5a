package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

func TestManifestsGrantTheRoleToTheUser(t *testing.T) {
	role, err := ControllerManagerRole()
	if err != nil {
		t.Fatal(err)
	}
	if role.Name != ControllerManagerRoleName || len(role.Rules) == 0 {
		t.Fatalf("role %q with %d rules", role.Name, len(role.Rules))
	}
	b, err := ControllerManagerBinding()
	if err != nil {
		t.Fatal(err)
	}
	want := rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: ControllerManagerUser}
	if b.RoleRef.Name != role.Name || b.RoleRef.Kind != "ClusterRole" || len(b.Subjects) != 1 || b.Subjects[0] != want {
		t.Errorf("binding %+v does not grant %s to %s", b, role.Name, ControllerManagerUser)
	}
	// The templates it claims may be of any kind, so it may read and
	// update every kind; it may create and delete only its own kinds, and
	// nothing grants a wildcard verb or lets it give itself more.
	for _, r := range role.Rules {
		for _, v := range r.Verbs {
			switch v {
			case "*", "escalate", "bind", "impersonate":
				t.Errorf("rule %+v grants %s", r, v)
			case "create", "delete", "deletecollection", "patch":
				for _, g := range r.APIGroups {
					if g == "*" {
						t.Errorf("rule %+v grants %s on every group", r, v)
					}
				}
				for _, res := range r.Resources {
					if res == "*" {
						t.Errorf("rule %+v grants %s on every resource", r, v)
					}
				}
			}
		}
	}
}
