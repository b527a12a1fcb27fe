package why

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/agent"
	"github.com/agent-sandbox/agent-sandbox/internal/grant"
	"github.com/agent-sandbox/agent-sandbox/internal/plan"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
)

// build plans a run of a folder under the built-in engine, as the run
// command does.
func build(t *testing.T, toml, nono string, flags posture.Flags) (Input, string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, work, dir := filepath.Join(root, "home"), filepath.Join(root, "work"), filepath.Join(root, "agents", "a")
	for _, d := range []string{home, work, filepath.Join(dir, "sandbox"), filepath.Join(root, "lib")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "agent.toml"), []byte(toml), 0o644)
	if nono != "" {
		os.WriteFile(filepath.Join(dir, "sandbox", "nono.json"), []byte(nono), 0o644)
	}
	f, err := agent.LoadDir(dir, agent.FromPath)
	if err != nil {
		t.Fatal(err)
	}
	h := grant.Home{Dir: home, XDGStateHome: filepath.Join(home, ".local/state"), XDGConfig: filepath.Join(home, ".config"), GOOS: "linux"}
	flags.Backend = posture.Landlock
	pst, err := posture.Resolve(posture.Input{Agent: f.ID, Flags: flags, Nono: f.Nono, Sbx: f.Sbx, Host: posture.Host{GOOS: "linux"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Build(plan.Input{Folder: f, Posture: pst, Home: h, Workdir: work, Args: []string{},
		Getenv:   func(k string) string { return map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}[k] },
		LookPath: func(string) (string, error) { return "/bin/sh", nil }})
	if err != nil {
		t.Fatal(err)
	}
	return Input{Plan: p, Folder: f, Home: h}, root
}

func TestPath(t *testing.T) {
	in, root := build(t, "command = \"/bin/sh\"\nread_paths = [\"~/../lib\"]\nconfig_paths = [\"~/.a\"]\n", `{"network": {"block": true}}`, posture.Flags{})
	cases := []struct {
		path    string
		access  Access
		allowed bool
		rule    string
		reason  string
		fix     string
	}{
		{root + "/work/x", Write, true, "workdir", "the working directory", ""},
		{root + "/lib/y", Read, true, "grant", "agent.toml read_paths[0] grants " + root + "/lib (read-only)", ""},
		{root + "/lib/y", Write, false, "grant", "readable, not writable", "filesystem.allow in " + root + "/agents/a/sandbox/nono.json"},
		{"~/.a/settings", Write, true, "config path", "config_paths (read-write)", ""},
		{"~/.ssh/id_rsa", Read, false, "credential", "lies inside the credential path", "none: "},
		{"/usr/bin/env", Exec, true, "system path", "system path every run reads", ""},
		{"/etc/shadow", Read, false, "credential", "masked in the sandbox's view", "none: "},
		{"/srv/nothing", Read, false, "not granted", "no grant of a covers /srv/nothing", "pass --read /srv/nothing for one run, or add it to read_paths in " + root + "/agents/a/agent.toml"},
		{"~/.config/agent-sandbox/x", Write, false, "", "", "none: a writable grant of"}, // rule: the test home lies in /tmp
		{"/proc/1/environ", Read, false, "private", "the sandbox's own /proc", "none: "},
		{"/", Read, false, "refused", "grants the whole filesystem", ""},
	}
	for _, c := range cases {
		in.Path, in.Access = c.path, c.access
		a, err := Path(in)
		if err != nil {
			t.Errorf("%s %s: %v", c.access, c.path, err)
			continue
		}
		if a.Allowed != c.allowed || (c.rule != "" && a.Rule != c.rule) || !strings.Contains(a.Reason, c.reason) || !strings.Contains(a.Fix, c.fix) || (c.fix == "" && a.Fix != "") {
			t.Errorf("%s %s = %+v\nwant allowed %v, rule %q, reason ~%q, fix ~%q", c.access, c.path, a, c.allowed, c.rule, c.reason, c.fix)
		}
	}
	in.Path = "$HOME/x"
	if _, err := Path(in); err == nil {
		t.Error("$HOME/x was accepted")
	}
}

func TestHost(t *testing.T) {
	allow, _ := build(t, "command = \"/bin/sh\"\n", `{"network": {"allow_domain": ["api.example.com", "*.cdn.example.com:8443"]}}`, posture.Flags{})
	blocked, _ := build(t, "command = \"/bin/sh\"\n", `{"network": {"allow_domain": ["api.example.com"]}}`, posture.Flags{Offline: true})
	open, _ := build(t, "command = \"/bin/sh\"\n", `{"network": {"block": true}}`, posture.Flags{NetworkOpen: true})
	cases := []struct {
		in      Input
		host    string
		allowed bool
		reason  string
		fix     string
	}{
		{allow, "api.example.com", true, `allowed by entry "api.example.com"`, ""},
		{allow, "x.cdn.example.com:8443", true, `allowed by entry "*.cdn.example.com:8443"`, ""},
		{allow, "x.cdn.example.com", false, "port 443 not allowed", `add "x.cdn.example.com" to network.allow_domain`},
		{allow, "[::1]:80", false, "IP address not in the allow list", "--allow-host [::1]:80"},
		{blocked, "api.example.com", false, "the network is blocked (from --offline)", "--allow-host api.example.com"},
		{open, "anything.example", true, "the network is open (from --network open)", ""},
	}
	for _, c := range cases {
		c.in.Host = c.host
		a, err := Host(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.host, err)
			continue
		}
		if a.Allowed != c.allowed || !strings.Contains(a.Reason, c.reason) || !strings.Contains(a.Fix, c.fix) || (c.fix == "" && a.Fix != "") {
			t.Errorf("%s = %+v\nwant allowed %v, reason ~%q, fix ~%q", c.host, a, c.allowed, c.reason, c.fix)
		}
	}
	for _, bad := range []string{"", "https://x/", "x:0", "x:http", "[::1"} {
		allow.Host = bad
		if _, err := Host(allow); err == nil {
			t.Errorf("--host %q accepted", bad)
		}
	}
}
