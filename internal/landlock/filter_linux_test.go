//go:build linux

package landlock

import (
	"bytes"
	"net"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestStartFiltered: the child gets no_new_privs and the filter (its
// optional parts only when asked for), while the rest of the process
// keeps neither: it still makes the Unix socket the child may not, and a
// child it starts the ordinary way afterwards has neither. The
// child gets Pdeathsig, and a connect listener is refused.
func TestStartFiltered(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the probe uses amd64 system call numbers")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("needs python3 to make the system calls")
	}
	const probe = seccompProbe + `
for name, ty in (("dgram", socket.SOCK_DGRAM), ("raw", socket.SOCK_RAW), ("seqpacket", socket.SOCK_SEQPACKET)):
    try:
        socket.socketpair(socket.AF_UNIX, ty); print("pair-" + name, "ok")
    except PermissionError:
        print("pair-" + name, "denied")
print("userns", "denied" if libc.unshare(0x10000000) < 0 else "ok")
for line in open("/proc/self/status"):
    if line.startswith(("NoNewPrivs:", "Seccomp:")): print(line.split()[0], line.split()[1])
`
	for _, tc := range []struct {
		sc   Seccomp
		want []string
	}{
		{Seccomp{}, []string{"keyctl ok", "unix ok", "socketpair ok", "pair-dgram ok", "pair-raw ok", "pair-seqpacket ok", "NoNewPrivs: 1", "Seccomp: 2"}},
		{Seccomp{DenyKeyrings: true, DenyUnixSockets: true, DenyUserns: true, DenyHostIPC: true},
			// A SOCK_RAW pair is a datagram pair to the kernel.
			[]string{"keyctl denied", "unix denied", "socketpair ok", "pair-dgram denied", "pair-raw denied", "pair-seqpacket ok", "userns denied", "NoNewPrivs: 1", "Seccomp: 2"}},
	} {
		cmd := exec.Command(py, "-c", probe)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		wait, err := StartFiltered(cmd, tc.sc)
		if err != nil {
			t.Fatal(err)
		}
		if cmd.SysProcAttr == nil || cmd.SysProcAttr.Pdeathsig != syscall.SIGKILL {
			t.Errorf("the child has no Pdeathsig SIGKILL: %+v", cmd.SysProcAttr)
		}
		if err := wait(); err != nil {
			t.Fatalf("%+v: %v\n%s", tc.sc, err, out.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%+v: output lacks %q:\n%s", tc.sc, w, out.String())
			}
		}
		// The caller is untouched.
		l, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
		if err != nil {
			t.Errorf("the caller lost socket(AF_UNIX): %v", err)
		} else {
			l.Close()
		}
		// A child started the ordinary way afterwards has neither (the
		// filtered thread never runs Go code again; /proc/self/status
		// would not tell, as it is the main thread's, which may be the
		// one that was locked).
		plain, err := exec.Command(py, "-c", probe).CombinedOutput()
		if err != nil || !strings.Contains(string(plain), "NoNewPrivs: 0") || !strings.Contains(string(plain), "unix ok") {
			t.Errorf("a child started afterwards from another thread inherited the filter (%v):\n%s", err, plain)
		}
	}
	if _, err := StartFiltered(exec.Command(py), Seccomp{NotifyConnect: true}); err == nil {
		t.Error("a connect listener nobody serves was accepted")
	}
}
