package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Metadata in the weaker sandbox. Landlock governs opening, creating,
// renaming and removing files, not chmod, chown, utimes or extended
// attributes, which need only the file's owner: before, an agent in the
// weaker sandbox could `chmod 644 ~/.ssh/id_ed25519` (any local user
// could then read the key), chmod 000 the user's ~/.bashrc or touch any
// of the user's files. Now agent-sandbox performs those calls for the
// agent, inside its writable grants only.

// metaProbe is the agent's side: what must work in the workdir, what must
// fail outside it (SECRET, and RO, a file granted read-only), by path,
// through a symlink in the workdir (whose own times and owner may change:
// touch -h, chown -h) and by descriptor, and two races that
// flip what the path names while chmod runs in a loop.
const metaProbe = `
cd "$WORK"
printf '#!/bin/sh\necho RAN\n' > s.sh
chmod +x s.sh && ./s.sh && echo IN-CHMOD
touch -c -d 2001-01-01 s.sh && echo IN-TOUCH
chown "$(id -u):$(id -g)" s.sh && echo IN-CHOWN
chown 12345 s.sh 2>/dev/null && echo IN-CHOWN-OTHER
python3 -c 'import os; os.setxattr("s.sh", "user.t", b"1"); assert os.getxattr("s.sh", "user.t") == b"1"; os.removexattr("s.sh", "user.t")' && echo IN-XATTR
python3 -c 'import os; fd = os.open("s.sh", os.O_RDONLY); os.fchmod(fd, 0o700); os.utime(fd, (1, 1)); print("IN-FD")'
chmod 644 "$SECRET" 2>/dev/null && echo OUT-CHMOD
touch -c -d 2000-01-01 "$SECRET" 2>/dev/null && echo OUT-TOUCH
touch -c "$SECRET" 2>/dev/null && echo OUT-TOUCH-NOW
chown "$(id -u):$(id -g)" "$SECRET" 2>/dev/null && echo OUT-CHOWN
python3 -c 'import os; os.setxattr(os.environ["SECRET"], "user.x", b"1")' 2>/dev/null && echo OUT-SETXATTR
python3 -c 'import os; os.removexattr(os.environ["SECRET"], "user.keep")' 2>/dev/null && echo OUT-RMXATTR
ln -s "$SECRET" link && echo IN-LINK
chmod 644 link 2>/dev/null && echo LINK-CHMOD
touch -c -d 2000-01-01 link 2>/dev/null && echo LINK-TOUCH
touch -h -d 2000-01-01 link && echo IN-LINK-TOUCH-H
chown -h "$(id -u):$(id -g)" link && echo IN-LINK-CHOWN-H
python3 -c 'import os; os.chmod("link", 0o644, follow_symlinks=False)' 2>/dev/null && echo LINK-LCHMOD
chmod 777 .vscode/tasks.json 2>/dev/null && echo PROTECTED-CHMOD
python3 -c 'import os; fd = os.open(os.environ["RO"], os.O_RDONLY); os.fchmod(fd, 0o666)' 2>/dev/null && echo RO-FCHMOD
python3 -c 'import os; fd = os.open(os.environ["RO"], os.O_RDONLY); os.utime(fd, (1, 1))' 2>/dev/null && echo RO-FUTIMENS
python3 -c 'import os; fd = os.open(os.environ["SECRET"], os.O_PATH); os.chown(fd, os.getuid(), os.getgid())' 2>/dev/null && echo OPATH-CHOWN
python3 -c 'import os; fd = os.open(os.environ["SECRET"], os.O_PATH); os.chmod("/proc/self/fd/%d" % fd, 0o644)' 2>/dev/null && echo OPATH-CHMOD
if [ -d .git ]; then
  git config user.name a && git config user.email a@b.invalid &&
  printf 'echo one\n' > run.sh && chmod +x run.sh && git add run.sh && git commit -qm one &&
  printf 'echo two\n' > run.sh && chmod -x run.sh && git commit -qam two &&
  git checkout -q HEAD~1 && [ -x run.sh ] && git checkout -q - && [ ! -x run.sh ] && echo IN-GIT
fi
echo x > x
python3 - <<'EOF'
import ctypes, os, threading, time
libc = ctypes.CDLL(None, use_errno=True)
rel = os.path.relpath(os.environ["SECRET"]).encode()
buf = ctypes.create_string_buffer(4096)
inside, outside = b"x\0", rel + b"\0"
stop = False
def flip_memory():
    while not stop:
        ctypes.memmove(buf, outside, len(outside))
        ctypes.memmove(buf, inside, len(inside))
def flip_link():
    while not stop:
        for target in ("x", os.environ["SECRET"]):
            os.symlink(target, "l.tmp")
            os.replace("l.tmp", "l")
counts = {}
for name, flip, path in (("memory", flip_memory, buf), ("link", flip_link, b"l")):
    stop = False
    t = threading.Thread(target=flip)
    t.start()
    ok = fail = 0
    end = time.time() + 2
    mode = 0o640
    while time.time() < end:
        mode ^= 0o004
        if libc.chmod(path, mode) == 0:
            ok += 1
        else:
            fail += 1
    stop = True
    t.join()
    counts[name] = (ok, fail)
print("RACE", counts)
EOF
echo PROBE-DONE
`

// TestWeakerMetadata: in the weaker sandbox chmod, chown, touch and
// extended attributes work in the workdir, and fail on a file outside the
// grants (by path, through a symlink, by an O_PATH descriptor, by a
// descriptor of a file granted read-only, and while another thread flips
// what the path names), whose mode, times and attributes stay what they
// were.
func TestWeakerMetadata(t *testing.T) {
	skipWithoutLandlock(t)
	needs(t, "python3")
	r := newBrokerRun(t)
	r.prefix = noUserns(t)
	secret := filepath.Join(r.home, "secretdir", "key")
	write(t, secret, "key\n")
	if err := os.Chmod(secret, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(secret, "user.keep", []byte("1"), 0); err != nil {
		t.Skipf("needs user extended attributes on %s: %v", secret, err)
	}
	ro := filepath.Join(r.home, "ro.txt")
	write(t, ro, "read only\n")
	if err := os.Chmod(ro, 0o644); err != nil {
		t.Fatal(err)
	}
	type state struct {
		mode         uint32
		mtime, ctime syscall.Timespec
		xattrs       string
	}
	stat := func(p string) state {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4096)
		n, _ := unix.Listxattr(p, buf)
		return state{uint32(st.Mode), st.Mtim, st.Ctim, string(buf[:max(n, 0)])}
	}
	if git, err := exec.LookPath("git"); err == nil {
		// A repository in the workdir: git writes its config through
		// a lock file it fchmods, and checkout changes modes.
		if out, err := exec.Command(git, "init", "-q", r.work).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v: %s", err, out)
		}
	}
	// A protected entry of the workdir (the ledger's): the weaker
	// sandbox cannot keep its contents read-only, but its mode stays.
	tasks := filepath.Join(r.work, ".vscode", "tasks.json")
	write(t, tasks, "{}\n")
	beforeSecret, beforeRO, beforeTasks := stat(secret), stat(ro), stat(tasks)
	time.Sleep(20 * time.Millisecond) // a change would show in ctime

	// The sandbox passes the agent only the environment it names: the
	// paths go in the script.
	script := "export WORK='" + r.work + "' SECRET='" + secret + "' RO='" + ro + "'\n" + metaProbe
	code, out := r.cli(120*time.Second, []string{"AGENT_SANDBOX_WEAKER_SANDBOX=1"}, "--sandbox-backend", "landlock", "--read", ro, r.folder(), "-c", script)
	if !strings.Contains(out, "WEAKER sandbox") {
		t.Fatalf("not the weaker sandbox (exit %d): %s", code, out)
	}
	if code != 0 || !strings.Contains(out, "PROBE-DONE") {
		t.Fatalf("the probe failed (exit %d): %s", code, out)
	}
	wants := []string{"RAN", "IN-CHMOD", "IN-TOUCH", "IN-CHOWN", "IN-XATTR", "IN-FD", "IN-LINK", "IN-LINK-TOUCH-H", "IN-LINK-CHOWN-H"}
	if _, err := os.Stat(filepath.Join(r.work, ".git")); err == nil {
		wants = append(wants, "IN-GIT")
	}
	for _, want := range wants {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("neighbour: %s missing, the same call in the workdir failed: %s", want, out)
		}
	}
	for _, bad := range []string{"IN-CHOWN-OTHER", "OUT-CHMOD", "OUT-TOUCH", "OUT-TOUCH-NOW", "OUT-CHOWN", "OUT-SETXATTR", "OUT-RMXATTR",
		"LINK-CHMOD", "LINK-TOUCH", "LINK-LCHMOD", "PROTECTED-CHMOD", "RO-FCHMOD", "RO-FUTIMENS", "OPATH-CHOWN", "OPATH-CHMOD"} {
		if strings.Contains(out, bad+"\n") {
			t.Errorf("%s: the agent changed metadata outside its writable grants: %s", bad, out)
		}
	}
	if after := stat(secret); after != beforeSecret {
		t.Errorf("the file outside the grants changed: %+v, was %+v\n%s", after, beforeSecret, out)
	}
	if after := stat(tasks); after != beforeTasks {
		t.Errorf("the protected .vscode/tasks.json changed: %+v, was %+v\n%s", after, beforeTasks, out)
	}
	if after := stat(ro); after != beforeRO {
		t.Errorf("the file granted read-only changed: %+v, was %+v\n%s", after, beforeRO, out)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(r.work, "s.sh"), &st); err != nil || st.Mode&0o777 != 0o700 || st.Mtim.Sec != 1 {
		t.Errorf("the workdir's s.sh: mode %o mtime %d (%v), want 700 and 1: %s", st.Mode&0o777, st.Mtim.Sec, err, out)
	}
	t.Logf("races (chmod succeeded, failed): %s", lineWith(out, "RACE"))
}

// lineWith is the first line of out containing s.
func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
