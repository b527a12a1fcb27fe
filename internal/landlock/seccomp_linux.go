//go:build linux

package landlock

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Terminal injection (threat class 17): the TIOCSTI ioctl pushes bytes into
// a terminal's input queue, so a confined agent sharing the user's terminal
// could type a command that the user's shell runs after the agent exits
// (TIOCLINUX can do the same on a Linux console). Landlock does not mediate
// these ioctls, and the kernel's dev.tty.legacy_tiocsti switch is often on,
// so the confined thread installs a seccomp filter, inherited by the child,
// that makes both fail with EPERM. It also refuses system calls of a foreign
// ABI (32-bit compat, x32), whose ioctl numbers the filter would not match.

// seccompArch describes the native system call ABI of one architecture.
type seccompArch struct {
	audit uint32 // AUDIT_ARCH_* value in seccomp_data.arch
	ioctl uint32 // __NR_ioctl
	x32   bool   // refuse numbers with the x32 bit set
}

var seccompArches = map[string]seccompArch{
	"amd64":   {audit: 0xc000003e, ioctl: 16, x32: true},
	"arm64":   {audit: 0xc00000b7, ioctl: 29},
	"riscv64": {audit: 0xc00000f3, ioctl: 29},
}

const (
	ioctlTIOCSTI   = 0x5412
	ioctlTIOCLINUX = 0x541C
)

// terminalFilter returns the BPF program for arch.
func terminalFilter(a seccompArch) []unix.SockFilter {
	const (
		ld    = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge   = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
		allow = unix.SECCOMP_RET_ALLOW
		deny  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	)
	// seccomp_data: nr at 0, arch at 4, args[i] at 16+8*i; the low 32 bits
	// of args[1] (the ioctl request, an unsigned int) are at 24 on the
	// little-endian architectures listed above.
	x32 := uint32(0xffffffff) // no number reaches it when x32 is off
	if a.x32 {
		x32 = 0x40000000
	}
	return []unix.SockFilter{
		{Code: ld, K: 4},
		{Code: jeq, Jt: 1, Jf: 0, K: a.audit},
		{Code: ret, K: deny}, // foreign ABI
		{Code: ld, K: 0},
		{Code: jge, Jt: 0, Jf: 1, K: x32},
		{Code: ret, K: deny}, // x32 system call
		{Code: jeq, Jt: 0, Jf: 4, K: a.ioctl},
		{Code: ld, K: 24},
		{Code: jeq, Jt: 1, Jf: 0, K: ioctlTIOCSTI},
		{Code: jeq, Jt: 0, Jf: 1, K: ioctlTIOCLINUX},
		{Code: ret, K: deny},
		{Code: ret, K: allow},
	}
}

// denyTerminalInjection installs the filter on the calling thread. It needs
// no_new_privs, which restrictSelf has set.
func denyTerminalInjection() error {
	a, ok := seccompArches[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("no seccomp filter against terminal injection for %s; the landlock backend supports amd64, arm64 and riscv64", runtime.GOARCH)
	}
	filter := terminalFilter(a)
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
		return fmt.Errorf("installing the seccomp filter against terminal injection: %w", err)
	}
	return nil
}
