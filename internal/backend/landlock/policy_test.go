package landlock

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	ll "github.com/agent-sandbox/agent-sandbox/internal/landlock"
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
	if p.Network != ll.NetOpen {
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
	if p.Network != ll.NetBlocked {
		t.Error("blocked network not mapped")
	}
	if !has(p.ReadExec, "/nix/store") || !has(p.ReadExec, "/h/.nix-profile") {
		t.Errorf("nix paths missing: %v", p.ReadExec)
	}
	if has(p.ReadExec, "/opt/tool/bin") || has(p.ReadExec, "/usr/bin/a") {
		t.Errorf("without plan's checked closure nothing is derived from the programs: %v", p.ReadExec)
	}
}

// TestPolicyForWrittenFile: a read-write grant of a regular file is
// executable, as a read-write directory's files are (issue 23 item 12);
// a directory, a device or a socket granted read-write is not added to
// ReadExec, and read-only and write-only file grants stay not executable.
func TestPolicyForWrittenFile(t *testing.T) {
	dir := t.TempDir()
	file, ro, wo := filepath.Join(dir, "tool.sh"), filepath.Join(dir, "ro.sh"), filepath.Join(dir, "wo.sh")
	for _, f := range []string{file, ro, wo} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s := testSpec()
	s.Allow = append(s.Allow, file, dir, sock, "/dev/null")
	s.Read = append(s.Read, ro)
	s.Write = append(s.Write, wo)
	p := PolicyFor(s, false, "")
	if !slices.Contains(p.ReadExec, file) || !slices.Contains(p.ReadWrite, file) {
		t.Errorf("a written file is not read-write and executable: ReadExec %v, ReadWrite %v", p.ReadExec, p.ReadWrite)
	}
	for _, x := range []string{dir, sock, "/dev/null", ro, wo} {
		if slices.Contains(p.ReadExec, x) {
			t.Errorf("ReadExec holds %s: %v", x, p.ReadExec)
		}
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

func TestKernelWarnings(t *testing.T) {
	blocked := ll.Policy{Network: ll.NetBlocked}
	open := ll.Policy{}
	tests := []struct {
		p     ll.Policy
		abi   int
		wants []string
	}{
		{blocked, 9, nil},
		{blocked, 7, []string{"Unix sockets by path"}},
		{open, 7, nil},
		{blocked, 4, []string{"Unix sockets by path", "cannot scope signals"}},
		{open, 5, []string{"cannot scope signals", "abstract Unix sockets"}},
	}
	for _, tt := range tests {
		got := KernelWarnings(tt.p, tt.abi)
		if len(got) != len(tt.wants) {
			t.Errorf("ABI %d %v: %q, want %d warnings", tt.abi, tt.p.Network, got, len(tt.wants))
			continue
		}
		for i, w := range tt.wants {
			if !strings.Contains(got[i], w) {
				t.Errorf("ABI %d: warning %q lacks %q", tt.abi, got[i], w)
			}
		}
	}
	e := ll.Enforcement{ABI: 5, NetNamespace: false}
	if w := namespaceWarnings(e, blocked, posture.NetBlocked); len(w) != 2 || !strings.Contains(w[0], "UDP and DNS are not confined") {
		t.Errorf("no user namespaces: %q", w)
	}
	if w := namespaceWarnings(ll.Enforcement{ABI: 7, NetNamespace: true, ScopeAbstractUnix: true}, blocked, posture.NetBlocked); w != nil {
		t.Errorf("with a namespace: %q", w)
	}
	// An allow list in the weaker sandbox is warned about once, by
	// weakerAllowlistWarning, not again as "network blocked".
	if w := namespaceWarnings(ll.Enforcement{ABI: 7, ScopeAbstractUnix: true}, blocked, posture.NetAllowlist); len(w) != 0 {
		t.Errorf("allow list: %q, want none (weakerAllowlistWarning says it)", w)
	}
}
