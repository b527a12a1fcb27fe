// Package e2e holds end-to-end tests of the real agent-sandbox binary
// against real backends. Each test skips, naming the missing binary, where
// its backend is not installed; `nix flake check` provides them.
package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// nonoOrSkip returns the nono on PATH, or skips the test.
func nonoOrSkip(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skipf("nono runs on Linux and macOS, not %s", runtime.GOOS)
	}
	p, err := exec.LookPath("nono")
	if err != nil {
		t.Skip("nono not on PATH: this test runs under nix flake check, where the flake provides nono")
	}
	return p
}

// buildAgentSandbox builds ./cmd/agent-sandbox into a temporary directory,
// or returns $AGENT_SANDBOX_E2E_BIN when set: the NixOS VM tests run a
// prebuilt test binary against the installed agent-sandbox.
func buildAgentSandbox(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("AGENT_SANDBOX_E2E_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "agent-sandbox")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/agent-sandbox")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/agent-sandbox: %v\n%s", err, out)
	}
	return bin
}

// nonoRun is one `agent-sandbox --sandbox-backend nono` run.
type nonoRun struct {
	code           int
	stdout, stderr string
}

// TestNonoConfinesShell runs a shell agent under the real nono with a
// throwaway HOME holding an ssh key canary: the workdir is writable, the
// key cannot be read (and its text never appears), the home outside the
// grants cannot be written, and the agent's exit status passes through.
func TestNonoConfinesShell(t *testing.T) {
	nono := nonoOrSkip(t)
	bin := buildAgentSandbox(t)

	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	work := filepath.Join(root, "work")
	folder := filepath.Join(root, "agents", "probe")
	canary := fmt.Sprintf("CANARY-%d-do-not-leak", time.Now().UnixNano())
	for _, d := range []string{filepath.Join(home, ".ssh"), work, filepath.Join(folder, "sandbox")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(home, ".ssh", "id_ed25519"):         canary + "\n",
		filepath.Join(folder, "agent.toml"):               "command = \"/bin/sh\"\n",
		filepath.Join(folder, "sandbox", "nono.json"):     "{}\n",
		filepath.Join(home, "outside-the-grants.txt"):     "untouched\n",
		filepath.Join(work, "already-in-the-workdir.txt"): "hello\n",
	}
	for p, content := range files {
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	run := func(t *testing.T, probe string) nonoRun {
		t.Helper()
		cmd := exec.Command(bin, "--sandbox-backend", "nono", folder, "-c", probe)
		cmd.Dir = work
		env := []string{"HOME=" + home, "PATH=" + filepath.Dir(nono) + string(os.PathListSeparator) + os.Getenv("PATH"), "LANG=C"}
		for _, k := range []string{"TMPDIR", "TERM"} {
			if v, ok := os.LookupEnv(k); ok {
				env = append(env, k+"="+v)
			}
		}
		// A NONO_* variable in the caller's environment must not widen
		// the policy: agent-sandbox clears them.
		env = append(env, "NONO_ALLOW="+home)
		cmd.Env = env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		r := nonoRun{stdout: out.String(), stderr: errb.String()}
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			r.code = ee.ExitCode()
		default:
			t.Fatalf("running %s: %v", bin, err)
		}
		if strings.Contains(r.stdout+r.stderr, canary) {
			t.Fatalf("the ssh key canary leaked:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		}
		if strings.Contains(r.stderr, "deny-overlap") {
			t.Logf("nono refused a deny overlap; if TMPDIR (%s) contains the test's HOME, set TMPDIR outside it", os.Getenv("TMPDIR"))
		}
		return r
	}

	t.Run("workdir writable", func(t *testing.T) {
		r := run(t, `echo written > "$PWD/from-the-agent.txt" && cat already-in-the-workdir.txt`)
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		b, err := os.ReadFile(filepath.Join(work, "from-the-agent.txt"))
		if err != nil || string(b) != "written\n" {
			t.Fatalf("the agent could not write its workdir: %q %v\nstderr:\n%s", b, err, r.stderr)
		}
		if !strings.Contains(r.stdout, "hello") {
			t.Errorf("the agent could not read its workdir: %q", r.stdout)
		}
	})

	t.Run("ssh key unreadable", func(t *testing.T) {
		r := run(t, `cat "$HOME/.ssh/id_ed25519"; echo "cat-exit=$?"; if read -r line < "$HOME/.ssh/id_ed25519"; then echo "read-ok"; else echo "read-denied"; fi`)
		if !strings.Contains(r.stdout, "cat-exit=") || strings.Contains(r.stdout, "cat-exit=0") {
			t.Errorf("cat of the ssh key did not fail (exit %d)\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, "read-denied") {
			t.Errorf("the shell could open the ssh key\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		}
	})

	t.Run("home not writable", func(t *testing.T) {
		r := run(t, `echo overwritten > "$HOME/outside-the-grants.txt"; echo "write-exit=$?"`)
		if b, _ := os.ReadFile(filepath.Join(home, "outside-the-grants.txt")); string(b) != "untouched\n" {
			t.Errorf("the agent wrote outside its grants: %q\nstderr:\n%s", b, r.stderr)
		}
		if strings.Contains(r.stdout, "write-exit=0") {
			t.Errorf("the write outside the grants succeeded\nstdout:\n%s", r.stdout)
		}
	})

	t.Run("exit status passes through", func(t *testing.T) {
		if r := run(t, `exit 7`); r.code != 7 {
			t.Errorf("exit %d, want the agent's 7\nstderr:\n%s", r.code, r.stderr)
		}
	})

	t.Run("profile written", func(t *testing.T) {
		p := filepath.Join(home, ".local", "state", "agent-sandbox", "agents", "probe", "nono-profile.json")
		st, err := os.Stat(p)
		if err != nil {
			t.Fatalf("no profile at %s: %v", p, err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("profile mode %v, want 0600", st.Mode().Perm())
		}
		cmd := exec.Command(nono, "profile", "validate", p)
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "NONO_NO_UPDATE_CHECK=1"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("nono profile validate %s: %v\n%s", p, err, out)
		}
	})
}
