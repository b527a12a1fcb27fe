//go:build linux

package landlock

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// confinedOutput runs argv from a thread confined by ConfineThread.
func confinedOutput(t *testing.T, sc Seccomp, argv ...string) (string, error) {
	t.Helper()
	p := systemPolicy(t)
	return onConfinedThread(func() error {
		_, err := ConfineThread(p, sc)
		return err
	}, func() (string, error) {
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		return string(out), err
	})
}

// onConfinedThread runs f on a thread of its own once confine has
// confined that thread; the thread ends with it.
func onConfinedThread(confine func() error, f func() (string, error)) (string, error) {
	type res struct {
		out string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := confine(); err != nil {
			ch <- res{err: err}
			return
		}
		out, err := f()
		ch <- res{out, err}
	}()
	r := <-ch
	return r.out, r.err
}

// seccompProbe prints what a Python program gets of the optional parts
// of the filter: "keyctl ok|denied", "unix ok|denied", "socketpair ok".
const seccompProbe = `
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
	const probe = seccompProbe
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

// TestRulesetOnDescriptors: a rule added on a descriptor grants what the
// inode holds, whatever path names it; one added on a symlink's own
// descriptor grants nothing, and neither does a skipped path, which
// AddRest does not look up (it would follow the link).
func TestRulesetOnDescriptors(t *testing.T) {
	if _, err := ABI(); err != nil {
		t.Skipf("needs Landlock: %v", err)
	}
	dir := t.TempDir()
	for _, d := range []string{"granted", "target", "skipped-target"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, d, "f"), []byte(d+"-content\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "link")
	skipped := filepath.Join(dir, "skipped")
	for l, target := range map[string]string{link: "target", skipped: "skipped-target"} {
		if err := os.Symlink(target, l); err != nil {
			t.Fatal(err)
		}
	}
	p := systemPolicy(t)
	// The policy names a path that is not the one opened: the rule goes
	// on the descriptor given for it.
	named := filepath.Join(dir, "named")
	p.ReadOnly = []string{named, link, skipped}
	r, err := NewRuleset(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	open := func(path string, flags int) int {
		fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC|flags, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	if err := r.AddOpenedKnown(named, open(filepath.Join(dir, "granted"), 0), true); err != nil {
		t.Fatal(err)
	}
	if err := r.AddOpened(link, open(link, unix.O_NOFOLLOW)); err != nil {
		t.Fatal(err)
	}
	r.Skip(skipped)
	if err := r.AddRest(); err != nil {
		t.Fatal(err)
	}
	out, err := onConfinedThread(func() error {
		_, err := r.ConfineThread(Seccomp{})
		return err
	}, func() (string, error) {
		var b strings.Builder
		for _, f := range []string{"granted/f", "target/f", "skipped-target/f"} {
			out, _ := exec.Command("/bin/cat", filepath.Join(dir, f)).CombinedOutput()
			b.Write(out)
		}
		return b.String(), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "granted-content") {
		t.Errorf("the rule on the descriptor did not grant its inode: %s", out)
	}
	if strings.Contains(out, "target-content") {
		t.Errorf("a symlink's descriptor, or a skipped link, granted its target: %s", out)
	}
}

// A ruleset without Landlock (the view's, on a kernel without it):
// adding rules does nothing, and ConfineThread still sets no_new_privs,
// empties the inherited capabilities and installs the seccomp filter,
// while a file outside the policy stays readable (Landlock is not
// there to refuse it: the view's mounts are the boundary).
func TestNoneRuleset(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("readable\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := systemPolicy(t)
	r, err := newNoneRuleset(p)
	if err != nil {
		t.Fatal(err)
	}
	if !r.None() {
		t.Fatal("newNoneRuleset: None() is false")
	}
	if err := r.AddOpened("/usr", 0); err != nil {
		t.Fatal(err)
	}
	if err := r.AddDescriptors(0, 1, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ConfineThread(Seccomp{}); err == nil || !strings.Contains(err.Error(), "AddRest") {
		t.Errorf("ConfineThread before AddRest: %v", err)
	}
	if err := r.AddRest(); err != nil {
		t.Fatal(err)
	}
	out, err := onConfinedThread(func() error {
		_, err := r.ConfineThread(Seccomp{DenyKeyrings: true})
		return err
	}, func() (string, error) {
		out, err := exec.Command("/bin/sh", "-c", "grep -E '^(NoNewPrivs|Seccomp|CapInh):' /proc/self/status; cat "+outside).CombinedOutput()
		return string(out), err
	})
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, want := range []string{"NoNewPrivs:\t1", "Seccomp:\t2", "CapInh:\t0000000000000000", "readable"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}
	// Where the kernel has Landlock, NewRulesetOrNone is NewRuleset.
	if abi, _ := ABI(); abi >= 1 {
		if real, err := NewRulesetOrNone(p); err != nil || real.None() {
			t.Errorf("NewRulesetOrNone on a kernel with Landlock ABI %d: %v, a ruleset without Landlock", abi, err)
		} else {
			real.Close()
		}
	}
}
