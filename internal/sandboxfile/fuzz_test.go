package sandboxfile

import (
	"strings"
	"testing"

	"github.com/tailscale/hujson"
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

// FuzzLiteralString checks the unescaped fast path of literalString
// against hujson's own unescaping, for every string literal hujson parses.
func FuzzLiteralString(f *testing.F) {
	for _, s := range []string{`"/a/b"`, `"\u00e9"`, `"a\\b"`, `"é"`, "\"\xff\"", `""`, `"\"x"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		v, err := hujson.Parse([]byte(src))
		if err != nil || v.Value.Kind() != '"' {
			return
		}
		lit := v.Value.(hujson.Literal)
		if got, want := literalString(lit), lit.String(); got != want {
			t.Fatalf("literalString(%q) = %q, want %q", src, got, want)
		}
	})
}
