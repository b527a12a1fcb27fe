//go:build linux

package landlock

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSeccompMetadataEmulated: with emulateMetadata every metadata call of
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
		on := seccompFilter(a, Seccomp{emulateMetadata: true, DenyUserns: true, DenyHostIPC: true})
		off := seccompFilter(a, Seccomp{})
		for nr := range a.meta {
			if got := runBPF(t, on, a.audit, nr, 0, 0, 0, 0); got != notify {
				t.Errorf("%s: call %d: %#x, want the listener", name, nr, got)
			}
			if got := runBPF(t, off, a.audit, nr, 0, 0, 0, 0); got != allow {
				t.Errorf("%s: call %d without emulateMetadata: %#x, want allow", name, nr, got)
			}
		}
		for _, nr := range []uint32{nrSetxattrat, nrRemovexattrat, nrFileSetattr} {
			if got := runBPF(t, on, a.audit, nr); got != nosys {
				t.Errorf("%s: call %d: %#x, want ENOSYS", name, nr, got)
			}
		}
		// getxattrat (464), listxattrat (465), file_getattr (468),
		// openat2 (437): they only read.
		for _, nr := range []uint32{464, 465, 468, 437} {
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

// metaPolicy is systemPolicy with work writable, for python3.
func metaPolicy(t testing.TB, work string) Policy {
	p := systemPolicy(t)
	p.ReadWrite = append(p.ReadWrite, work)
	return p
}

// TestMetadataEmulation runs python3 under StartProtected on this kernel:
// chmod, chown, utime and setxattr work in the writable directory, fail
// with EPERM on a file outside it and on a protected one, which keep
// their mode, and fchmod of an O_PATH descriptor of a file outside fails; a memfd's
// mode can change.
func TestMetadataEmulation(t *testing.T) {
	testKernel(t, "host")
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("needs /usr/bin/python3")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	work, secret := filepath.Join(dir, "work"), filepath.Join(dir, "secret")
	if err := os.MkdirAll(filepath.Join(work, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(work, "l")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(work, "f"), filepath.Join(work, "g"), filepath.Join(work, "u"), filepath.Join(work, "hooks", "h"), secret} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	probe := `
import os, sys
def try_(name, f):
    try:
        f(); print(name, "ok")
    except OSError as e:
        print(name, e.errno)
w, s, h = sys.argv[1:4]
try_("chmod-in", lambda: os.chmod(w + "/f", 0o755))
try_("utime-in", lambda: os.utime(w + "/f", (7, 7)))
try_("chown-in", lambda: os.chown(w + "/f", os.getuid(), os.getgid()))
try_("xattr-in", lambda: os.setxattr(w + "/f", "user.t", b"1"))
try_("chmod-out", lambda: os.chmod(s, 0o644))
try_("chmod-protected", lambda: os.chmod(h, 0o755))
try_("utime-out", lambda: os.utime(s, (7, 7)))
try_("fchmod-out", lambda: os.fchmod(os.open(s, os.O_PATH), 0o644))
try_("memfd", lambda: os.fchmod(os.memfd_create("m"), 0o600))
if os.uname().machine == "x86_64":
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    def raw(nr, path, times):
        if libc.syscall(nr, path.encode(), times) != 0:
            raise OSError(ctypes.get_errno(), "raw")
    tv = (ctypes.c_long * 4)(5, 0, 6, 500000)
    try_("utimes-in", lambda: raw(235, w + "/g", tv))
    try_("utimes-out", lambda: raw(235, s, tv))
    try_("utimes-einval", lambda: raw(235, w + "/g", (ctypes.c_long * 4)(5, 0, 6, 1000000)))
    try_("utime-old", lambda: raw(132, w + "/u", (ctypes.c_long * 2)(8, 9)))
    try_("lchown-link-out", lambda: os.lchown(w + "/l", os.getuid(), os.getgid()))
    try_("chown-link-out", lambda: os.chown(w + "/l", os.getuid(), os.getgid()))
import ctypes
if ctypes.CDLL(None, use_errno=True).unshare(0x10000000) == 0:
    # A user namespace of its own, which it cannot map (Landlock keeps
    # /proc/self/uid_map unwritable): its ids are unmapped.
    try_("ns-chown-unmapped", lambda: os.chown(w + "/f", 0, 0))
    try_("ns-chown-keep", lambda: os.chown(w + "/f", -1, -1))
`
	cmd := exec.Command(py, "-c", probe, work, secret, filepath.Join(work, "hooks", "h"))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	proc, err := StartProtected(cmd, metaPolicy(t, work), Seccomp{}, []string{filepath.Join(work, "hooks")})
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Wait(); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	t.Logf("probe:\n%s", out.String())
	eperm := strconv.Itoa(int(unix.EPERM))
	for name, want := range map[string]string{"chmod-in": "ok", "utime-in": "ok", "chown-in": "ok", "chmod-out": eperm,
		"chmod-protected": eperm, "utime-out": eperm, "fchmod-out": eperm, "memfd": "ok"} {
		if !strings.Contains(out.String(), name+" "+want+"\n") {
			t.Errorf("%s: want %s: %s", name, want, out.String())
		}
	}
	if runtime.GOARCH == "amd64" {
		for name, want := range map[string]string{"utimes-in": "ok", "utimes-out": eperm, "utimes-einval": strconv.Itoa(int(unix.EINVAL)),
			"utime-old": "ok", "lchown-link-out": "ok", "chown-link-out": eperm} {
			if !strings.Contains(out.String(), name+" "+want+"\n") {
				t.Errorf("%s: want %s: %s", name, want, out.String())
			}
		}
		for path, sec := range map[string]int64{"g": 6, "u": 9} {
			var st unix.Stat_t
			if err := unix.Stat(filepath.Join(work, path), &st); err != nil || st.Mtim.Sec != sec {
				t.Errorf("%s: mtime %d (%v), want %d", path, st.Mtim.Sec, err, sec)
			}
		}
	}
	if strings.Contains(out.String(), "ns-chown") {
		for name, want := range map[string]string{"ns-chown-unmapped": strconv.Itoa(int(unix.EINVAL)), "ns-chown-keep": "ok"} {
			if !strings.Contains(out.String(), name+" "+want+"\n") {
				t.Errorf("%s: want %s: %s", name, want, out.String())
			}
		}
	}
	// xattr-in depends on the filesystem of the temporary directory.
	for path, mode := range map[string]os.FileMode{filepath.Join(work, "f"): 0o755, secret: 0o600, filepath.Join(work, "hooks", "h"): 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v (%v), want %v", path, fi.Mode().Perm(), err, mode)
		}
	}
}

// BenchmarkMetadataChmod is the cost of one chmod in the confined child
// with and without the emulation (python3 calls os.chmod b.N times; its
// start is amortised).
func BenchmarkMetadataChmod(b *testing.B) {
	testKernel(b, "host")
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		b.Skip("needs /usr/bin/python3")
	}
	for _, emulate := range []bool{false, true} {
		b.Run(map[bool]string{false: "landlock-only", true: "emulated"}[emulate], func(b *testing.B) {
			work := b.TempDir()
			if err := os.WriteFile(filepath.Join(work, "f"), nil, 0o600); err != nil {
				b.Fatal(err)
			}
			cmd := exec.Command(py, "-c", "import os, sys\nfor i in range(int(sys.argv[2])): os.chmod(sys.argv[1], 0o600 | (i & 1) << 8)", filepath.Join(work, "f"), strconv.Itoa(b.N))
			b.ResetTimer()
			start := StartWith
			if emulate {
				start = func(cmd *exec.Cmd, p Policy, sc Seccomp) (*Process, error) { return StartProtected(cmd, p, sc, nil) }
			}
			proc, err := start(cmd, metaPolicy(b, work), Seccomp{})
			if err != nil {
				b.Fatal(err)
			}
			if err := proc.Wait(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// TestMetaMapID: an id of a target in this process's user namespace is
// itself; -1 stays.
func TestMetaMapID(t *testing.T) {
	r := &metaRequest{req: &seccompNotif{pid: uint32(os.Getpid())}, mem: -1}
	for _, id := range []int32{0, 1000, -1, 65534} {
		if got, errno := r.mapID("uid_map", id); errno != 0 || got != int(id) {
			t.Errorf("mapID(%d) = %d, %v", id, got, errno)
		}
	}
}
