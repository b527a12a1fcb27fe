package e2e

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// inotifyHog takes every inotify instance it can get (the kernel's count
// is the host user's), tries to raise its own namespace's limit, says how
// many it got and holds them until its stdin ends.
const inotifyHog = `python3 -c '
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
fds, err = [], 0
while len(fds) < 100000:
    fd = libc.inotify_init1(0)
    if fd < 0:
        err = ctypes.get_errno(); break
    fds.append(fd)
try:
    open("/proc/sys/user/max_inotify_instances", "w").write("100000\n"); raised = "RAISED"
except OSError as e:
    raised = "NOT-RAISED"
print("COUNT=%d ERRNO=%d %s" % (len(fds), err, raised), flush=True)
import sys; sys.stdin.read()
print("HOG-DONE")'`

// TestInotifyBounded (issue 38, item 6): inotify instances are counted
// per user on the host (fs.inotify.max_user_instances, 128 by default),
// so an agent that takes them all stops the user's editors from watching
// and every other sandboxed run of the user from starting. In the view the
// agent's own user namespace bounds it to a quarter: while it holds all
// it could get, this test (the same user, outside) still gets one, and
// the agent cannot raise its namespace's limit.
func TestInotifyBounded(t *testing.T) {
	skipWithoutLandlock(t)
	needs(t, "python3")
	limit := readInt(t, "/proc/sys/fs/inotify/max_user_instances")
	r := newBrokerRun(t)
	// The agent says how many it got on its stdout and holds them until
	// its stdin ends.
	args := []string{"--sandbox-backend", "landlock", "run", "--", "sh", "-c", inotifyHog}
	cmd := exec.Command(r.bin, args...)
	cmd.Dir = r.work
	cmd.Env = withCover([]string{"HOME=" + r.home, "PATH=" + agentBinDir() + string(os.PathListSeparator) + pathFor(args), "LANG=C.UTF-8", "TERM=dumb"})
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut strings.Builder
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(120*time.Second, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	br := bufio.NewReader(stdout)
	line, _ := br.ReadString('\n')
	fd, herr := syscall.InotifyInit1(syscall.IN_CLOEXEC)
	if herr == nil {
		syscall.Close(fd)
	}
	stdin.Close()
	rest, _ := io.ReadAll(br)
	werr := cmd.Wait()
	out := line + string(rest) + errOut.String()
	if werr != nil {
		t.Errorf("the run failed: %v\n%s", werr, out)
	}
	m := regexp.MustCompile(`COUNT=(\d+) ERRNO=(\d+) (\S+)`).FindStringSubmatch(line)
	if m == nil || !strings.Contains(out, "HOG-DONE") {
		t.Fatalf("the probe did not run: %q\n%s", line, out)
	}
	got, _ := strconv.Atoi(m[1])
	t.Logf("the agent got %d inotify instances (the user's limit %d), then errno %s", got, limit, m[2])
	if herr != nil {
		t.Errorf("while the agent held its inotify instances the user outside could not make one: %v (the agent got %d of %d)", herr, got, limit)
	}
	if got > limit/4 {
		t.Errorf("the agent got %d inotify instances, more than a quarter of the user's %d", got, limit)
	}
	if m[3] != "NOT-RAISED" {
		t.Errorf("the agent raised its namespace's inotify limit: %s", line)
	}
}

// readInt reads a number from a file (a sysctl), or fails the test.
func readInt(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(fmt.Errorf("%s: %w", path, err))
	}
	return n
}
