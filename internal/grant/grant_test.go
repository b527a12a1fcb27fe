package grant

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testHome(t *testing.T) (Home, string) {
	t.Helper()
	root := t.TempDir()
	root, _ = filepath.EvalSymlinks(root)
	home := filepath.Join(root, "home", "u")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": home}
	h, err := HomeFromEnv(func(k string) string { return env[k] }, "linux")
	if err != nil {
		t.Fatal(err)
	}
	return h, root
}

func TestHomeFromEnv(t *testing.T) {
	env := map[string]string{"HOME": "/h", "XDG_STATE_HOME": "/s", "XDG_CONFIG_HOME": "relative"}
	h, err := HomeFromEnv(func(k string) string { return env[k] }, "linux")
	if err != nil {
		t.Fatal(err)
	}
	if h.XDGStateHome != "/s" || h.XDGConfig != "/h/.config" || h.AgentStateDir("x") != "/s/agent-sandbox/agents/x" {
		t.Fatalf("%+v", h)
	}
	if _, err := HomeFromEnv(func(string) string { return "" }, "linux"); err == nil {
		t.Fatal("empty HOME accepted")
	}
}

func TestExpand(t *testing.T) {
	h := Home{Dir: "/h"}
	for in, want := range map[string]string{"~": "/h", "~/a/../b": "/h/b", "/x/./y/": "/x/y"} {
		got, err := h.Expand(in)
		if err != nil || got != want {
			t.Errorf("Expand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "rel", "./x", "~root/x", "$HOME/x", "/a/$X"} {
		if _, err := h.Expand(bad); err == nil {
			t.Errorf("Expand(%q) accepted", bad)
		}
	}
}

// TestResolveRefusesGlobs: grant paths are literal under every backend
// (issue 15 item 5): *, ? and [ are refused with a message naming the
// path, the character and what to do. Expand itself takes them (`why`
// asks about paths such as app/[id]/page.tsx).
func TestResolveRefusesGlobs(t *testing.T) {
	h := Home{Dir: "/h"}
	for _, bad := range []string{"~/*", "~/projects/*/data", "/data/**", "~/file?.txt", "/srv/[ab]", "~/x[", "/a/b*"} {
		_, err := Checker{Home: h}.Resolve(bad, false)
		if err == nil {
			t.Errorf("Resolve(%q) accepted a glob", bad)
			continue
		}
		if _, err := h.Expand(bad); err != nil {
			t.Errorf("Expand(%q): %v (only a grant refuses globs)", bad, err)
		}
		if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("%q contains the glob character", bad)) || !strings.Contains(msg, "list each path the agent needs") {
			t.Errorf("Expand(%q): %q, want the path, the character and the fix named", bad, msg)
		}
	}
	for _, ok := range []string{"~/a.b-c_d", "/x/y+z", "/a/{b}", "~/with space"} {
		if _, err := h.Expand(ok); err != nil {
			t.Errorf("Expand(%q): %v", ok, err)
		}
	}
}

func TestCheck(t *testing.T) {
	h, root := testHome(t)
	c := Checker{Home: h, Protected: []string{h.ConfigRoot(), h.StateRoot()}}
	refused := map[string]string{
		"/":                       "whole filesystem",
		"~":                       "whole home directory",
		filepath.Dir(h.Dir):       "parent of your home",
		"~/.ssh":                  "credential path",
		"~/.ssh/id_ed25519":       "inside the credential path",
		"~/.config":               "contains the credential path",
		"~/.aws/credentials":      "inside the credential path",
		"~/.bashrc":               "credential path",
		"~/.local":                "contains nono's protected state root",
		"~/.local/state":          "contains nono's protected state root",
		"~/.local/state/nono/x":   "inside nono's protected state root",
		"~/.nono":                 "inside nono's protected state root",
		"~/.local/share/keyrings": "credential path",
		"~/.mozilla":              "contains the credential path",
		// The checkpoint store, read-only too (issue 42).
		"~/.local/state/agent-sandbox/checkpoints/0a1b": "checkpoint store",
		"~/.local/state/agent-sandbox":                  "contains agent-sandbox's checkpoint store",
	}
	for p, why := range refused {
		_, err := c.Resolve(p, false)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("Resolve(%q) = %v, want refusal mentioning %q", p, err, why)
		}
	}
	// Writable grants may not overlap agent-sandbox's own policy and state
	// (the state root as a whole contains the checkpoint store, refused
	// read-only too: above).
	for _, p := range []string{"~/.config/agent-sandbox", "~/.config/agent-sandbox/agents/x", "~/.local/state/agent-sandbox/agents/x"} {
		if _, err := c.Resolve(p, true); err == nil || !strings.Contains(err.Error(), "widen its own next run") {
			t.Errorf("writable %q: %v", p, err)
		}
		// The state root holds the sessions directory (below).
		if _, err := c.Resolve(p, false); err != nil && p != "~/.local/state/agent-sandbox" {
			t.Errorf("read-only %q refused: %v", p, err)
		}
	}
	// No grant, read-only included, may show the sessions' control
	// sockets: the state root and the sessions directory are refused.
	// (The state root is refused for the checkpoint store first.)
	if _, err := c.Resolve("~/.local/state/agent-sandbox", false); err == nil {
		t.Errorf("read-only state root granted")
	}
	for _, p := range []string{"~/.local/state/agent-sandbox/sessions", "~/.local/state/agent-sandbox/sessions/x/control"} {
		if _, err := c.Resolve(p, false); err == nil || !strings.Contains(err.Error(), "control sockets") {
			t.Errorf("read-only %q: %v, want the sessions directory refused", p, err)
		}
	}
	allowed := []string{"~/.claude", "~/.claude.json", "~/.config/opencode", "~/.local/share/opencode", "~/.local/state/opencode", "/usr/share", "~/projects/x"}
	for _, p := range allowed {
		if _, err := c.Resolve(p, true); err != nil {
			t.Errorf("Resolve(%q): %v", p, err)
		}
	}
	// A symlink that lands on $HOME is judged by where it lands.
	link := filepath.Join(root, "link")
	if err := os.Symlink(h.Dir, link); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Resolve(link, false); err == nil || !strings.Contains(err.Error(), "resolves to") {
		t.Errorf("symlink to home: %v", err)
	}
	if _, err := c.Resolve(link+"/.ssh", false); err == nil {
		t.Errorf("symlink into ~/.ssh accepted")
	}
}

func TestCanonical(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	os.MkdirAll(filepath.Join(root, "real"), 0o755)
	os.Symlink(filepath.Join(root, "real"), filepath.Join(root, "ln"))
	if got := Canonical(filepath.Join(root, "ln", "not", "yet")); got != filepath.Join(root, "real", "not", "yet") {
		t.Fatalf("Canonical = %s", got)
	}
}

func TestCredentialPathsFollowPlatform(t *testing.T) {
	lin := Home{Dir: "/h", GOOS: "linux"}.CredentialPaths()
	mac := Home{Dir: "/h", GOOS: "darwin"}.CredentialPaths()
	has := func(list []string, p string) bool {
		for _, x := range list {
			if x == p {
				return true
			}
		}
		return false
	}
	if !has(lin, "/h/.local/share/keyrings") || has(lin, "/h/Library/Keychains") {
		t.Error("linux list wrong")
	}
	if !has(mac, "/h/Library/Keychains") || !has(mac, "/Library/Keychains") || !has(mac, "/h/.ssh") {
		t.Error("darwin list wrong")
	}
}

// TestPersistencePathsRefusedWritable: paths from where the host runs code
// later (issue 10 item 9) are refused as writable grants, inside and
// around them, and accepted read-only.
func TestPersistencePathsRefusedWritable(t *testing.T) {
	h, _ := testHome(t)
	c := Checker{Home: h}
	cases := []struct {
		path string
		why  string // "" = allowed writable
	}{
		{"~/.bash_aliases", "runs code later"},
		{"~/.config/autostart", "runs code later"},
		{"~/.config/autostart/evil.desktop", "lies inside"},
		{"~/.config/systemd/user", "runs code later"},
		{"~/.config/systemd", "contains"},
		{"~/.config/environment.d", "runs code later"},
		{"~/.local/bin", "runs code later"},
		{"~/.local/bin/claude", "lies inside"},
		{"~/.gitconfig", "runs code later"},
		{"~/.config/git", "runs code later"},
		{"~/.config/git/config", "lies inside"},
		{"~/.vimrc", "runs code later"},
		{"~/.config/nvim", "runs code later"},
		{"~/.pam_environment", "runs code later"},
		{"~/.xsessionrc", "runs code later"},
		{"~/.config/direnv", "runs code later"},
		{"~/.ipython", "runs code later"},
		{"~/.ipython/profile_default/startup", "lies inside"},
		// Neighbours: agents' own state stays writable.
		{"~/.claude", ""},
		{"~/.config/opencode", ""},
		{"~/.local/share/opencode", ""},
		{"~/.config/gitui", ""},
		{"~/.local/binaries", ""},
	}
	for _, tc := range cases {
		_, err := c.Resolve(tc.path, true)
		switch {
		case tc.why == "" && err != nil:
			t.Errorf("writable %q refused: %v", tc.path, err)
		case tc.why != "" && (err == nil || !strings.Contains(err.Error(), tc.why)):
			t.Errorf("writable %q = %v, want a refusal mentioning %q", tc.path, err, tc.why)
		}
		if tc.why != "" && err != nil && !strings.Contains(err.Error(), tc.path) {
			t.Errorf("refusal of %q does not name it: %v", tc.path, err)
		}
		if _, err := c.Resolve(tc.path, false); err != nil {
			t.Errorf("read-only %q refused: %v", tc.path, err)
		}
	}
	// $XDG_CONFIG_HOME elsewhere: its autostart is refused too.
	x := h
	x.XDGConfig = filepath.Join(filepath.Dir(h.Dir), "xdg")
	if _, err := (Checker{Home: x}).Resolve(filepath.Join(x.XDGConfig, "autostart"), true); err == nil {
		t.Errorf("writable $XDG_CONFIG_HOME/autostart accepted")
	}
}
