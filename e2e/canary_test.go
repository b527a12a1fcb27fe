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
	"unsafe"
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

// Keyring constants (linux/keyctl.h).
const (
	keySpecSessionKeyring = -3
	keyctlSetTimeout      = 15
	keyctlInvalidate      = 21
)

// keyringCanary adds a "user" key holding payload to the harness's session
// keyring (which agent-sandbox and its children inherit) and returns the
// key's description. It is invalidated when the test ends, and expires on
// its own after ten minutes in any case. Skips, saying why, when this host
// (a container's seccomp profile, typically) refuses add_key.
func keyringCanary(t *testing.T, payload string) string {
	t.Helper()
	desc := "agent-sandbox-escape-canary-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	typ, _ := syscall.BytePtrFromString("user")
	d, _ := syscall.BytePtrFromString(desc)
	p := []byte(payload)
	ring := int64(keySpecSessionKeyring)
	id, _, errno := syscall.Syscall6(syscall.SYS_ADD_KEY, uintptr(unsafe.Pointer(typ)), uintptr(unsafe.Pointer(d)),
		uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), uintptr(ring), 0)
	if errno != 0 {
		t.Skipf("add_key to the session keyring fails on this host (%v): the keyring case needs a kernel and seccomp profile that allow it", errno)
	}
	syscall.Syscall(syscall.SYS_KEYCTL, keyctlSetTimeout, id, 600)
	t.Cleanup(func() { syscall.Syscall(syscall.SYS_KEYCTL, keyctlInvalidate, id, 0) })
	return desc
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

// killMarked SIGKILLs the processes carrying marker: only processes a test
// started itself carry one.
func killMarked(marker string) {
	for _, pid := range markerProcesses(marker) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// newMarker is a unique string for a test's processes.
func newMarker() string {
	return "ESCMARK" + strconv.FormatInt(time.Now().UnixNano(), 36)
}
