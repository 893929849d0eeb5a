package yamlfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadOne(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("a: "+strings.Repeat("x", MaxSize)), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		path    string
		want    string // a part of the document; "" when refused
		refused string
	}{
		"one object":                      {path: write("one.yaml", "kind: A\n"), want: "kind: A"},
		"one object after a separator":    {path: write("sep.yaml", "---\nkind: A\n"), want: "kind: A"},
		"comments around one object":      {path: write("comments.yaml", "# a\n---\nkind: A\n---\n# b\n"), want: "kind: A"},
		"JSON":                            {path: write("one.json", `{"kind": "A"}`), want: `"kind": "A"`},
		"two objects":                     {path: write("two.yaml", "kind: A\n---\nkind: B\n"), refused: "found 2 objects; want one object"},
		"nothing":                         {path: write("empty.yaml", "# nothing\n"), refused: "found no object"},
		"separators only":                 {path: write("seps.yaml", "---\n---\n--- # end\n"), refused: "found no object"},
		"separators around one object":    {path: write("seps1.yaml", "---\n---\nkind: A\n---\n---\n"), want: "kind: A"},
		"no such file":                    {path: filepath.Join(dir, "gone.yaml"), refused: "no such file"},
		"larger than any stored object":   {path: big, refused: "larger than 8 MiB"},
		"a List":                          {path: write("list.yaml", "kind: List\nitems:\n- kind: A\n- kind: B\n"), refused: "found a List of 2 objects; want one object"},
		"a kind's list":                   {path: write("dlist.yaml", "kind: DeploymentList\nitems: []\n"), refused: "found a DeploymentList of 0 objects"},
		"a JSON array":                    {path: write("array.json", `[{"kind": "A"}, {"kind": "B"}]`), refused: "found an array of 2 objects"},
		"a kind named List without items": {path: write("kindlist.yaml", "kind: PlayList\nspec: {}\n"), want: "kind: PlayList"},
		"a named object of a kind named List, with items": {path: write("playlist.yaml", "kind: PlayList\nmetadata: {name: road}\nitems: [a, b]\n"), want: "kind: PlayList"},
		"a List of one":                      {path: write("list1.yaml", "kind: List\nmetadata: {resourceVersion: \"\"}\nitems:\n- kind: A\n"), refused: "found a List of 1 object; want one object"},
		"items in an object that is no list": {path: write("items.yaml", "kind: Cart\nitems:\n- a\n"), want: "kind: Cart"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			doc, err := ReadOne(tc.path, "one object")
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("ReadOne = %q, %v; want an error saying %q", doc, err, tc.refused)
				}
				return
			}
			if err != nil || !strings.Contains(string(doc), tc.want) {
				t.Fatalf("ReadOne = %q, %v; want %q", doc, err, tc.want)
			}
		})
	}
}
