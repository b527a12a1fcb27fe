// Command probe holds what the kernel matrix (e2e/kernels/rows.sh) needs
// and busybox has no applet for:
//
//	probe truncate PATH      truncate(2) on a path, which Landlock mediates
//	                         only from ABI 3 (busybox's truncate opens the
//	                         file for writing first, which every ABI
//	                         mediates); exits 1 on an error
//	probe nocaps CMD ARGS    runs CMD where a new user namespace can be
//	                         created but gives no capability inside: every
//	                         other namespace and every mount is refused
//	                         (EPERM), as on Ubuntu 24.04 whose AppArmor
//	                         restricts unprivileged user namespaces
//	                         (kernel.apparmor_restrict_unprivileged_userns,
//	                         which Debian's kernels lack)
//
// It is a test tool: the matrix's initramfs is its only user.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	switch {
	case len(os.Args) == 3 && os.Args[1] == "truncate":
		if err := syscall.Truncate(os.Args[2], 0); err != nil {
			fmt.Println("truncate:", err)
			os.Exit(1)
		}
		fmt.Println("truncated", os.Args[2])
	case len(os.Args) >= 3 && os.Args[1] == "nocaps":
		if err := nocaps(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "probe nocaps:", err)
			os.Exit(125)
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: probe truncate PATH | probe nocaps CMD [ARGS...]")
		os.Exit(2)
	}
}

// The x86-64 system calls the nocaps filter looks at.
const (
	auditArchX8664 = 0xc000003e
	nrClone        = 56
	nrUnshare      = 272
	nrClone3       = 435
	nrSetns        = 308
	// Namespaces other than the user namespace (CLONE_NEWNS, NEWCGROUP,
	// NEWUTS, NEWIPC, NEWPID, NEWNET): creating one needs CAP_SYS_ADMIN
	// in the new user namespace, which the restriction withholds.
	otherNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWPID | unix.CLONE_NEWNET
)

// mountCalls need CAP_SYS_ADMIN in the mount namespace's owner.
var mountCalls = []uint32{165, 166, 155, 428, 429, 430, 431, 432, 433, 442} // mount umount2 pivot_root open_tree move_mount fsopen fsconfig fsmount fspick mount_setattr

// nocaps installs the filter on every thread (no_new_privs first, as an
// unprivileged filter needs) and execs argv.
func nocaps(argv []string) error {
	// no_new_privs is per thread: the filter must be installed from the
	// thread that set it (TSYNC then gives both to every thread).
	runtime.LockOSThread()
	const (
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
	)
	allow := unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ALLOW}
	eperm := unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)}
	enosys := unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)}
	// Layout: arch check; clone/unshare flags; clone3 (ENOSYS: its flags
	// lie in memory, and callers fall back to clone); setns and mounts.
	f := []unix.SockFilter{
		{Code: ld, K: 4},
		{Code: jeq, K: auditArchX8664, Jt: 1},
		eperm,
		{Code: ld, K: 0},
		{Code: jeq, K: nrClone, Jt: 1},
		{Code: jeq, K: nrUnshare, Jf: 3},
		{Code: ld, K: 16},
		{Code: jset, K: otherNamespaces, Jt: 0, Jf: 1},
		eperm,
		// not clone/unshare, or allowed flags: reload the number.
		{Code: ld, K: 0},
		{Code: jeq, K: nrClone3, Jf: 1},
		enosys,
		{Code: jeq, K: nrSetns, Jf: 1},
		eperm,
	}
	for _, nr := range mountCalls {
		f = append(f, unix.SockFilter{Code: jeq, K: nr, Jf: 1}, eperm)
	}
	f = append(f, allow)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	prog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog))); errno != 0 {
		return fmt.Errorf("seccomp: %w", errno)
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	return syscall.Exec(path, argv, os.Environ())
}
