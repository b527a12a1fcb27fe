package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSaveAllow(t *testing.T) {
	write := func(body string) string {
		dir := t.TempDir()
		if body != "" {
			if err := os.MkdirAll(filepath.Join(dir, "sandbox"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "sandbox", "nono.json"), []byte(body), 0o640); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	dir := write(`{"filesystem": {"read": ["~/x"]}, "network": {"allow_domain": ["a.example"], "open_port": [8080]}}`)
	path, added, err := SaveAllow(dir, "b.example:443")
	if err != nil || !added {
		t.Fatalf("SaveAllow: %v %v", added, err)
	}
	b, _ := os.ReadFile(path)
	for _, want := range []string{`"a.example"`, `"b.example:443"`, `8080`, `"~/x"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("nono.json lost or lacks %s: %s", want, b)
		}
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want the file's own 0640", fi.Mode().Perm())
	}
	if _, added, err := SaveAllow(dir, "b.example:443"); err != nil || added {
		t.Errorf("saving it again: added %v, %v; want nothing added", added, err)
	}
	for body, why := range map[string]string{
		"":                                "does not exist",
		`{"network": {"block": true}}`:    "network.block",
		`{"filesystem": {}}`:              "no network.allow_domain",
		`{"network": {"open_port": [1]}}`: "no network.allow_domain",
	} {
		if _, _, err := SaveAllow(write(body), "c.example"); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: %v, want a refusal naming %q", body, err, why)
		}
	}
}
