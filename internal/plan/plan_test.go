package plan

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/agent"
	"github.com/agent-sandbox/agent-sandbox/internal/backend/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/backend/nono"
	"github.com/agent-sandbox/agent-sandbox/internal/backend/nono/schematest"
	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	"github.com/agent-sandbox/agent-sandbox/internal/grant"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
)

// fixture is a throwaway home, workdir and agent folder.
type fixture struct {
	root, home, work string
	h                grant.Home
}

func newFixture(t *testing.T) fixture {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	f := fixture{root: root, home: filepath.Join(root, "home"), work: filepath.Join(root, "work")}
	for _, d := range []string{f.home, f.work} {
		os.MkdirAll(d, 0o755)
	}
	f.h, _ = grant.HomeFromEnv(func(k string) string {
		if k == "HOME" {
			return f.home
		}
		return ""
	}, "linux")
	return f
}

func (f fixture) folder(t *testing.T, toml string, files map[string]string) *agent.Folder {
	dir := filepath.Join(f.root, "agents", "a")
	os.MkdirAll(filepath.Join(dir, "sandbox"), 0o755)
	os.WriteFile(filepath.Join(dir, "agent.toml"), []byte(toml), 0o644)
	for name, body := range files {
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	fo, err := agent.LoadDir(dir, agent.FromPath)
	if err != nil {
		t.Fatal(err)
	}
	return fo
}

func (f fixture) build(t *testing.T, fo *agent.Folder, flags posture.Flags) (*Plan, error) {
	t.Helper()
	pst, err := posture.Resolve(posture.Input{Agent: fo.ID, Flags: flags, Nono: fo.Nono, Sbx: fo.Sbx, Host: posture.Host{GOOS: "linux", NonoFound: true}})
	if err != nil {
		t.Fatal(err)
	}
	return Build(Input{
		Folder: fo, Posture: pst, Home: f.h, Workdir: f.work,
		Getenv: func(k string) string { return map[string]string{"PATH": "/usr/bin:/bin"}[k] },
		LookPath: func(c string) (string, error) {
			if filepath.IsAbs(c) {
				return c, nil
			}
			return "", exec.ErrNotFound
		},
	})
}

func TestBareRun(t *testing.T) {
	f := newFixture(t)
	p, err := f.build(t, f.folder(t, `command = "/bin/sh"`, nil), posture.Flags{NoSandbox: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.Sandboxed || p.Backend != nil || p.Network.Mode != "unrestricted" || !slices.Equal(p.Environment.Pass, []string{"*"}) {
		t.Errorf("bare plan: %+v", p)
	}
	if len(p.Warnings) == 0 || !strings.HasPrefix(p.Warnings[0], diag.WarningPrefix) {
		t.Errorf("warnings must be full lines: %q", p.Warnings)
	}
}

func TestSandboxedGrants(t *testing.T) {
	f := newFixture(t)
	os.MkdirAll(filepath.Join(f.home, ".tool"), 0o755)
	fo := f.folder(t, "command = \"/bin/sh\"\nconfig_paths = [\"~/.tool\"]\nenv = [\"TOKEN\"]\n[set_env]\nX = \"1\"",
		map[string]string{"sandbox/nono.json": `{"filesystem": {"read": ["/usr/share"], "write": ["~/out"]}, "network": {"block": true}}`})
	p, err := f.build(t, fo, posture.Flags{Backend: posture.Landlock})
	if err != nil {
		t.Fatal(err)
	}
	s := p.Spec
	state := f.h.AgentStateDir("a")
	for _, want := range []string{f.work, filepath.Join(f.home, ".tool"), filepath.Join(state, "tmp"), filepath.Join(state, "mise-cache")} {
		if !slices.Contains(s.Allow, want) {
			t.Errorf("Allow lacks %s: %v", want, s.Allow)
		}
	}
	if slices.Contains(s.Allow, state) {
		t.Errorf("the state dir itself is granted: %v", s.Allow)
	}
	if !slices.Contains(s.Read, fo.Dir) || !slices.Contains(s.Read, "/usr/share") || !slices.Equal(s.Write, []string{filepath.Join(f.home, "out")}) {
		t.Errorf("read %v write %v", s.Read, s.Write)
	}
	if !slices.Contains(s.EnvPass, "TOKEN") || !slices.Contains(s.EnvPass, "HOME") || s.EnvSet["X"] != "1" {
		t.Errorf("env %v %v", s.EnvPass, s.EnvSet)
	}
	if pol, _ := p.Description.JSON["landlock"].(*landlock.PrintedPolicy); p.Refusal != nil || pol == nil || pol.Network != "blocked" {
		t.Errorf("landlock plan: refusal %v policy %+v", p.Refusal, pol)
	}
	if len(s.ExecClosure) == 0 {
		t.Error("no closure for /bin/sh")
	}
	if slices.Contains(p.Filesystem.Missing, filepath.Join(state, "tmp")) {
		t.Error("the state subdirs the backend creates are listed as missing")
	}
}

func TestRefusals(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name  string
		files map[string]string
		flags posture.Flags
		want  string
	}{
		{"a grant of home", map[string]string{"sandbox/nono.json": `{"filesystem": {"allow": ["~"]}}`}, posture.Flags{}, `sandbox/nono.json: filesystem.allow[0]: "~" grants your whole home directory`},
		{"open_port 0 on Linux", map[string]string{"sandbox/nono.json": `{"network": {"allow_domain": ["a.com"], "open_port": [0]}}`}, posture.Flags{Backend: posture.Nono}, "open_port: 0 (any localhost port) is macOS-only"},
		{"network_profile under landlock", map[string]string{"sandbox/nono.json": `{"network": {"network_profile": "developer"}}`}, posture.Flags{Backend: posture.Landlock}, "cannot be enforced by the landlock backend"},
		{"network_profile under sbx", map[string]string{"sandbox/nono.json": `{"network": {"network_profile": "developer"}}`}, posture.Flags{Backend: posture.Sbx}, "cannot be enforced by sbx"},
	}
	for _, c := range cases {
		_, err := f.build(t, f.folder(t, `command = "/bin/sh"`, c.files), c.flags)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
	// A workdir equal to $HOME is refused.
	fo := f.folder(t, `command = "/bin/sh"`, map[string]string{"sandbox/nono.json": `{}`})
	pst, _ := posture.Resolve(posture.Input{Agent: "a", Nono: fo.Nono, Host: posture.Host{GOOS: "linux"}})
	_, err := Build(Input{Folder: fo, Posture: pst, Home: f.h, Workdir: f.home, Getenv: os.Getenv, LookPath: exec.LookPath})
	if err == nil || !strings.Contains(err.Error(), "working directory") {
		t.Errorf("workdir = home: %v", err)
	}
}

// TestLandlockAllowlistRunsThroughTheBroker: an allow list under the
// built-in engine is enforced (the broker), never refused or dropped.
func TestLandlockAllowlistRunsThroughTheBroker(t *testing.T) {
	f := newFixture(t)
	fo := f.folder(t, `command = "/bin/sh"`, map[string]string{"sandbox/nono.json": `{"network": {"allow_domain": ["a.com"]}}`})
	p, err := f.build(t, fo, posture.Flags{Backend: posture.Landlock})
	if err != nil {
		t.Fatal(err)
	}
	if p.Refusal != nil && strings.Contains(*p.Refusal, "broker") {
		t.Fatalf("refusal = %v", *p.Refusal)
	}
	var text strings.Builder
	if err := p.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "egress broker on 127.0.0.1:3128") || !strings.Contains(text.String(), "HTTPS_PROXY=") {
		t.Errorf("the plan does not say the broker enforces the list:\n%s", text.String())
	}
}

func TestSbxDropsNonoOnlyKeysWithWarning(t *testing.T) {
	f := newFixture(t)
	fo := f.folder(t, `command = "/bin/sh"`, map[string]string{"sandbox/nono.json": `{"network": {"allow_domain": ["a.com"], "open_port": [11434]}}`})
	p, err := f.build(t, fo, posture.Flags{Backend: posture.Sbx})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Spec.Network.OpenPorts) != 0 || !strings.Contains(strings.Join(p.Warnings, "\n"), "network.open_port is nono-only") {
		t.Errorf("ports %v warnings %q", p.Spec.Network.OpenPorts, p.Warnings)
	}
	if !slices.Equal(p.Spec.Network.AllowDomains, []string{"a.com"}) {
		t.Errorf("the allow list was lost: %v", p.Spec.Network.AllowDomains)
	}
}

func TestExecClosureNeverGrantsHome(t *testing.T) {
	f := newFixture(t)
	prog := filepath.Join(f.home, "tool")
	os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755)
	c := grant.Checker{Home: f.h}
	got, warns := execClosure([]string{prog}, "/usr/bin:/bin", c, nil)
	if slices.Contains(got, f.home) {
		t.Fatalf("closure grants the home directory: %v", got)
	}
	if !slices.Contains(got, prog) {
		t.Errorf("the program file itself should be granted: %v (warnings %q)", got, warns)
	}
	_, warns = execClosure([]string{"/nonexistent/x"}, "", c, nil)
	if len(warns) == 0 {
		t.Error("no warning for a missing program")
	}

	// A wrapper the agent can rewrite grants nothing from its chain: here
	// it names ~/.config/gh, which is not on the credential list.
	gh := filepath.Join(f.home, ".config", "gh")
	os.MkdirAll(gh, 0o755)
	os.WriteFile(filepath.Join(gh, "hosts.yml"), []byte("token"), 0o644)
	cfg := filepath.Join(f.home, ".mytool", "bin")
	os.MkdirAll(cfg, 0o755)
	wrapper := filepath.Join(cfg, "mytool")
	os.WriteFile(wrapper, []byte("#!/bin/sh\nexec /bin/cat "+filepath.Join(gh, "hosts.yml")+"\n"), 0o755)
	got, warns = execClosure([]string{wrapper}, "/usr/bin:/bin", c, []string{filepath.Join(f.home, ".mytool")})
	if len(got) != 0 || len(warns) != 1 || !strings.Contains(warns[0], "which the agent can write") {
		t.Errorf("closure through a writable wrapper: %v, warnings %q", got, warns)
	}
	if got, _ := execClosure([]string{wrapper}, "/usr/bin:/bin", c, nil); !slices.Contains(got, gh) {
		t.Errorf("control: the same wrapper, not writable, does reach %s: %v", gh, got)
	}
}

func TestPackageRoots(t *testing.T) {
	got := packageRoots([]string{"/opt/a/node_modules/x/bin/cli.js", "/usr/bin/node", "/p/node_modules/.bin/y"})
	want := []string{"/opt/a/node_modules", "/p/node_modules"}
	if !slices.Equal(got, want) {
		t.Errorf("packageRoots = %v, want %v", got, want)
	}
}

// TestBuiltinProfilesValidate: every built-in agent gets a nono plan, and
// its profile validates against nono 0.74's JSON schema (only that subtest
// skips when the schema is absent).
func TestBuiltinProfilesValidate(t *testing.T) {
	f := newFixture(t)
	for _, name := range agent.BuiltinNames() {
		fo, err := agent.LoadBuiltin(name)
		if err != nil {
			t.Fatal(err)
		}
		pst, err := posture.Resolve(posture.Input{Agent: name, Nono: fo.Nono, Sbx: fo.Sbx, Host: posture.Host{GOOS: "linux", NonoFound: true}})
		if err != nil {
			t.Fatal(err)
		}
		p, err := Build(Input{Folder: fo, Posture: pst, Home: f.h, Workdir: f.work, Getenv: os.Getenv, LookPath: exec.LookPath,
			Protected: []string{filepath.Join(f.home, ".config/agent-sandbox/agents")}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// Under nono alone and nono inside the view alike.
		prof, ok := p.Profile.(*nono.Profile)
		if !ok {
			t.Fatalf("%s: no nono profile", name)
		}
		b, err := nono.Marshal(*prof)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name+"/schema", func(t *testing.T) {
			if err := schematest.Validate(t, b); err != nil {
				t.Errorf("%s: profile does not validate: %v\n%s", name, err, b)
			}
		})
	}
}
