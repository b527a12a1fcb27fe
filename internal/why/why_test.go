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
	loopNamed, _ := build(t, "command = \"/bin/sh\"\n", `{"network": {"allow_domain": ["127.0.0.1", "localhost:8080"], "open_port": [11434]}}`, posture.Flags{})
	blockPort, _ := build(t, "command = \"/bin/sh\"\n", `{"network": {"block": true, "open_port": [11434]}}`, posture.Flags{})
	offPort, _ := build(t, "command = \"/bin/sh\"\n", `{"network": {"block": true, "open_port": [11434]}}`, posture.Flags{Offline: true})
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
		{allow, "10.0.0.1:80", false, "IP address not in the allow list", "--allow-host 10.0.0.1:80"},
		{blocked, "api.example.com", false, "the network is blocked (from --offline)", "--allow-host api.example.com"},
		{open, "anything.example", true, "the network is open (from --network open)", ""},
		{open, "127.0.0.1:8080", true, "the network is open", ""},
		// Loopback (issue 23 item 7): the sandbox's own, reaching the
		// host's only on forwarded ports, whatever the list names.
		{allow, "[::1]:80", false, "inside the sandbox ::1 is its own loopback", "--allow-host [::1]:80"},
		{allow, "localhost:8080", false, "the host's loopback is reachable only on the forwarded ports (none)", "--allow-host localhost:8080"},
		{allow, "localhost:3128", false, "the sandbox's 127.0.0.1:3128 is the egress broker", "--allow-host localhost:3128"},
		{loopNamed, "127.0.0.1:5432", false, "its own loopback", "add 5432 to network.open_port"},
		{loopNamed, "127.0.0.1:8080", true, "port 8080 of the sandbox's loopback is forwarded to the host's (allow list names localhost:8080)", ""},
		{loopNamed, "[::1]:8080", true, "forwarded", ""},
		{loopNamed, "127.0.0.1:11434", true, "(open_port 11434)", ""},
		{loopNamed, "127.0.0.2:8080", true, "port 8080 is forwarded", ""},
		{loopNamed, "127.0.0.2:9", false, "port 9 of the loopback is not forwarded", "--allow-host localhost:9"},
		{blockPort, "localhost:11434", true, "(open_port 11434)", ""},
		{blockPort, "127.0.0.2:11434", false, "the network is blocked", "connect to 127.0.0.1:11434 or [::1]:11434"},
		{blockPort, "localhost:11435", false, "the host's loopback is reachable only on the forwarded ports (11434)", "add 11435 to network.open_port"},
		{offPort, "localhost:11434", false, "forwarded ports (none) (network blocked, from --offline)", "drop --offline"},
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
