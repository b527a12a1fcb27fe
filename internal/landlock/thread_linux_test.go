//go:build linux

package landlock

import (
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// confinedOutput runs argv from a thread confined by ConfineThread.
func confinedOutput(t *testing.T, sc Seccomp, argv ...string) (string, error) {
	t.Helper()
	p := systemPolicy(t)
	type res struct {
		out string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if _, err := ConfineThread(p, sc); err != nil {
			ch <- res{err: err}
			return
		}
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		ch <- res{string(out), err}
	}()
	r := <-ch
	return r.out, r.err
}

// TestConfineThreadSeccompOptions: the keyring calls and socket(AF_UNIX)
// fail only when asked for; socketpair(AF_UNIX) keeps working.
func TestConfineThreadSeccompOptions(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the probe uses amd64 system call numbers")
	}
	py := "/usr/bin/python3" // inside the system paths the policy grants
	if _, err := exec.LookPath(py); err != nil {
		t.Skipf("%s is missing: needed to make the system calls", py)
	}
	const probe = `
import ctypes, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
key = libc.syscall(250, 0, -3, 0)  # keyctl(KEYCTL_GET_KEYRING_ID, session)
print("keyctl", "denied" if key < 0 and ctypes.get_errno() == 1 else "ok")
try:
    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); print("unix ok")
except PermissionError:
    print("unix denied")
a, b = socket.socketpair(); print("socketpair ok")
`
	for _, tc := range []struct {
		sc   Seccomp
		want []string
	}{
		{Seccomp{}, []string{"keyctl ok", "unix ok", "socketpair ok"}},
		{Seccomp{DenyKeyrings: true, DenyUnixSockets: true}, []string{"keyctl denied", "unix denied", "socketpair ok"}},
	} {
		out, err := confinedOutput(t, tc.sc, py, "-c", probe)
		if err != nil {
			t.Fatalf("%+v: %v\n%s", tc.sc, err, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%+v: output lacks %q:\n%s", tc.sc, w, out)
			}
		}
	}
}
