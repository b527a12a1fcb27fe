package confine

import (
	"slices"
	"strings"
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

func testSpec() spec.Spec {
	return spec.Spec{
		AgentID: "a", AgentDir: "/agents/a", Workdir: "/w", StateDir: "/h/.local/state/agent-sandbox/agents/a", Home: "/h",
		Argv: []string{"/usr/bin/a"}, CommandFound: true,
		Read: []string{"/agents/a", "/data"}, Write: []string{"/h/out"},
		Allow: []string{"/w", "/h/.local/state/agent-sandbox/agents/a/mise-cache", "/h/.local/state/agent-sandbox/agents/a/tmp", "/h/.a"},
		Exec:  []string{"/usr/bin/a", "/opt/tool/bin/t"}, ExecClosure: []string{"/opt/tool", "/usr/bin"},
		Network: posture.Network{Mode: posture.NetOpen},
		EnvPass: []string{"HOME", "PATH", "UNSET_VAR"}, EnvSet: map[string]string{"B": "2", "A": "1"},
	}
}

func TestPolicyFor(t *testing.T) {
	s := testSpec()
	p := PolicyFor(s, false, "/usr/local/bin/agent-sandbox")
	has := func(list []string, x string) bool { return slices.Contains(list, x) }
	for _, x := range []string{"/usr/bin", "/lib", "/opt/tool", "/usr/local/bin/agent-sandbox"} {
		if !has(p.ReadExec, x) {
			t.Errorf("ReadExec lacks %s: %v", x, p.ReadExec)
		}
	}
	for _, x := range []string{"/etc/resolv.conf", "/etc/passwd", "/proc", "/agents/a", "/data"} {
		if !has(p.ReadOnly, x) {
			t.Errorf("ReadOnly lacks %s", x)
		}
	}
	for _, x := range []string{"/w", "/h/.a", "/dev/null", "/dev/tty", "/dev/ptmx", s.TempDir(), s.MiseCacheDir()} {
		if !has(p.ReadWrite, x) {
			t.Errorf("ReadWrite lacks %s", x)
		}
	}
	if !slices.Equal(p.WriteOnly, []string{"/h/out"}) {
		t.Errorf("WriteOnly = %v", p.WriteOnly)
	}
	if p.Network != landlock.NetOpen {
		t.Errorf("network %v", p.Network)
	}
	// Nothing grants the home directory, /etc as a whole, /tmp or /nix.
	for _, l := range [][]string{p.ReadExec, p.ReadOnly, p.ReadWrite, p.WriteOnly} {
		for _, x := range l {
			if x == "/h" || x == "/etc" || x == "/tmp" || x == "/" || x == "/dev/pts" || strings.HasPrefix(x, "/nix") || x == s.StateDir {
				t.Errorf("policy grants %s", x)
			}
		}
	}

	s.Network.Mode = posture.NetBlocked
	s.ExecClosure = nil
	p = PolicyFor(s, true, "")
	if p.Network != landlock.NetBlocked {
		t.Error("blocked network not mapped")
	}
	if !has(p.ReadExec, "/nix/store") || !has(p.ReadExec, "/h/.nix-profile") {
		t.Errorf("nix paths missing: %v", p.ReadExec)
	}
	if has(p.ReadExec, "/opt/tool/bin") || has(p.ReadExec, "/usr/bin/a") {
		t.Errorf("without plan's checked closure nothing is derived from the programs: %v", p.ReadExec)
	}
}

func TestEnv(t *testing.T) {
	s := testSpec()
	host := map[string]string{"HOME": "/h", "PATH": "/usr/bin", "SECRET": "x"}
	env := Env(s, func(k string) (string, bool) { v, ok := host[k]; return v, ok })
	want := []string{"HOME=/h", "PATH=/usr/bin", "A=1", "B=2", "TMPDIR=" + s.TempDir(), "MISE_CACHE_DIR=" + s.MiseCacheDir()}
	if !slices.Equal(env, want) {
		t.Errorf("Env = %q\nwant %q", env, want)
	}
}

func TestTrampolineUsage(t *testing.T) {
	var b strings.Builder
	if code := Trampoline([]string{"/usr"}, &b); code != 125 || !strings.Contains(b.String(), "internal") {
		t.Errorf("no separator: %d %q", code, b.String())
	}
}
