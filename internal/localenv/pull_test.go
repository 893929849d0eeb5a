package localenv

import (
	"strings"
	"testing"
)

func TestCheckPullMembers(t *testing.T) {
	cases := map[string]struct {
		names   []string
		wantErr string
	}{
		"none":          {nil, ""},
		"one":           {[]string{"member3"}, ""},
		"two":           {[]string{"member1", "member3"}, ""},
		"past the last": {[]string{"member4"}, "member1 to member3"},
		"zero":          {[]string{"member0"}, "member1 to member3"},
		"leading zero":  {[]string{"member03"}, "member1 to member3"},
		"not a member":  {[]string{"lifeboat"}, "member1 to member3"},
		"prefix only":   {[]string{"member"}, "member1 to member3"},
		"twice":         {[]string{"member2", "member2"}, "given twice"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := checkPullMembers(tc.names, 3)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("checkPullMembers = %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("checkPullMembers = %v, want %q", err, tc.wantErr)
			}
		})
	}
}
