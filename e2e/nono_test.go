// Package e2e holds end-to-end tests of the real agent-sandbox binary
// against real backends. The nono tests run the nono named by
// AGENT_SANDBOX_E2E_NONO, else the nono on PATH, else the one .ci/run
// builds in /opt/nono-<version>; without one they skip,
// naming what is missing, except where cargo is installed: nono can be
// built there (.ci/run does), so a missing nono fails. sbx tests skip
// without sbx; `nix flake check` provides both.
package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// nonoEnv names the variable holding the nono the suite runs.
const nonoEnv = "AGENT_SANDBOX_E2E_NONO"

// nonoBinary returns the nono the suite runs: $AGENT_SANDBOX_E2E_NONO, else
// the nono on PATH, else the pinned version where .ci/run builds it
// (/opt/nono-<version>/bin/nono). When there is none it returns "" and why; bad is set
// when AGENT_SANDBOX_E2E_NONO names something that is not an executable
// file (always an error, never a skip).
func nonoBinary() (path, why string, bad bool) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		return "", "nono runs on Linux and macOS, not " + runtime.GOOS, false
	}
	if p := os.Getenv(nonoEnv); p != "" {
		abs, err := filepath.Abs(p)
		if err == nil {
			var fi os.FileInfo
			if fi, err = os.Stat(abs); err == nil && (fi.IsDir() || fi.Mode()&0o111 == 0) {
				err = errors.New("not an executable file")
			}
		}
		if err != nil {
			return "", fmt.Sprintf("%s=%s: %v; set it to a built nono (cargo install --locked nono-cli@%s --root /opt/nono-%s puts one in /opt/nono-%s/bin/nono), or unset it to use the nono on PATH", nonoEnv, p, err, nonoPinned(), nonoPinned(), nonoPinned()), true
		}
		return abs, "", false
	}
	if p, err := exec.LookPath("nono"); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs, "", false
		}
	}
	if v := nonoPinned(); !strings.HasPrefix(v, "<") {
		if p := nonoBuilt(v); p != "" {
			return p, "", false
		}
	}
	return "", fmt.Sprintf("nono is not installed: neither %s nor PATH names one, nor is there one in /opt/nono-%s", nonoEnv, nonoPinned()), false
}

// nonoBuilt is /opt/nono-<version>/bin/nono, where .ci/run builds that
// version, when it is an executable file; else "".
func nonoBuilt(version string) string {
	p := filepath.Join("/opt", "nono-"+version, "bin", "nono")
	if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
		return p
	}
	return ""
}

// nonoPinned is the nono version the project is pinned to: the one the
// locked nixpkgs ships, named by nix/nono.nix (lockedVersion), which
// .ci/run builds. "" when nix/nono.nix is not beside the test (a test
// binary run elsewhere).
func nonoPinned() string {
	b, err := os.ReadFile(filepath.Join("..", "nix", "nono.nix"))
	if err != nil {
		return "<the version nix/nono.nix names>"
	}
	m := regexp.MustCompile(`lockedVersion = "([0-9.]+)";`).FindSubmatch(b)
	if m == nil {
		return "<the version nix/nono.nix names>"
	}
	return string(m[1])
}

// nonoOrSkip returns the nono the suite runs, or skips the test saying
// what is missing. Where cargo is installed a missing nono is a failure,
// not a skip: nono can be built there, so its tests must run.
func nonoOrSkip(t *testing.T) string {
	t.Helper()
	p, why, bad := nonoBinary()
	if p != "" {
		return p
	}
	if bad {
		t.Fatal(why)
	}
	if cargo, err := exec.LookPath("cargo"); err == nil && runtime.GOOS == "linux" {
		v := nonoPinned()
		t.Fatalf("%s, but cargo is installed (%s), so nono can be built here and its tests must run: cargo install --locked nono-cli@%s --root /opt/nono-%s, then set %s=/opt/nono-%s/bin/nono (.ci/run does both)", why, cargo, v, v, nonoEnv, v)
	}
	t.Skip(why + ": this test runs where nono is installed (.ci/run builds it with cargo; nix flake check provides it)")
	return ""
}

// nonoSelected says whether the flags choose the nono backend.
func nonoSelected(flags []string) bool {
	for i, f := range flags {
		if f == "--sandbox-backend=nono" || (f == "--sandbox-backend" && i+1 < len(flags) && flags[i+1] == "nono") {
			return true
		}
	}
	return false
}

// pathFor is the PATH of a run with these flags: agentPath(), with the
// directory of the nono under test first when the flags choose nono (so
// that agent-sandbox finds that nono).
func pathFor(flags []string) string {
	if !nonoSelected(flags) {
		return agentPath()
	}
	p, _, _ := nonoBinary()
	if p == "" {
		return agentPath()
	}
	return filepath.Dir(p) + string(os.PathListSeparator) + agentPath()
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
	nono := skipWithoutNono(t)
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
		env := []string{"HOME=" + home, "PATH=" + filepath.Dir(nono) + string(os.PathListSeparator) + agentPath(), "LANG=C"}
		for _, k := range []string{"TMPDIR", "TERM"} {
			if v, ok := os.LookupEnv(k); ok {
				env = append(env, k+"="+v)
			}
		}
		// A NONO_* variable in the caller's environment must not widen
		// the policy: agent-sandbox clears them.
		env = append(env, "NONO_ALLOW="+home)
		cmd.Env = withCover(env)
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

	t.Run("profile valid, none left behind", func(t *testing.T) {
		// nono runs inside the view here: its profile is written per run
		// into a fresh directory of the state root and removed after the
		// run. The dry run's profile (the run's grants) must load in nono.
		state := filepath.Join(home, ".local", "state", "agent-sandbox")
		if entries, _ := os.ReadDir(filepath.Join(state, "nono-runs")); len(entries) != 0 {
			t.Errorf("nono's run directories are left behind: %v", entries)
		}
		cmd := exec.Command(bin, "--sandbox-backend", "nono", "--dry-run", "--json", folder)
		cmd.Dir = work
		cmd.Env = withCover([]string{"HOME=" + home, "PATH=" + filepath.Dir(nono) + string(os.PathListSeparator) + agentPath()})
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("--dry-run --json: %v", err)
		}
		var plan struct {
			Engine struct {
				ID string `json:"id"`
			} `json:"engine"`
			Profile json.RawMessage `json:"profile"`
		}
		if err := json.Unmarshal(out, &plan); err != nil || plan.Engine.ID != "nono-in-view" {
			t.Fatalf("engine %q (%v), want nono-in-view: %s", plan.Engine.ID, err, out)
		}
		p := filepath.Join(t.TempDir(), "nono-profile.json")
		if err := os.WriteFile(p, plan.Profile, 0o600); err != nil {
			t.Fatal(err)
		}
		v := exec.Command(nono, "profile", "validate", p)
		v.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "NONO_NO_UPDATE_CHECK=1"}
		if out, err := v.CombinedOutput(); err != nil {
			t.Errorf("nono profile validate %s: %v\n%s", p, err, out)
		}
	})
}
