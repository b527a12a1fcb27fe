//go:build linux

// Command probe holds what the kernel matrix (e2e/kernels/rows.sh) needs
// and busybox has no applet for:
//
//	probe truncate PATH      truncate(2) on a path, which Landlock mediates
//	                         only from ABI 3 (busybox's truncate opens the
//	                         file for writing first, which every ABI
//	                         mediates); exits 1 on an error
//	probe udp-send ADDR MSG  sends MSG to ADDR (UDP) three times; exits 1
//	                         when sending fails
//	probe udp-listen ADDR FILE
//	                         listens on ADDR (UDP) and returns, leaving a
//	                         child that appends each datagram to FILE
//	probe setattr PATH       clears the read-only flag of the mount at PATH
//	                         and below it with mount_setattr (Linux
//	                         5.12); exits 1 on an error
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
	"net"
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
	case len(os.Args) == 3 && os.Args[1] == "setattr":
		attr := unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
		if err := unix.MountSetattr(unix.AT_FDCWD, os.Args[2], unix.AT_RECURSIVE, &attr); err != nil {
			fmt.Println("mount_setattr:", err)
			os.Exit(1)
		}
		fmt.Println("mount_setattr cleared MOUNT_ATTR_RDONLY on", os.Args[2])
	case len(os.Args) == 4 && os.Args[1] == "udp-send":
		if err := udpSend(os.Args[2], os.Args[3]); err != nil {
			fmt.Println("udp-send:", err)
			os.Exit(1)
		}
	case len(os.Args) == 4 && os.Args[1] == "udp-listen":
		if err := udpListen(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "udp-listen:", err)
			os.Exit(1)
		}
	case len(os.Args) >= 3 && os.Args[1] == "nocaps":
		if err := nocaps(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "probe nocaps:", err)
			os.Exit(125)
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: probe truncate PATH | probe setattr PATH | probe udp-send ADDR MSG | probe udp-listen ADDR FILE | probe nocaps CMD [ARGS...]")
		os.Exit(2)
	}
}

func udpSend(addr, msg string) error {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	for range 3 {
		if _, err := c.Write([]byte(msg + "\n")); err != nil {
			return err
		}
	}
	return nil
}

// udpListen binds addr, then leaves a child serving the socket and
// returns: once it has, datagrams to addr are received (no wait needed).
func udpListen(addr, file string) error {
	if os.Getenv("PROBE_UDP_SERVE") == "1" {
		return udpServe(file)
	}
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return err
	}
	f, err := pc.(*net.UDPConn).File()
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, "udp-listen", addr, file)
	cmd.Env = append(os.Environ(), "PROBE_UDP_SERVE=1")
	cmd.ExtraFiles = []*os.File{f}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd.Start()
}

// udpServe appends every datagram on fd 3 to file.
func udpServe(file string) error {
	pc, err := net.FilePacketConn(os.NewFile(3, "udp"))
	if err != nil {
		return err
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	buf := make([]byte, 2048)
	for {
		n, _, err := pc.ReadFrom(buf)
		if err != nil {
			return err
		}
		if _, err := f.Write(buf[:n]); err != nil {
			return err
		}
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
