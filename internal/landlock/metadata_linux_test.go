//go:build linux

package landlock

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSeccompMetadataEmulated: with EmulateMetadata every metadata call of
// each architecture's table goes to the listener and setxattrat and
// removexattrat fail with ENOSYS; without it they are allowed, and the
// calls that only read metadata are allowed either way.
func TestSeccompMetadataEmulated(t *testing.T) {
	const (
		allow  = unix.SECCOMP_RET_ALLOW
		notify = unix.SECCOMP_RET_USER_NOTIF
		nosys  = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	)
	for name, a := range seccompArches {
		if len(a.meta) < 10 {
			t.Fatalf("%s: only %d metadata calls in the table", name, len(a.meta))
		}
		on := seccompFilter(a, Seccomp{EmulateMetadata: true, DenyUserns: true, DenyHostIPC: true})
		off := seccompFilter(a, Seccomp{})
		for nr := range a.meta {
			if got := runBPF(t, on, a.audit, nr, 0, 0, 0, 0); got != notify {
				t.Errorf("%s: call %d: %#x, want the listener", name, nr, got)
			}
			if got := runBPF(t, off, a.audit, nr, 0, 0, 0, 0); got != allow {
				t.Errorf("%s: call %d without EmulateMetadata: %#x, want allow", name, nr, got)
			}
		}
		for _, nr := range []uint32{nrSetxattrat, nrRemovexattrat} {
			if got := runBPF(t, on, a.audit, nr); got != nosys {
				t.Errorf("%s: call %d: %#x, want ENOSYS", name, nr, got)
			}
		}
		// getxattrat (464), listxattrat (465), openat2 (437) and the
		// table's neighbours that read.
		for _, nr := range []uint32{464, 465, 437} {
			if got := runBPF(t, on, a.audit, nr); got != allow {
				t.Errorf("%s: call %d: %#x, want allow", name, nr, got)
			}
		}
	}
	if _, ok := metaAMD64[90]; !ok || metaAMD64[94].nofollow != true || metaGeneric[54].flags != 4 {
		t.Errorf("amd64's chmod, lchown or the generic fchownat are described wrongly")
	}
}

// TestMetaGuard: the guard admits files beneath a writable directory and
// a writable file, and refuses the rest, protected paths, device nodes
// and what is not a file.
func TestMetaGuard(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	work, out := filepath.Join(dir, "work"), filepath.Join(dir, "out")
	for _, d := range []string{filepath.Join(work, ".git", "hooks"), out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(work, "a"), filepath.Join(work, ".git", "hooks", "pre-commit"), filepath.Join(out, "b"), filepath.Join(work + "x")} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g := newMetaGuard(Policy{ReadWrite: []string{work, filepath.Join(out, "b"), "/dev/null"}}, []string{filepath.Join(work, ".git", "hooks")})
	for path, want := range map[string]unix.Errno{
		filepath.Join(work, "a"): 0,
		work:                     0,
		filepath.Join(out, "b"):  0,
		out:                      unix.EPERM,
		work + "x":               unix.EPERM,
		filepath.Join(work, ".git", "hooks", "pre-commit"): unix.EPERM,
		filepath.Join(work, ".git", "hooks"):               unix.EPERM,
		"/dev/null":                                        unix.EPERM,
	} {
		fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.allows(fd); got != want {
			t.Errorf("%s: %v, want %v", path, got, want)
		}
		unix.Close(fd)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if got := g.allows(int(r.Fd())); got != unix.EPERM {
		t.Errorf("a pipe: %v, want EPERM", got)
	}
	for path, want := range map[string]int{"/proc/self/fd/3": 3, "/proc/thread-self/fd/12": 12} {
		if n, ok := selfFd(path); !ok || n != want {
			t.Errorf("selfFd(%q) = %d, %v", path, n, ok)
		}
	}
	for _, path := range []string{"/proc/self/fd/3/x", "/proc/self/fd/+3", "/proc/self/fd/03", "/proc/1/fd/3", "/proc/self/cwd"} {
		if _, ok := selfFd(path); ok {
			t.Errorf("selfFd(%q) took it as a descriptor", path)
		}
	}
}
