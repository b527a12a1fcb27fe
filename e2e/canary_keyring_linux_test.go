package e2e

import (
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

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
//
// The test's goroutine is locked to its thread for the rest of the test:
// a process without a session keyring gets one from add_key for the
// calling thread only, so agent-sandbox must be forked from that thread
// to inherit it (else the unsandboxed control cannot find the key, and the
// row proves nothing).
func keyringCanary(t *testing.T, payload string) string {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
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
