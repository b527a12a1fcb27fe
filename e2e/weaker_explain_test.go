package e2e

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestWeakerExplains: under the weaker sandbox (a host without user
// namespaces, accepted with AGENT_SANDBOX_WEAKER_SANDBOX=1) every
// explanation names the engine that runs and what it lacks: --dry-run
// (text and JSON), why, the start banner and the end-of-run line; and an
// allow-list run warns once about its network, not twice (issue 37,
// item 4). Before, they all described the namespace view.
func TestWeakerExplains(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	bin := buildAgentSandbox(t)
	prefix := noUserns(t)
	work := t.TempDir()
	home := t.TempDir()
	env := withCover([]string{"HOME=" + home, "PATH=/usr/bin:/bin", "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"), "AGENT_SANDBOX_WEAKER_SANDBOX=1", "TERM=xterm"})
	command := func(args ...string) *exec.Cmd {
		cmd := exec.Command(prefix[0], append(append(prefix[1:], bin), args...)...)
		cmd.Dir, cmd.Env = work, env
		return cmd
	}
	run := func(args ...string) (string, int) {
		out, err := command(args...).CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	ll := []string{"--sandbox-backend", "landlock"}

	t.Run("dry-run", func(t *testing.T) {
		out, code := run(append(ll, "--dry-run", "shell", "-c", "true")...)
		if code != 0 || !strings.Contains(out, "# engine: weaker sandbox (Landlock, seccomp and no_new_privs only") ||
			!strings.Contains(out, "# this engine gives NOT: names and metadata of ungranted paths hidden") ||
			!strings.Contains(out, "# this engine gives NOT: host processes invisible") {
			t.Errorf("--dry-run (exit %d) does not name the weaker sandbox and what it lacks: %s", code, out)
		}
		if strings.Contains(out, "engine: namespace view") {
			t.Errorf("--dry-run describes the namespace view: %s", out)
		}
		cmd := command(append(ll, "--dry-run", "--json", "shell", "-c", "true")...)
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("--dry-run --json: %v", err)
		}
		var plan struct {
			Engine struct {
				ID    string   `json:"id"`
				Lacks []string `json:"lacks"`
			} `json:"engine"`
		}
		if err := json.Unmarshal(b, &plan); err != nil {
			t.Fatal(err)
		}
		if plan.Engine.ID != "weaker" || len(plan.Engine.Lacks) == 0 {
			t.Errorf("JSON engine %+v, want weaker with what it lacks", plan.Engine)
		}
	})

	t.Run("shell-startup-and-tmp", func(t *testing.T) {
		rc := filepath.Join(home, ".bashrc")
		if err := os.WriteFile(rc, []byte("export RC_SECRET=canary-in-bashrc\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(rc)
		out, _ := run(append(ll, "--dry-run", "shell")...)
		if !strings.Contains(out, "your shell start-up files stay unreadable") || !strings.Contains(out, rc) ||
			!strings.Contains(out, "/tmp and /var/tmp are the host's") || !strings.Contains(out, "listing / is refused") ||
			!strings.Contains(out, "extended attributes, which Landlock does not govern, are performed by agent-sandbox for the agent, inside the writable grants only") {
			t.Errorf("--dry-run does not say what stays refused: %s", out)
		}
		out, _ = run(append(ll, "shell", "-c", `cat "$HOME/.bashrc"; echo "RC=$RC_SECRET"; echo x > "$TMPDIR/t" && echo TMPDIR-OK`)...)
		if strings.Contains(out, "canary-in-bashrc") || !strings.Contains(out, "TMPDIR-OK") {
			t.Errorf("the weaker sandbox read ~/.bashrc, or its TMPDIR failed: %s", out)
		}
	})

	t.Run("why", func(t *testing.T) {
		out, _ := run(append([]string{"why"}, append(ll, filepath.Join(work, "x"))...)...)
		if !strings.Contains(out, "(landlock: weaker sandbox)") || !strings.Contains(out, "engine: the weaker sandbox gives NOT:") {
			t.Errorf("why does not name the weaker sandbox: %s", out)
		}
		// A toolchain cache: not granted, and the agent uses its copy.
		cache := filepath.Join(home, ".npm")
		out, _ = run(append([]string{"why"}, append(ll, cache)...)...)
		if _, err := os.Stat("/usr/bin/npm"); err == nil && (!strings.Contains(out, "rule:   cache") || !strings.Contains(out, "the run's own copy")) {
			t.Errorf("why %s does not say the agent uses its own copy: %s", cache, out)
		}
	})

	t.Run("end-of-run", func(t *testing.T) {
		out, code := run(append(ll, "shell", "-c", "exit 3")...)
		if code != 3 || !strings.Contains(out, "shell exited 3 inside the sandbox (weaker sandbox)") {
			t.Errorf("exit %d; the end-of-run line does not name the weaker sandbox: %s", code, out)
		}
	})

	t.Run("allowlist-warns-once", func(t *testing.T) {
		out, code := run(append(ll, "--allow-host", "example.invalid", "shell", "-c", "true")...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, out)
		}
		if n := strings.Count(out, "allow-list network in the WEAKER sandbox"); n != 1 || strings.Contains(out, "network blocked with Landlock TCP rules only") {
			t.Errorf("the allow list's network is not warned about once (%d): %s", n, out)
		}
		out, _ = run(append(ll, "--offline", "shell", "-c", "true")...)
		if !strings.Contains(out, "network blocked with Landlock TCP rules only") {
			t.Errorf("offline: no warning that UDP and DNS are open: %s", out)
		}
	})

	t.Run("banner", func(t *testing.T) {
		ptmx, tty, err := pty.Open()
		if err != nil {
			t.Skipf("cannot open a pseudo-terminal: %v", err)
		}
		defer ptmx.Close()
		var shown strings.Builder
		done := make(chan struct{})
		go func() { io.Copy(&shown, ptmx); close(done) }()
		cmd := command(append(ll, "shell", "-c", "true")...)
		cmd.Stderr = tty
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		tty.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
		o := shown.String()
		if !strings.Contains(o, "Sandbox Active (weaker sandbox: weaker than the namespace view") {
			t.Errorf("the banner does not name the weaker sandbox: %q", o)
		}
	})
}
