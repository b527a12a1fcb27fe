package sandboxfile

import (
	"strings"
	"testing"
)

// FuzzParse: no input panics, and every error names the file.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"sandbox": false}`, `{"network": {"block": true}}`,
		`{"filesystem": {"read": ["~/a"], "allow": ["/b"]}, "network": {"allow_domain": ["a.com"], "open_port": [1]}}`,
		`// c` + "\n" + `{"unsafe_macos_seatbelt_rules": ["(allow x)"],}`,
		`{"a": {"b": [1, 2, {"c": null}]}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		for _, k := range []Kind{Nono, Sbx} {
			path := "/fuzz/" + k.RelPath()
			file, err := Parse(path, k, []byte(src))
			if err != nil {
				if !strings.HasPrefix(err.Error(), path) {
					t.Fatalf("error does not name the file: %v", err)
				}
				continue
			}
			if file.Path != path || file.Kind != k {
				t.Fatalf("bad file header %+v", file)
			}
		}
	})
}
