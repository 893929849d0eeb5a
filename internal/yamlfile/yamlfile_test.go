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
		"one object":                    {path: write("one.yaml", "kind: A\n"), want: "kind: A"},
		"one object after a separator":  {path: write("sep.yaml", "---\nkind: A\n"), want: "kind: A"},
		"comments around one object":    {path: write("comments.yaml", "# a\n---\nkind: A\n---\n# b\n"), want: "kind: A"},
		"JSON":                          {path: write("one.json", `{"kind": "A"}`), want: `"kind": "A"`},
		"two objects":                   {path: write("two.yaml", "kind: A\n---\nkind: B\n"), refused: "found 2 objects; want one object"},
		"nothing":                       {path: write("empty.yaml", "# nothing\n"), refused: "found no object"},
		"no such file":                  {path: filepath.Join(dir, "gone.yaml"), refused: "no such file"},
		"larger than any stored object": {path: big, refused: "larger than 8 MiB"},
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
