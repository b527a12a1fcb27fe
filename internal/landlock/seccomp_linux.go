//go:build linux

package landlock

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp filter the confined thread installs, inherited by the child.
//
// Terminal injection (threat class 17): the TIOCSTI ioctl pushes bytes into
// a terminal's input queue, so a confined agent sharing the user's terminal
// could type a command that the user's shell runs after the agent exits
// (TIOCLINUX can do the same on a Linux console). Landlock does not mediate
// these ioctls, and the kernel's dev.tty.legacy_tiocsti switch is often on,
// so the filter makes both fail with EPERM. It always refuses system calls of
// a foreign ABI (32-bit compat, x32), whose numbers it would not match.
//
// It refuses fscrypt's ioctls that make a directory encrypted and that add
// a key: with a key added, an encrypted directory shows other names, with
// no inotify event and no change of ctime, so the end-of-run scan's record
// of the workdir would no longer be what is there (a .envrc that appears
// once the key is in).
//
// It always refuses kernel surface no agent needs. Sockets are an allow
// list: socket(2) admits AF_INET, AF_INET6, AF_UNIX (unless refused, see
// below) and AF_NETLINK with NETLINK_ROUTE only (which glibc's getifaddrs
// and `ip` use; the other netlink protocols are kernel interfaces: audit,
// uevents, socket diagnostics, generic netlink, netfilter; EPERM), and
// socketpair(2) AF_UNIX only; every other family fails with EAFNOSUPPORT,
// as on a kernel built without it: AF_VSOCK (which ignores the network
// namespace: on a VM it reaches the hypervisor's services past every
// network rule), AF_PACKET, AF_ALG, AF_BLUETOOTH, AF_CAN, AF_TIPC,
// AF_RDS and whatever family a later kernel adds. io_uring is refused
// (ENOSYS, as on a kernel without it: programs fall back to ordinary
// system calls; its operations create sockets and open files without the
// system calls this filter and Landlock's socket scoping see).
//
// Optionally (see [Seccomp]) it also refuses the kernel keyring calls
// (add_key, request_key, keyctl: the user's session, user and persistent
// keyrings hold Kerberos tickets and other secrets), socket(AF_UNIX, ...)
// for hosts without a mount namespace, where Landlock below ABI 9 cannot
// stop a connect() to a host socket by path (socketpair stays allowed),
// and new user namespaces.

// seccompArch describes the native system call ABI of one architecture.
type seccompArch struct {
	audit    uint32 // AUDIT_ARCH_* value in seccomp_data.arch
	ioctl    uint32 // __NR_ioctl
	socket   uint32 // __NR_socket
	keyring  [3]uint32
	connect  uint32 // __NR_connect
	truncate uint32 // __NR_truncate
	clone    uint32 // __NR_clone (flags in the first argument on each arch below)
	unshare  uint32 // __NR_unshare
	// socketpair and the System V IPC calls (shmget, shmat, shmctl,
	// shmdt, semget, semop, semctl, semtimedop, msgget, msgsnd, msgrcv,
	// msgctl).
	socketpair uint32
	sysvIPC    [12]uint32
	x32        bool // refuse numbers with the x32 bit set
	// meta are the calls that change a file's metadata, which
	// StartProtected sends to the listener (Seccomp.emulateMetadata).
	meta map[uint32]metaCall
}

// The numbers every architecture below shares (the unified table of the
// newer system calls).
const (
	nrIOUringSetup    = 425
	nrIOUringEnter    = 426
	nrIOUringRegister = 427
	nrClone3          = 435
)

var seccompArches = map[string]seccompArch{
	"amd64": {audit: 0xc000003e, ioctl: 16, socket: 41, truncate: 76, keyring: [3]uint32{248, 249, 250}, connect: 42, clone: 56, unshare: 272, x32: true,
		socketpair: 53, sysvIPC: [12]uint32{29, 30, 31, 67, 64, 65, 66, 220, 68, 69, 70, 71}, meta: metaAMD64},
	"arm64": {audit: 0xc00000b7, ioctl: 29, socket: 198, truncate: 45, keyring: [3]uint32{217, 218, 219}, connect: 203, clone: 220, unshare: 97,
		socketpair: 199, sysvIPC: [12]uint32{194, 196, 195, 197, 190, 193, 191, 192, 186, 189, 188, 187}, meta: metaGeneric},
	"riscv64": {audit: 0xc00000f3, ioctl: 29, socket: 198, truncate: 45, keyring: [3]uint32{217, 218, 219}, connect: 203, clone: 220, unshare: 97,
		socketpair: 199, sysvIPC: [12]uint32{194, 196, 195, 197, 190, 193, 191, 192, 186, 189, 188, 187}, meta: metaGeneric},
}

const (
	ioctlTIOCSTI   = 0x5412
	ioctlTIOCLINUX = 0x541C
	// fscrypt's FS_IOC_SET_ENCRYPTION_POLICY and FS_IOC_ADD_ENCRYPTION_KEY
	// (the same numbers on the architectures above).
	ioctlFSSetEncryptionPolicy = 0x800c6613
	ioctlFSAddEncryptionKey    = 0xc0506617
)

// bpf assembles a filter whose conditional jumps name their targets:
// "deny", "nosys", "nofamily", "notify", "allow", a label set with [bpf.label], or "" (the next
// instruction). Targets lie ahead, as classic BPF requires.
type bpf struct {
	ins     []unix.SockFilter
	targets [][2]string
	labels  map[string]int
}

// label names the next instruction.
func (b *bpf) label(name string) {
	if b.labels == nil {
		b.labels = map[string]int{}
	}
	b.labels[name] = len(b.ins)
}

func (b *bpf) op(code uint16, k uint32) { b.jmp(code, k, "", "") }

func (b *bpf) jmp(code uint16, k uint32, jt, jf string) {
	b.ins = append(b.ins, unix.SockFilter{Code: code, K: k})
	b.targets = append(b.targets, [2]string{jt, jf})
}

// program appends "ret deny" (EPERM), "ret nosys" (ENOSYS), "ret
// nofamily" (EAFNOSUPPORT), "ret notify" (user notification) and "ret
// allow", and resolves the jumps.
func (b *bpf) program() []unix.SockFilter {
	ret := uint16(unix.BPF_RET | unix.BPF_K)
	end := len(b.ins)
	b.op(ret, unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM))
	b.op(ret, unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS))
	b.op(ret, unix.SECCOMP_RET_ERRNO|uint32(unix.EAFNOSUPPORT))
	b.op(ret, unix.SECCOMP_RET_USER_NOTIF)
	b.op(ret, unix.SECCOMP_RET_ALLOW)
	at := map[string]int{"deny": end, "nosys": end + 1, "nofamily": end + 2, "notify": end + 3, "allow": end + 4}
	for name, i := range b.labels {
		at[name] = i
	}
	for i, t := range b.targets {
		for j, name := range t {
			if name == "" {
				continue
			}
			d := at[name] - i - 1
			if d < 0 || d > 255 {
				panic(fmt.Sprintf("seccomp filter: jump %d to %q out of range", i, name))
			}
			off := uint8(d)
			if j == 0 {
				b.ins[i].Jt = off
			} else {
				b.ins[i].Jf = off
			}
		}
	}
	return b.ins
}

// seccompFilter returns the BPF program for arch with the options in o.
func seccompFilter(a seccompArch, o Seccomp) []unix.SockFilter {
	const (
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	)
	// seccomp_data: nr at 0, arch at 4, args[i] at 16+8*i; the low 32
	// bits of an argument are at 16+8*i on the little-endian
	// architectures listed above (the kernel reads the int arguments
	// checked here from those bits; CLONE_NEWUSER lies in them).
	var b bpf
	b.op(ld, 4)
	b.jmp(jeq, a.audit, "", "deny") // foreign ABI
	b.op(ld, 0)
	if a.x32 {
		b.jmp(jge, 0x40000000, "deny", "") // x32 system call
	}
	if o.DenyKeyrings {
		for _, nr := range a.keyring {
			b.jmp(jeq, nr, "deny", "")
		}
	}
	for _, nr := range []uint32{nrIOUringSetup, nrIOUringEnter, nrIOUringRegister} {
		b.jmp(jeq, nr, "nosys", "")
	}
	if o.denyPathTruncate {
		b.jmp(jeq, a.truncate, "deny", "")
	}
	if o.DenyHostIPC {
		for _, nr := range a.sysvIPC {
			b.jmp(jeq, nr, "deny", "")
		}
	}
	// socketpair(domain, type | flags, ...): AF_UNIX only (AF_TIPC has
	// pairs too). Under DenyHostIPC only SOCK_STREAM and SOCK_SEQPACKET,
	// whose sendto ignores an address. Every other type is refused then:
	// the kernel makes a SOCK_RAW Unix socket a datagram one
	// (unix_create), and an unknown type is an error anyway.
	b.jmp(jeq, a.socketpair, "", "not-socketpair")
	b.op(ld, 16)
	if o.DenyHostIPC {
		b.jmp(jeq, unix.AF_UNIX, "", "nofamily")
		b.op(ld, 24)
		b.op(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, 0xf)
		b.jmp(jeq, unix.SOCK_STREAM, "allow", "")
		b.jmp(jeq, unix.SOCK_SEQPACKET, "allow", "deny")
	} else {
		b.jmp(jeq, unix.AF_UNIX, "allow", "nofamily")
	}
	b.label("not-socketpair")
	if o.DenyUserns {
		b.jmp(jeq, nrClone3, "nosys", "")
		b.jmp(jeq, a.clone, "clone-flags", "")
		b.jmp(jeq, a.unshare, "", "not-clone")
		b.label("clone-flags")
		b.op(ld, 16)
		b.jmp(jset, unix.CLONE_NEWUSER, "deny", "allow")
		b.label("not-clone")
	}
	if o.NotifyConnect {
		b.jmp(jeq, a.connect, "notify", "")
	}
	if o.emulateMetadata {
		metaFilter(&b, a)
	}
	// socket(domain, type, protocol): an allow list of families.
	b.jmp(jeq, a.socket, "", "not-socket")
	b.op(ld, 16)
	b.jmp(jeq, unix.AF_INET, "allow", "")
	b.jmp(jeq, unix.AF_INET6, "allow", "")
	if o.DenyUnixSockets {
		b.jmp(jeq, unix.AF_UNIX, "deny", "")
	} else {
		b.jmp(jeq, unix.AF_UNIX, "allow", "")
	}
	b.jmp(jeq, unix.AF_NETLINK, "", "nofamily")
	b.op(ld, 32)
	b.jmp(jeq, unix.NETLINK_ROUTE, "allow", "deny")
	b.label("not-socket")
	b.jmp(jeq, a.ioctl, "", "allow")
	b.op(ld, 24)
	b.jmp(jeq, ioctlTIOCSTI, "deny", "")
	b.jmp(jeq, ioctlTIOCLINUX, "deny", "")
	b.jmp(jeq, ioctlFSSetEncryptionPolicy, "deny", "")
	b.jmp(jeq, ioctlFSAddEncryptionKey, "deny", "allow")
	return b.program()
}

// terminalFilter is the filter with no optional part.
func terminalFilter(a seccompArch) []unix.SockFilter { return seccompFilter(a, Seccomp{}) }

// installSeccomp installs the filter on the calling thread. It needs
// no_new_privs, which restrictSelf has set. With o.NotifyConnect it
// returns the user-notification listener (close-on-exec), else -1.
func installSeccomp(o Seccomp) (int, error) {
	a, ok := seccompArches[runtime.GOARCH]
	if !ok {
		return -1, fmt.Errorf("no seccomp filter for %s; the landlock backend supports amd64, arm64 and riscv64", runtime.GOARCH)
	}
	filter := seccompFilter(a, o)
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if o.NotifyConnect || o.emulateMetadata {
		flags := uintptr(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER)
		if o.emulateMetadata {
			// Once the listener has received a call, the caller waits
			// for the reply through signals other than SIGKILL (Linux
			// 5.19 and later): an emulated call is done, and must not
			// be restarted by a signal that came meanwhile (Go's
			// SIGURG, a SIGCHLD), which would run it twice (a second
			// XATTR_CREATE fails, a second removexattr too).
			fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags|unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, uintptr(unsafe.Pointer(&prog)))
			if errno == 0 {
				unix.CloseOnExec(int(fd))
				return int(fd), nil
			}
			if errno != unix.EINVAL {
				return -1, fmt.Errorf("installing the seccomp filter with a listener: %w", errno)
			}
		}
		fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&prog)))
		if errno != 0 {
			return -1, fmt.Errorf("installing the seccomp filter with a listener: %w", errno)
		}
		unix.CloseOnExec(int(fd))
		return int(fd), nil
	}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
		return -1, fmt.Errorf("installing the seccomp filter: %w", err)
	}
	return -1, nil
}
