package e2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestNonoUnixSocketDirBind runs the real nono with a folder that names a
// unix_socket_dir_bind directory. agent-sandbox's seccomp layer under nono
// refuses socket(AF_UNIX) everywhere else (the escape rows of
// TestEscapeView); here it keeps socket(AF_UNIX) and asks nono for its
// pathname mediation instead, so that: the agent's own socket in that
// directory works (bind, connect); one in the workdir does not; a host
// socket outside the grants (as the Docker daemon's) is not reached by a
// plain connect; the rest of the layer holds (keyrings, nested user
// namespaces); and every run warns that nono's mediation can be raced (a
// symlink swapped between its check and the kernel's lookup: measured by a
// review, not repeated here).
func TestNonoUnixSocketDirBind(t *testing.T) {
	skipWithoutNono(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3 for the socket probes")
	}
	r := newNonoAloneRun(t) // the layer under nono alone; inside the view host sockets are not there
	root := filepath.Dir(r.home)
	sockDir := filepath.Join(r.home, ".agent-browser")
	folder := filepath.Join(root, "agents", "sock")
	if err := os.MkdirAll(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(folder, "agent.toml"), "command = \"/bin/sh\"\n")
	write(t, filepath.Join(folder, "sandbox", "nono.json"), `{"filesystem": {"unix_socket_dir_bind": ["~/.agent-browser"]}}`+"\n")
	// The host's socket, outside every grant.
	hostSock := filepath.Join(root, "docker.sock")
	l, err := net.Listen("unix", hostSock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var reached atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			reached.Add(1)
			c.Close()
		}
	}()

	probe := `python3 - <<'EOF'
import socket, os, ctypes
def own(d):
    p = os.path.join(d, "own.sock")
    if os.path.exists(p): os.unlink(p)
    s = socket.socket(socket.AF_UNIX); s.bind(p); s.listen(1)
    c = socket.socket(socket.AF_UNIX); c.settimeout(3); c.connect(p)
    a, _ = s.accept(); c.send(b"ping"); assert a.recv(4) == b"ping"
    os.unlink(p)
def host():
    c = socket.socket(socket.AF_UNIX); c.settimeout(3); c.connect("` + hostSock + `")
def keyring():
    libc = ctypes.CDLL(None, use_errno=True)
    nr = 250 if os.uname().machine == "x86_64" else 219
    if libc.syscall(nr, ctypes.c_long(0), ctypes.c_long(-3), ctypes.c_long(0)) < 0:
        raise OSError(ctypes.get_errno(), "keyctl")
def userns():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x10000000) < 0:
        raise OSError(ctypes.get_errno(), "unshare")
for name, f in (("sockdir", lambda: own("` + sockDir + `")), ("workdir", lambda: own(".")), ("host", host), ("keyring", keyring), ("userns", userns)):
    try:
        f(); print(name, "ok")
    except Exception as e:
        print(name, "refused", e)
EOF`
	code, out := r.cli(2*time.Minute, nil, append(append([]string{"-q"}, nonoFlags...), folder, "-c", probe)...)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	want := map[string]string{"sockdir": "ok", "workdir": "refused", "host": "refused", "keyring": "refused", "userns": "refused"}
	got := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 2 {
			got[f[0]] = f[1]
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q:\n%s", k, got[k], v, out)
		}
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the host socket was reached %d times", n)
	}
	if !strings.Contains(out, "filesystem.unix_socket_dir_bind: the agent may create Unix sockets") {
		t.Errorf("no warning that nono's pathname mediation can be raced:\n%s", out)
	}
	prof, err := os.ReadFile(filepath.Join(r.home, ".local", "state", "agent-sandbox", "agents", "sock", "nono-profile.json"))
	if err != nil || !strings.Contains(string(prof), `"af_unix_mediation": "pathname"`) {
		t.Errorf("the profile does not ask for nono's pathname mediation (%v):\n%s", err, prof)
	}
}

// TestNonoNestedUsernsOptIn: under nono, agent-sandbox's seccomp layer
// refuses a nested user namespace unless --allow-userns (or agent.toml
// nested_userns) gives it back, with the same warning as the built-in
// engine's.
func TestNonoNestedUsernsOptIn(t *testing.T) {
	skipWithoutNono(t)
	needs(t, "unshare")
	if out, err := exec.Command("unshare", "-U", "true").CombinedOutput(); err != nil {
		t.Skipf("control: unshare -U fails even unsandboxed here (%v: %s), so the opt-in proves nothing", err, out)
	}
	r := newBrokerRun(t)
	run := func(flags ...string) (string, int) {
		args := append(append(append([]string{"-q"}, nonoFlags...), flags...), "run", "--", "sh", "-c", "unshare -U true && echo USERNS-CREATED")
		code, out := r.cli(2*time.Minute, nil, args...)
		return out, code
	}
	if out, code := run(); code == 0 || strings.Contains(out, "USERNS-CREATED") {
		t.Errorf("by default a nested user namespace was created under nono (exit %d): %s", code, out)
	}
	if out, code := run("--allow-userns"); code != 0 || !strings.Contains(out, "USERNS-CREATED") || !strings.Contains(out, "nested user namespaces are allowed (--allow-userns)") {
		t.Errorf("--allow-userns under nono: want the namespace and a warning (exit %d): %s", code, out)
	}
}
