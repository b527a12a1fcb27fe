package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Hosts without user namespaces (issue 10, "Without user namespaces"): the
// built-in engine refuses unless the user accepts the weaker sandbox, and
// the weaker sandbox denies Unix sockets and keyrings with seccomp.
//
// The host is simulated with the real kernel: agent-sandbox runs in a user
// namespace whose user.max_user_namespaces is 0, so it cannot create one
// of its own (clone fails with ENOSPC), as on a host where they are off.

// noUserns returns the argv prefix that runs a command where user
// namespaces cannot be created, or skips saying why.
func noUserns(t *testing.T) []string {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("needs unshare (util-linux) to simulate a host without user namespaces")
	}
	prefix := []string{unshare, "-U", "-r", "--", "/bin/sh", "-c", `echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"`, "sh"}
	out, err := exec.Command(prefix[0], append(prefix[1:], unshare, "-U", "true")...).CombinedOutput()
	if err == nil {
		t.Skipf("could not simulate a host without user namespaces (a nested one was still created): %s", out)
	}
	if !strings.Contains(string(out), "No space left") {
		t.Skipf("control: the simulation does not work here (user namespaces unavailable to this test itself?): %v: %s", err, out)
	}
	return prefix
}

func TestNoUserNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	bin := buildAgentSandbox(t)
	prefix := noUserns(t)
	work := t.TempDir()
	home := t.TempDir()
	run := func(weaker bool, args ...string) (string, int) {
		cmd := exec.Command(prefix[0], append(append(prefix[1:], bin), args...)...)
		cmd.Dir = work
		cmd.Env = withCover([]string{"HOME=" + home, "PATH=/usr/bin:/bin", "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_STATE_HOME=" + filepath.Join(home, ".local", "state")})
		if weaker {
			cmd.Env = append(cmd.Env, "AGENT_SANDBOX_WEAKER_SANDBOX=1")
		}
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	started := filepath.Join(work, "started")

	t.Run("refused-by-default", func(t *testing.T) {
		out, code := run(false, "--sandbox-backend", "landlock", "shell", "-c", "touch "+started)
		if code != 125 || !strings.Contains(out, "AGENT_SANDBOX_WEAKER_SANDBOX=1") || !strings.Contains(out, "namespace view") {
			t.Errorf("exit %d, want 125 naming the opt-in: %s", code, out)
		}
		if _, err := os.Stat(started); err == nil {
			t.Errorf("the agent started although the run was refused")
		}
		out, code = run(false, "--sandbox-backend", "landlock", "--dry-run", "shell", "-c", "true")
		if code != 125 || !strings.Contains(out, "AGENT_SANDBOX_WEAKER_SANDBOX") {
			t.Errorf("--dry-run (exit %d, want 125) does not show the refusal: %s", code, out)
		}
	})

	t.Run("weaker-opt-in", func(t *testing.T) {
		if _, err := exec.LookPath("python3"); err != nil {
			t.Skip("needs python3 for the socket and keyring probes")
		}
		probe := `python3 -c '
import socket, ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
got = []
try:
    socket.socket(socket.AF_UNIX).close(); got.append("unix socket")
except OSError:
    pass
a, b = socket.socketpair(); a.close(); b.close()
nr = {"x86_64": 250, "aarch64": 219}[os.uname().machine]
if libc.syscall(nr, ctypes.c_long(0), ctypes.c_long(-3), ctypes.c_long(0)) >= 0: got.append("keyctl")
try:
    open(os.environ["SECRET"]).read(); got.append("secret")
except OSError:
    pass
print("GOT", got)
sys.exit(1 if got else 0)'`
		secret := filepath.Join(home, ".ssh", "id_ed25519")
		if err := os.MkdirAll(filepath.Dir(secret), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(secret, []byte("key\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		// Control: unsandboxed, every probe gets through.
		if out, code := run(true, "--no-sandbox", "shell", "-c", "SECRET="+secret+" "+probe); code == 0 {
			t.Fatalf("control: unsandboxed the probe got nothing (exit %d): %s", code, out)
		}
		out, code := run(true, "--sandbox-backend", "landlock", "shell", "-c", "SECRET="+secret+" "+probe)
		if code != 0 {
			t.Errorf("the weaker sandbox let through what it must deny (exit %d): %s", code, out)
		}
		if !strings.Contains(out, "WEAKER sandbox") {
			t.Errorf("no warning that the sandbox is weaker: %s", out)
		}
		if out, code := run(true, "--sandbox-backend", "landlock", "shell", "-c", "touch "+started); code != 0 {
			t.Errorf("neighbour: writing the workdir failed (exit %d): %s", code, out)
		}
		if _, err := os.Stat(started); err != nil {
			t.Errorf("neighbour: the agent did not write its workdir")
		}
	})

	// A link or rename across directories of the workdir is the agent's
	// own work (git, package managers, editors' atomic saves): Landlock
	// refuses every one (EXDEV) in a layer that does not handle
	// LANDLOCK_ACCESS_FS_REFER, as the /proc layer did (found by the
	// kernel matrix, e2e/kernels).
	t.Run("weaker-link-across-directories", func(t *testing.T) {
		os.RemoveAll(filepath.Join(work, "a"))
		os.RemoveAll(filepath.Join(work, "b"))
		out, code := run(true, "--sandbox-backend", "landlock", "shell", "-c", "mkdir a b && echo x > a/f && ln a/f b/g && mv a/f b/h")
		if code != 0 {
			t.Errorf("linking and renaming across the workdir's directories failed (exit %d): %s", code, out)
		}
		var a, b syscall.Stat_t
		if err := syscall.Stat(filepath.Join(work, "b", "g"), &a); err != nil {
			t.Fatalf("the link is not there: %v", err)
		}
		if err := syscall.Stat(filepath.Join(work, "b", "h"), &b); err != nil || a.Ino != b.Ino {
			t.Errorf("b/h is not the renamed file (a copy instead of a rename?): %v", err)
		}
	})

	t.Run("weaker-allowlist", func(t *testing.T) {
		if _, err := exec.LookPath("curl"); err != nil {
			t.Fatal("curl is not installed: apt-get install curl (.ci/run does)")
		}
		allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "allowed-ok") }))
		defer allowed.Close()
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "CANARY-other") }))
		defer other.Close()
		ap, op := allowed.Listener.Addr().(*net.TCPAddr).Port, other.Listener.Addr().(*net.TCPAddr).Port
		script := fmt.Sprintf(`curl -sS --noproxy '' http://127.0.0.1:%d/; echo
curl -sS --noproxy '' -o /dev/null -w 'proxied-other:%%{http_code}\n' http://127.0.0.1:%d/
curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:%d/ && echo LEAK-direct
true`, ap, op, op)
		flags := []string{"--sandbox-backend", "landlock", "--allow-host", fmt.Sprintf("127.0.0.1:%d", ap), "shell", "-c", script}
		out, code := run(false, flags...)
		if code != 125 || !strings.Contains(out, "AGENT_SANDBOX_WEAKER_SANDBOX=1") {
			t.Errorf("without the opt-in: exit %d, want 125 naming it: %s", code, out)
		}
		// Control: unsandboxed, the other server answers directly.
		if out, _ := run(true, "--no-sandbox", "shell", "-c", script); !strings.Contains(out, "LEAK-direct") {
			t.Fatalf("control: unsandboxed the direct connection failed: %s", out)
		}
		out, code = run(true, flags...)
		if code != 0 || !strings.Contains(out, "allowed-ok") || !strings.Contains(out, "proxied-other:403") {
			t.Errorf("exit %d, want the allowed host through the broker and a 403 for the other: %s", code, out)
		}
		if strings.Contains(out, "LEAK") || strings.Contains(out, "CANARY") {
			t.Errorf("a direct connection to a port that is not the broker's got out: %s", out)
		}
		if !strings.Contains(out, "allow-list network in the WEAKER sandbox") {
			t.Errorf("no warning that the broker's port is open on every address: %s", out)
		}
	})
}
