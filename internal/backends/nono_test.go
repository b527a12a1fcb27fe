package backends

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/backend/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/backend/nono"
	"github.com/agent-sandbox/agent-sandbox/internal/engine"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// keyedSpec is a run of /bin/sh with an allow list and a routed
// credential, in a fresh home.
func keyedSpec(t *testing.T) spec.Spec {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := spec.Spec{
		AgentID: "a", Workdir: filepath.Join(dir, "work"), Home: filepath.Join(dir, "home"),
		StateDir: filepath.Join(dir, "home", ".local", "state", "agent-sandbox", "agents", "a"),
		Argv:     []string{"/bin/sh", "-c", "true"}, CommandFound: true, GOOS: "linux",
		Network:     posture.Network{Mode: posture.NetAllowlist, AllowDomains: []string{"api.example.com"}, Source: "--allow-host"},
		EnvPass:     []string{"HOME", "PATH", "ANTHROPIC_API_KEY"},
		Credentials: []spec.Credential{{Env: "ANTHROPIC_API_KEY", Source: "env:ANTHROPIC_API_KEY"}},
	}
	for _, d := range []string{s.Workdir, s.Home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestNonoEngineChoice: a nono run is nono inside the view where the view
// can be built (its dry run shows nono's command, the per-run profile
// path, and an allow-list port kept by the broker), nono alone without a
// view (the routed key withheld, one line saying so), and the weaker
// sandbox without a view when the user accepted it.
func TestNonoEngineChoice(t *testing.T) {
	t.Setenv(landlock.WeakerSandboxEnv, "")
	s := keyedSpec(t)
	b := nonoEngine{
		nono:     nono.Backend{Options: nono.Options{Path: "/usr/bin/nono"}},
		getenv:   func(string) string { return "sk-real" },
		expected: func() (bool, string) { return true, "" },
	}
	withPort := s
	withPort.Network.AllowDomains = []string{"api.example.com", "127.0.0.1:8080"}
	p, err := b.Prepare(withPort)
	if err != nil {
		t.Fatalf("nono-in-view refused an allow-list port (the broker keeps it): %v", err)
	}
	d := p.Describe()
	if d.Engine != landlock.EngineNonoInView {
		t.Fatalf("engine %q, want %q", d.Engine, landlock.EngineNonoInView)
	}
	argv := d.Commands[0].Argv
	if argv[0] != "/usr/bin/nono" || !slices.Equal(argv[len(argv)-3:], s.Argv) || !slices.Contains(argv, "--profile") {
		t.Errorf("the command inside the view: %q", argv)
	}
	if pp, _ := d.JSON["profile_path"].(string); !strings.HasPrefix(pp, filepath.Join(s.StateRoot(), nono.RunsDirName)) {
		t.Errorf("profile_path %q is not the run's own directory in the state root", pp)
	}
	if prof, ok := d.JSON["profile"].(*nono.Profile); !ok || prof.Network.Block || len(prof.Network.AllowDomain) > 0 {
		t.Errorf("nono's network inside the view is not left to the view: %+v", d.JSON["profile"])
	}

	b.expected = func() (bool, string) { return false, "test: no user namespaces" }
	p, err = b.Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	d = p.Describe()
	warnings := strings.Join(d.Warnings, "\n")
	if d.Engine != nono.EngineAlone || !strings.Contains(warnings, "nono runs alone") || !strings.Contains(warnings, "credentials ANTHROPIC_API_KEY: not given to the agent") {
		t.Errorf("without a view: engine %q, warnings %q", d.Engine, d.Warnings)
	}
	if prof := d.JSON["profile"].(*nono.Profile); slices.Contains(prof.Environment.AllowVars, "ANTHROPIC_API_KEY") {
		t.Errorf("nono alone passes the routed key: %q", prof.Environment.AllowVars)
	}
	if np := p.(*nono.Prepared); slices.Contains(np.Spec.EnvPass, "ANTHROPIC_API_KEY") {
		t.Errorf("nono alone is started with the routed key: %q", np.Spec.EnvPass)
	}

	if d.Refusal != "" {
		t.Errorf("nono alone without a terminal refused: %s", d.Refusal)
	}
	// On a terminal nono's supervisor needs a Unix socket for its
	// terminal proxy, which the seccomp layer refuses: a refusal that
	// names the way out, not nono's "Failed to create PTY proxy".
	tb := b
	tb.tty = true
	if p, err := tb.Prepare(s); err != nil || !strings.Contains(p.Describe().Refusal, "cannot start on a terminal") || !strings.Contains(p.Describe().Refusal, landlock.WeakerSandboxEnv) {
		t.Errorf("nono alone on a terminal: refusal %q (%v)", p.Describe().Refusal, err)
	}

	t.Setenv(landlock.WeakerSandboxEnv, "1")
	p, err = b.Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	d = p.Describe()
	if d.Engine != string(engine.Weaker) || !strings.Contains(strings.Join(d.Warnings, "\n"), "the weaker sandbox runs instead of nono alone") {
		t.Errorf("without a view, weaker sandbox accepted: engine %q, warnings %q", d.Engine, d.Warnings)
	}

	// macOS: nono alone, no weaker sandbox to offer; the key withheld all
	// the same.
	mac := s
	mac.GOOS = "darwin"
	p, err = nonoAlone{nono: b.nono, getenv: b.getenv}.Prepare(mac)
	if err != nil {
		t.Fatal(err)
	}
	d = p.Describe()
	if w := strings.Join(d.Warnings, "\n"); !strings.Contains(w, "credentials ANTHROPIC_API_KEY: not given to the agent") || strings.Contains(w, landlock.WeakerSandboxEnv) {
		t.Errorf("macOS: warnings %q", d.Warnings)
	}
}
