//go:build linux

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// noLandlockExecVar, in the e2e test binary's environment, makes it a
// wrapper (TestMain): it installs a seccomp filter under which every
// Landlock system call fails with ENOSYS, as on a kernel without Landlock
// (Debian 11's 5.10), and executes the program its arguments name. The
// kernel matrix (e2e/kernels) boots a real 5.10; this runs the same
// code path here, as root and as an ordinary user.
const noLandlockExecVar = "AGENT_SANDBOX_E2E_NOLANDLOCK_EXEC"

// noLandlockExec is the wrapper (see noLandlockExecVar).
func noLandlockExec() {
	runtime.LockOSThread()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "e2e no-Landlock wrapper:", err)
		os.Exit(126)
	}
	arch := map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}[runtime.GOARCH]
	if arch == 0 || len(os.Args) < 2 {
		fail(fmt.Errorf("usage: %s=1 TESTBINARY PROGRAM ARGS (amd64 or arm64)", noLandlockExecVar))
	}
	// landlock_create_ruleset, landlock_add_rule, landlock_restrict_self:
	// 444-446 on every architecture.
	filter := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 4},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: arch, Jt: 0, Jf: 4},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0},
		{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, K: 444, Jt: 0, Jf: 2},
		{Code: unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K, K: 446, Jt: 1, Jf: 0},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fail(err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog))); errno != 0 {
		fail(fmt.Errorf("seccomp: %w", errno))
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, noLandlockExecVar+"=") {
			env = append(env, kv)
		}
	}
	fail(unix.Exec(os.Args[1], os.Args[1:], env))
}

// TestViewWithoutLandlock: on a kernel without Landlock (simulated: the
// Landlock system calls fail with ENOSYS) where user namespaces exist,
// the namespace view runs, with one warning naming what Landlock would
// add, and doctor says the same; the view keeps what it keeps with
// Landlock: a credential unreadable, a write outside the workdir
// refused, the protected files read-only against umount, remount,
// mount_setattr, rename and unlink (the view-ro-bypass family), the
// workdir writable. A write-only grant, which only Landlock keeps
// unreadable, is refused; without user namespaces too, every run is.
func TestViewWithoutLandlock(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	home := homeTempDir(t, "nolandlock-home-")
	f := &noLL{bin: buildAgentSandbox(t), home: home, work: filepath.Join(home, "project"),
		secret: filepath.Join(home, ".ssh", "id_ed25519"), wrap: []string{self}, env: []string{noLandlockExecVar + "=1"}}
	// The wrapper works: Landlock's system calls fail under it.
	f.reset(t)
	if out, _ := f.run(t, f.wrap, f.env, "doctor"); !strings.Contains(out, "Landlock is not available") {
		t.Fatalf("control: under the wrapper doctor still finds Landlock: %s", out)
	}
	if out, code := f.run(t, nil, nil, "--sandbox-backend", "landlock", "shell", "-c", "true"); code != 0 || strings.Contains(out, "runs without Landlock") {
		t.Fatalf("control: without the wrapper the view runs with Landlock and says nothing of it (exit %d): %s", code, out)
	}
	t.Run("control-unsandboxed", func(t *testing.T) {
		f.reset(t)
		out, _ := f.run(t, nil, nil, "--no-sandbox", "shell", "-c", f.attack())
		f.check(t, out, false)
		os.Remove(filepath.Join(home, "escaped"))
	})
	t.Run("view", f.view)
	t.Run("doctor", f.doctor)
	t.Run("write-only-refused", f.writeOnlyRefused)
	t.Run("open-network-one-warning", f.openNetwork)
	t.Run("joined-siblings", f.joinedSiblings)
	t.Run("no-userns-refused", func(t *testing.T) {
		prefix := append(noUserns(t), self)
		for _, weaker := range []bool{false, true} {
			env := f.env
			if weaker {
				env = append(env, "AGENT_SANDBOX_WEAKER_SANDBOX=1")
			}
			out, code := f.run(t, prefix, env, "--sandbox-backend", "landlock", "shell", "-c", "echo STARTED")
			if code != 125 || strings.Contains(out, "STARTED") || !strings.Contains(out, "Landlock is not available") {
				t.Errorf("neither a view nor Landlock (weaker opt-in %v): exit %d, want 125 naming Landlock:\n%s", weaker, code, out)
			}
		}
	})
}

// noLL is TestViewWithoutLandlock's fixture: a home with a credential
// and a project whose .git holds the protected files, and the wrapper
// (wrap, env) that takes Landlock away.
type noLL struct {
	bin, home, work, secret string
	wrap, env               []string
}

const noLLGitConfig = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"

// reset makes the project and the credential anew.
func (f *noLL) reset(t *testing.T) {
	t.Helper()
	os.RemoveAll(f.work)
	for _, d := range []string{".git/hooks", ".git/objects", ".git/refs/heads"} {
		if err := os.MkdirAll(filepath.Join(f.work, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Dir(f.secret), 0o700)
	for p, c := range map[string]string{f.secret: "CANARY-nolandlock\n", filepath.Join(f.work, ".git/HEAD"): "ref: refs/heads/main\n",
		filepath.Join(f.work, ".git/config"): noLLGitConfig} {
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// run runs agent-sandbox ARGS in the project, behind prefix, with env
// added to a clean environment.
func (f *noLL) run(t *testing.T, prefix []string, env []string, args ...string) (string, int) {
	t.Helper()
	argv := append(append(append([]string{}, prefix...), f.bin), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = f.work
	cmd.Env = withCover(append([]string{"HOME=" + f.home, "PATH=" + agentPath(), "XDG_CONFIG_HOME=" + filepath.Join(f.home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(f.home, ".local", "state")}, env...))
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// folder makes an agent folder running /bin/sh with nonoJSON.
func (f *noLL) folder(t *testing.T, name, nonoJSON string) string {
	t.Helper()
	dir := filepath.Join(f.home, name)
	if err := os.MkdirAll(filepath.Join(dir, "sandbox"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "agent.toml"), []byte("command = \"/bin/sh\"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "sandbox", "nono.json"), []byte(nonoJSON), 0o644)
	return dir
}

// attack is the view-ro-bypass family on the protected files, then the
// writes they would allow, a credential read, a write outside the
// workdir and one inside it.
func (f *noLL) attack() string {
	return `umount .git/hooks; umount .git/config; umount -l .git/config
mount -o remount,bind,rw .git/config; mount -o remount,bind,rw .git/hooks
python3 -c 'import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
class A(ctypes.Structure): _fields_ = [("set", ctypes.c_uint64), ("clr", ctypes.c_uint64), ("prop", ctypes.c_uint64), ("fd", ctypes.c_uint64)]
for p in (b".git/config", b".git/hooks"):
    a = A(0, 1, 0, 0)
    print("mount_setattr", p, libc.syscall(442, -100, p, 0x8000, ctypes.byref(a), ctypes.sizeof(a)), ctypes.get_errno())'
mv .git/config .git/config.old; rm -f .git/config; rm -rf .git/hooks; mkdir -p .git/hooks
printf '#!/bin/sh\ntouch hooked\n' > .git/hooks/pre-commit
echo '[alias] x = !touch hooked' >> .git/config
cat ` + f.secret + `; echo x > ` + filepath.Join(f.home, "escaped") + `; echo kept > kept.txt; echo DONE`
}

// check says whether the host shows the attack held (sandboxed) or got
// through (the control); the write in the workdir is kept either way.
func (f *noLL) check(t *testing.T, out string, sandboxed bool) {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(f.work, ".git/config"))
	_, hookErr := os.Stat(filepath.Join(f.work, ".git/hooks/pre-commit"))
	_, escErr := os.Stat(filepath.Join(f.home, "escaped"))
	kept, _ := os.ReadFile(filepath.Join(f.work, "kept.txt"))
	held := map[string]bool{
		"git config unchanged": string(b) == noLLGitConfig,
		"no hook planted":      os.IsNotExist(hookErr),
		"credential unread":    !strings.Contains(out, "CANARY-nolandlock"),
		"no write outside":     os.IsNotExist(escErr),
	}
	for what, ok := range held {
		if ok != sandboxed {
			t.Errorf("%s: %v, want %v (sandboxed %v):\n%s", what, ok, sandboxed, sandboxed, out)
		}
	}
	if string(kept) != "kept\n" || !strings.Contains(out, "DONE") {
		t.Errorf("the agent's write in its workdir was not kept, or it did not run to the end:\n%s", out)
	}
}

func (f *noLL) view(t *testing.T) {
	f.reset(t)
	out, code := f.run(t, f.wrap, f.env, "--sandbox-backend", "landlock", "shell", "-c", f.attack())
	if n := strings.Count(out, "the namespace view runs without Landlock"); n != 1 || code != 0 {
		t.Errorf("exit %d, %d warnings naming what Landlock would add, want 0 and 1:\n%s", code, n, out)
	}
	if strings.Contains(out, "WEAKER sandbox") {
		t.Errorf("the weaker sandbox ran, not the view:\n%s", out)
	}
	f.check(t, out, true)
	if testing.Verbose() {
		t.Logf("%s", out)
	}
}

func (f *noLL) doctor(t *testing.T) {
	out, _ := f.run(t, f.wrap, f.env, "doctor")
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "landlock: ") && (strings.HasPrefix(l, "warn") || strings.HasPrefix(l, "fail") || strings.HasPrefix(l, "ok")) {
			line = l
			break
		}
	}
	if !strings.HasPrefix(line, "warn") || !strings.Contains(line, "the namespace view runs without Landlock") ||
		!strings.Contains(line, "files outside the grants unreadable and unwritable") {
		t.Errorf("doctor's landlock line does not say the view runs without Landlock and what changes: %q", line)
	}
	if !strings.Contains(out, "ok    shell posture:") {
		t.Errorf("doctor does not say the shell agent runs (the view without Landlock):\n%s", out)
	}
}

// writeOnlyRefused: a folder whose nono.json grants a file write-only.
func (f *noLL) writeOnlyRefused(t *testing.T) {
	f.reset(t)
	log := filepath.Join(f.home, "log")
	if err := os.WriteFile(log, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	folder := f.folder(t, "wofolder", `{"filesystem": {"write": ["`+log+`"]}}`)
	if out, code := f.run(t, nil, nil, "--sandbox-backend", "landlock", folder, "-c", "echo STARTED"); code != 0 || !strings.Contains(out, "STARTED") {
		t.Fatalf("control: with Landlock the folder runs (exit %d): %s", code, out)
	}
	out, code := f.run(t, f.wrap, f.env, "--sandbox-backend", "landlock", folder, "-c", "echo STARTED")
	if code != 125 || strings.Contains(out, "STARTED") || !strings.Contains(out, "cannot be enforced without Landlock") || !strings.Contains(out, log) {
		t.Errorf("a write-only grant without Landlock: exit %d, want 125 naming it:\n%s", code, out)
	} else if testing.Verbose() {
		t.Logf("%s", out)
	}
}

// openNetwork: a folder without network rules shares the host's
// network, whose abstract sockets Landlock ABI 6 would scope; still one
// warning.
func (f *noLL) openNetwork(t *testing.T) {
	folder := f.folder(t, "openfolder", `{}`)
	out, code := f.run(t, f.wrap, f.env, "--sandbox-backend", "landlock", folder, "-c", "echo STARTED")
	if code != 0 || !strings.Contains(out, "STARTED") || strings.Count(out, "warning:") != 1 ||
		!strings.Contains(out, "the namespace view runs without Landlock") || !strings.Contains(out, "abstract Unix sockets") {
		t.Errorf("exit %d; want the agent started with one warning, naming the abstract sockets too:\n%s", code, out)
	}
}

// joinedSiblings: eight read-only grants that are all the entries of
// one directory. With Landlock the view may bind the directory once, its
// rules keeping anything else in it unreadable; without Landlock nothing
// would: a file the host adds there during the run must not be readable
// in the view.
func (f *noLL) joinedSiblings(t *testing.T) {
	f.reset(t)
	dir := filepath.Join(f.home, "siblings")
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"--sandbox-backend", "landlock"}
	for i := 1; i <= 8; i++ {
		p := filepath.Join(dir, fmt.Sprintf("f%d", i))
		os.WriteFile(p, []byte("granted\n"), 0o644)
		args = append(args, "--read", p)
	}
	ready, goOn := filepath.Join(f.work, "ready"), filepath.Join(f.work, "go")
	script := "cat " + filepath.Join(dir, "f1") + "; : > " + ready + "; while [ ! -e " + goOn + " ]; do sleep 0.01; done; cat " + filepath.Join(dir, "added") + "; echo DONE"
	type res struct {
		out  string
		code int
	}
	done := make(chan res, 1)
	go func() {
		out, code := f.run(t, f.wrap, f.env, append(args, "shell", "-c", script)...)
		done <- res{out, code}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("the agent ended before it was ready (exit %d):\n%s", r.code, r.out)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent never got ready")
		}
	}
	os.WriteFile(filepath.Join(dir, "added"), []byte("ADDED-DURING-RUN\n"), 0o644)
	os.WriteFile(goOn, nil, 0o644)
	r := <-done
	if !strings.Contains(r.out, "granted") || !strings.Contains(r.out, "DONE") {
		t.Errorf("control: the granted file was not readable, or the agent did not finish (exit %d):\n%s", r.code, r.out)
	}
	if strings.Contains(r.out, "ADDED-DURING-RUN") {
		t.Errorf("a file the host added during the run beside the granted ones was readable without Landlock:\n%s", r.out)
	}
}
