package grant

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestDenyListMatchesNono cross-checks the hard-coded credential paths with
// nono 0.74's own policy.json (its required deny groups), read from
// ../shared/reference beside the repository.
func TestDenyListMatchesNono(t *testing.T) {
	path := os.Getenv("AGENT_SANDBOX_NONO_POLICY")
	if path == "" {
		path = filepath.Join("..", "..", "..", "shared", "reference", "nono-0.74", "policy.json")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("nono's policy.json not found at %s (set AGENT_SANDBOX_NONO_POLICY): %v", path, err)
	}
	var pol struct {
		Groups map[string]struct {
			Required bool   `json:"required"`
			Platform string `json:"platform"`
			Deny     struct {
				Access []string `json:"access"`
			} `json:"deny"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(b, &pol); err != nil {
		t.Fatal(err)
	}
	for _, goos := range []string{"linux", "darwin"} {
		plat := map[string]string{"linux": "linux", "darwin": "macos"}[goos]
		var want []string
		for _, g := range pol.Groups {
			if !g.Required || (g.Platform != "" && g.Platform != plat) {
				continue
			}
			for _, p := range g.Deny.Access {
				if rest, ok := strings.CutPrefix(p, "~/"); ok {
					p = "/h/" + rest
				}
				want = append(want, p)
			}
		}
		got := Home{Dir: "/h", GOOS: goos}.CredentialPaths()
		sort.Strings(want)
		sort.Strings(got)
		want = uniq(want)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: credential paths differ from nono's required deny groups\n got: %v\nwant: %v", goos, got, want)
		}
	}
}

func uniq(s []string) []string {
	var out []string
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}
