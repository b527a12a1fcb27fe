package sbx_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creack/pty"

	"github.com/agent-sandbox/agent-sandbox/internal/backend/sbx"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// newSpec is a run spec whose paths exist under a temporary root.
func newSpec(t *testing.T, id string) spec.Spec {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	s := spec.Spec{
		AgentID:  id,
		AgentDir: filepath.Join(root, "agents", id),
		Workdir:  filepath.Join(root, "proj"),
		StateDir: filepath.Join(home, ".local/state/agent-sandbox/agents", id),
		Home:     home,
		Argv:     []string{"/usr/bin/" + id},
		Network:  posture.Network{Mode: posture.NetOpen},
	}
	for _, d := range []string{s.AgentDir, s.Workdir, s.StateDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s.Read = []string{s.AgentDir}
	s.Allow = append([]string{s.Workdir}, s.AgentStateDirs()...)
	return s
}

// piSpec is pi with a host `pi` that prints version v on stderr, as pi does.
func piSpec(t *testing.T, v string) (spec.Spec, sbx.Options) {
	t.Helper()
	s := newSpec(t, "pi")
	bin := filepath.Join(filepath.Dir(s.Workdir), "hostbin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	hostPi := filepath.Join(bin, "pi")
	if err := os.WriteFile(hostPi, []byte("#!/bin/sh\necho "+v+" >&2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s.Argv = []string{hostPi, "-p", "hello"}
	o := sbx.Options{Install: "npm:" + sbx.PiPackageOld, VersionCommand: []string{hostPi, "--version"}}
	cfg := filepath.Join(s.Home, ".pi/agent")
	s.ConfigPaths = []string{cfg}
	s.Allow = append(s.Allow, cfg)
	return s, o
}

type runResult struct {
	code   int
	stderr string
	calls  []call
}

func execute(t *testing.T, s spec.Spec, o sbx.Options, out io.Writer, rules ...reply) (runResult, sbx.Prepared) {
	t.Helper()
	path, calls := standin(t, rules...)
	o.Path = path
	p, err := sbx.Prepare(s, o)
	if err != nil {
		t.Fatal(err)
	}
	if out == nil {
		out = io.Discard
	}
	var errb bytes.Buffer
	code := sbx.Execute(p, s, launch.Stdio{In: nil, Out: out, Err: &errb})
	return runResult{code: code, stderr: errb.String(), calls: calls()}, p
}

func TestStandinCreateFailureRefuses(t *testing.T) {
	r, _ := execute(t, newSpec(t, "a"), sbx.Options{}, nil, reply{Args: []string{"create"}, Exit: 1, Stderr: "error: mount /x: no such file or directory\n"})
	if r.code != launch.ExitRefused {
		t.Errorf("exit %d, want 125", r.code)
	}
	if !strings.Contains(r.stderr, "no such file or directory") || !strings.Contains(r.stderr, "sbx create") {
		t.Errorf("stderr does not show sbx's answer: %q", r.stderr)
	}
	if len(find(r.calls, "exec")) != 0 {
		t.Errorf("the agent started after a failed create:\n%s", argsOf(r.calls))
	}
}

func TestStandinAlreadyExistsAttaches(t *testing.T) {
	r, p := execute(t, newSpec(t, "a"), sbx.Options{}, nil, reply{Args: []string{"create"}, Exit: 1, Stderr: "Error: sandbox \"x\" already exists\n"})
	if r.code != 0 {
		t.Fatalf("exit %d, want 0 (attach); stderr %q", r.code, r.stderr)
	}
	want := "sbx ls -q\nsbx policy ls\nsbx " + strings.Join(p.CreateArgv()[1:], " ") + "\nsbx " + strings.Join(p.ExecArgv(false)[1:], " ") + "\n"
	if got := argsOf(r.calls); got != want {
		t.Errorf("calls:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(r.stderr, "Sandbox Active") {
		// launch.Banner prints only on a terminal (TestBannerLine).
		t.Errorf("a banner on a stderr that is not a terminal: %q", r.stderr)
	}
}

func TestStandinMaterialiseOrder(t *testing.T) {
	s, o := piSpec(t, "0.73.1")
	s.Network = posture.Network{Mode: posture.NetAllowlist, AllowDomains: []string{"api.anthropic.com", "localhost:11434"}}
	r, p := execute(t, s, o, nil)
	if r.code != 0 {
		t.Fatalf("exit %d; stderr %q", r.code, r.stderr)
	}
	var order []string
	for _, c := range r.calls {
		order = append(order, strings.Join(c.Args[:2], " "))
	}
	want := "ls -q|policy ls|create shell|policy allow|exec " + p.Name + "|exec " + p.Name + "|exec " + p.Name + "|exec -i"
	if got := strings.Join(order, "|"); got != want {
		t.Errorf("order %s\nwant  %s\n%s", got, want, argsOf(r.calls))
	}
	// The record remembers the sandbox and the rule it carries.
	rec, err := sbx.LoadRecord(p.StateRoot, p.Name)
	if err != nil || rec == nil {
		t.Fatalf("no record: %v", err)
	}
	if rec.Workdir != s.Workdir || rec.Agent != "pi" || strings.Join(rec.Mounts, " ") != strings.Join(p.Mounts, " ") {
		t.Errorf("record %+v", rec)
	}
	if strings.Join(rec.Allowed, ",") != "*.api.anthropic.com,api.anthropic.com,host.docker.internal:11434" {
		t.Errorf("record allowed %q", rec.Allowed)
	}
	// The pi extension was written, atomically, where the exec names it.
	b, err := os.ReadFile(p.PiExtension)
	if err != nil || string(b) != sbx.PiExtensionSource {
		t.Errorf("pi extension %s: %v", p.PiExtension, err)
	}
	if !strings.Contains(strings.Join(find(r.calls, "exec", "-i")[0].Args, " "), "pi --extension "+p.PiExtension+" -p hello") {
		t.Errorf("exec does not load the extension: %s", argsOf(r.calls))
	}
}

func TestStandinProvisionVersionMatchSkipsInstall(t *testing.T) {
	ps, po := piSpec(t, "0.73.1")
	r, _ := execute(t, ps, po, nil, reply{Args: []string{"exec", "*", "pi", "--version"}, Stderr: "0.73.1\n"})
	if r.code != 0 {
		t.Fatalf("exit %d; stderr %q", r.code, r.stderr)
	}
	if got := find(r.calls, "exec", "*", "npm"); len(got) != 0 {
		t.Errorf("installed although the guest has the host's version:\n%s", argsOf(got))
	}
	if len(find(r.calls, "exec", "*", "pi", "--version")) != 1 {
		t.Errorf("the guest version was not probed:\n%s", argsOf(r.calls))
	}
}

func TestStandinProvisionMismatchInstallsPinned(t *testing.T) {
	for _, c := range []struct{ host, guest, want string }{
		{"0.73.1", "0.70.0\n", sbx.PiPackageOld + "@0.73.1"},
		{"0.80.6", "0.73.1\n", sbx.PiPackageNew + "@0.80.6"}, // renamed after 0.73.1
		{"0.80.6", "", sbx.PiPackageNew + "@0.80.6"},         // not installed in the guest
	} {
		ps, po := piSpec(t, c.host)
		r, p := execute(t, ps, po, nil,
			reply{Args: []string{"exec", "*", "pi", "--version"}, Stderr: c.guest, Exit: map[bool]int{true: 127, false: 0}[c.guest == ""]})
		if r.code != 0 {
			t.Fatalf("exit %d; stderr %q", r.code, r.stderr)
		}
		installs := find(r.calls, "exec", p.Name, "npm")
		if len(installs) != 1 || strings.Join(installs[0].Args[2:], " ") != "npm install -g "+c.want {
			t.Errorf("host %s guest %q: installs\n%s\nwant npm install -g %s", c.host, c.guest, argsOf(installs), c.want)
		}
	}
}

func TestStandinInstallFailureRefuses(t *testing.T) {
	ps, po := piSpec(t, "0.73.1")
	r, _ := execute(t, ps, po, nil, reply{Args: []string{"exec", "*", "npm"}, Exit: 1, Stderr: "npm ERR! network\n"})
	if r.code != launch.ExitRefused || len(find(r.calls, "exec", "-i")) != 0 {
		t.Errorf("exit %d, calls\n%s", r.code, argsOf(r.calls))
	}
	if !strings.Contains(r.stderr, "registry.npmjs.org") {
		t.Errorf("stderr %q does not say what the install needs", r.stderr)
	}
}

func TestStandinPolicyFailureRefuses(t *testing.T) {
	for _, mode := range []posture.Network{
		{Mode: posture.NetBlocked},
		{Mode: posture.NetAllowlist, AllowDomains: []string{"a.com"}},
	} {
		s := newSpec(t, "a")
		s.Network = mode
		r, _ := execute(t, s, sbx.Options{}, nil, reply{Args: []string{"policy", "*", "network"}, Exit: 1, Stderr: "unknown flag: --sandbox\n"})
		if r.code != launch.ExitRefused {
			t.Errorf("%s: exit %d, want 125", mode.Mode, r.code)
		}
		if len(find(r.calls, "exec")) != 0 {
			t.Errorf("%s: the agent started without its network rule:\n%s", mode.Mode, argsOf(r.calls))
		}
		if !strings.Contains(r.stderr, "unknown flag: --sandbox") || !strings.Contains(r.stderr, "--help") {
			t.Errorf("%s: stderr %q", mode.Mode, r.stderr)
		}
	}
}

func TestStandinExitStatusPassesThrough(t *testing.T) {
	for _, code := range []int{0, 1, 42, 130} {
		r, _ := execute(t, newSpec(t, "a"), sbx.Options{}, nil, reply{Args: []string{"exec", "-i"}, Exit: code})
		if r.code != code {
			t.Errorf("agent exit %d came back as %d", code, r.code)
		}
	}
}

func TestStandinNotSignedInRefuses(t *testing.T) {
	r, _ := execute(t, newSpec(t, "a"), sbx.Options{}, nil, reply{Args: []string{"ls"}, Exit: 1, Stderr: "You are not logged in.\n"})
	if r.code != launch.ExitRefused || !strings.Contains(r.stderr, "sbx login") || !strings.Contains(r.stderr, "not logged in") {
		t.Errorf("exit %d, stderr %q: want 125 naming `sbx login` and sbx's answer", r.code, r.stderr)
	}
	if len(find(r.calls, "create")) != 0 {
		t.Error("created a sandbox after a failed sign-in check")
	}
}

func TestStandinPolicyUninitialisedRefuses(t *testing.T) {
	for _, rep := range []reply{
		{Args: []string{"policy", "ls"}, Exit: 1, Stderr: "Error: no policy configured\n"},
		{Args: []string{"policy", "ls"}, Stdout: "Network policy not initialized. Run 'sbx policy init'.\n"},
	} {
		r, _ := execute(t, newSpec(t, "a"), sbx.Options{}, nil, rep)
		if r.code != launch.ExitRefused || !strings.Contains(r.stderr, "sbx policy init deny-all") {
			t.Errorf("exit %d, stderr %q: want 125 naming `sbx policy init deny-all`", r.code, r.stderr)
		}
		if len(find(r.calls, "create")) != 0 {
			t.Error("created a sandbox without an initialised global policy")
		}
	}
}

func TestStandinMissingSbxRefuses(t *testing.T) {
	s := newSpec(t, "a")
	p, err := sbx.Prepare(s, sbx.Options{Path: "sbx"})
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	if code := sbx.Execute(p, s, launch.Stdio{Out: io.Discard, Err: &errb}); code != launch.ExitRefused || !strings.Contains(errb.String(), "not installed") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}

func TestStandinRulesFromEarlierRunsRefuseNarrowerAllowlist(t *testing.T) {
	s := newSpec(t, "a")
	path, _ := standin(t, reply{Args: []string{"create"}, Exit: 1, Stderr: "already exists"})
	run := func(domains ...string) (int, string) {
		s.Network = posture.Network{Mode: posture.NetAllowlist, AllowDomains: domains}
		p, err := sbx.Prepare(s, sbx.Options{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		var errb bytes.Buffer
		return sbx.Execute(p, s, launch.Stdio{Out: io.Discard, Err: &errb}), errb.String()
	}
	// No record of an existing sandbox: its rules are unknown.
	if code, stderr := run("a.com"); code != launch.ExitRefused || !strings.Contains(stderr, "no record") {
		t.Fatalf("unknown history: exit %d, %q", code, stderr)
	}
	p, _ := sbx.Prepare(s, sbx.Options{Path: path})
	if err := sbx.SaveRecord(p.StateRoot, sbx.Record{Name: p.Name, Agent: "a", Workdir: s.Workdir}); err != nil {
		t.Fatal(err)
	}
	if code, stderr := run("a.com", "evil.com"); code != 0 {
		t.Fatalf("first run: exit %d, %q", code, stderr)
	}
	if code, stderr := run("a.com"); code != launch.ExitRefused || !strings.Contains(stderr, "evil.com") || !strings.Contains(stderr, "sbx rm -f "+p.Name) {
		t.Errorf("narrower run after a wider one: exit %d, %q", code, stderr)
	}
}

func TestStandinTTY(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal available: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	go io.Copy(io.Discard, ptmx)

	r, _ := execute(t, newSpec(t, "a"), sbx.Options{}, tty)
	execs := find(r.calls, "exec", "-i")
	if r.code != 0 || len(execs) != 1 {
		t.Fatalf("exit %d, calls\n%s", r.code, argsOf(r.calls))
	}
	if execs[0].Args[2] != "-t" || !execs[0].StdoutTTY {
		t.Errorf("on a terminal: %q (stdout tty %v), want exec -i -t on the terminal", execs[0].Args, execs[0].StdoutTTY)
	}

	var buf bytes.Buffer
	r, _ = execute(t, newSpec(t, "a"), sbx.Options{}, &buf)
	execs = find(r.calls, "exec", "-i")
	if len(execs) != 1 || contains(execs[0].Args, "-t") || execs[0].StdoutTTY {
		t.Errorf("without a terminal: %q, want no -t", execs[0].Args)
	}
}

func TestStandinVerbose(t *testing.T) {
	s := newSpec(t, "a")
	path, _ := standin(t)
	p, _ := sbx.Prepare(s, sbx.Options{Path: path, Verbose: true})
	var errb bytes.Buffer
	if code := sbx.Execute(p, s, launch.Stdio{Out: io.Discard, Err: &errb}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if strings.Contains(errb.String(), sbx.Banner) {
		t.Error("--verbose printed the silent-run banner")
	}
	if !strings.Contains(errb.String(), "agent-sandbox: + "+path+" create shell") {
		t.Errorf("--verbose does not echo the setup commands: %q", errb.String())
	}
}

func TestStandinCreatesMissingMountDirs(t *testing.T) {
	s := newSpec(t, "claude")
	os.RemoveAll(s.StateDir)
	cfg := filepath.Join(s.Home, ".claude")
	s.ConfigPaths = []string{cfg}
	s.Allow = append(s.Allow, cfg)
	r, _ := execute(t, s, sbx.Options{}, nil)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, d := range []string{s.StateDir, cfg} {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			t.Errorf("%s was not created before sbx create: %v", d, err)
		}
	}
}

func TestListAndRemove(t *testing.T) {
	path, calls := standin(t,
		reply{Args: []string{"ls", "-q"}, Stdout: "agent-sandbox-a-12345678\nclaude-proj\n"},
		reply{Args: []string{"rm", "-f", "agent-sandbox-bad-00000000"}, Exit: 1, Stderr: "no such sandbox"},
	)
	names, err := sbx.List(path)
	if err != nil || strings.Join(names, ",") != "agent-sandbox-a-12345678" {
		t.Errorf("List = %q, %v", names, err)
	}
	root := t.TempDir()
	sbx.SaveRecord(root, sbx.Record{Name: "agent-sandbox-a-12345678"})
	if err := sbx.Remove(path, root, "agent-sandbox-a-12345678"); err != nil {
		t.Fatal(err)
	}
	if rec, _ := sbx.LoadRecord(root, "agent-sandbox-a-12345678"); rec != nil {
		t.Error("record kept after removal")
	}
	if err := sbx.Remove(path, root, "agent-sandbox-bad-00000000"); err == nil || !strings.Contains(err.Error(), "no such sandbox") {
		t.Errorf("failed rm: %v", err)
	}
	if got := find(calls(), "rm", "-f"); len(got) != 2 {
		t.Errorf("rm calls:\n%s", argsOf(got))
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
