package e2e

// Host-side canaries for the view cases (escape_view_test.go): Unix socket
// listeners that record any contact, a key in the harness's own session
// keyring, and a search of /proc for processes that carry a marker.

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// unixListener listens on a pathname Unix socket at path (creating its
// directory) and returns a check that reports any connection it accepted.
func unixListener(t *testing.T, path string) func() string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatalf("listening on %s: %v", path, err)
	}
	t.Cleanup(func() { l.Close() })
	return recorder(t, func() ([]byte, error) {
		c, err := l.Accept()
		if err != nil {
			return nil, err
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		b := make([]byte, 64)
		n, _ := c.Read(b)
		return append([]byte("unix connection to "+path+": "), b[:n]...), nil
	})
}

// markerProcesses lists the processes (other than this one) whose command
// line or environment contains marker.
func markerProcesses(marker string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		for _, f := range []string{"cmdline", "environ"} {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, f))
			if bytes.Contains(b, []byte(marker)) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// survivors polls /proc for up to d and returns the processes carrying
// marker that are still there at the end (nil as soon as none is left).
func survivors(marker string, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		pids := markerProcesses(marker)
		if len(pids) == 0 || time.Now().After(deadline) {
			return pids
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// appears polls for up to d for a process carrying marker (the control
// of a survivor case: a background process that its shell has not exec'd
// yet carries no marker for a moment, on a loaded machine).
func appears(marker string, d time.Duration) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		if len(markerProcesses(marker)) > 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// killMarked SIGKILLs the processes carrying marker: only processes a test
// started itself carry one. It scans again until none has been seen for
// half a second (at most 5 s): a shell killed in one scan may have forked
// a marked child after that scan listed /proc, which then outlived the
// test.
func killMarked(marker string) {
	// Done once no marked process has been seen for half a second: a
	// process being exec'd, or forked by a shell killed in the same scan,
	// may carry its marker only a moment later.
	var quiet time.Time
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		pids := markerProcesses(marker)
		if len(pids) == 0 {
			if quiet.IsZero() {
				quiet = time.Now()
			}
			if time.Since(quiet) > 500*time.Millisecond {
				return
			}
			continue
		}
		quiet = time.Time{}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// newMarker is a unique string for a test's processes.
func newMarker() string {
	return "ESCMARK" + strconv.FormatInt(time.Now().UnixNano(), 36)
}
