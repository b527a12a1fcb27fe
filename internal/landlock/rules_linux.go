//go:build linux

package landlock

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The Landlock system calls are made directly with golang.org/x/sys/unix.
// We do not use go-landlock's landlock/syscall package because it also
// imports libcap/psx (for its all-threads variants, which this package
// must not use), and that module is not in the project's go.sum.

// Short names for the ABI table (abi.go), the one place its numbers live.
const (
	abiRefer       = ABIRefer
	abiTruncate    = ABITruncate
	abiTCP         = ABITCP
	abiIoctlDev    = ABIIoctlDev
	abiScope       = ABIScope
	abiResolveUnix = ABIResolveUnix
	abiUDP         = ABIUDP
	maxKnownABI    = MaxKnownABI
)

const (
	fsExecute     = unix.LANDLOCK_ACCESS_FS_EXECUTE
	fsWriteFile   = unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	fsReadFile    = unix.LANDLOCK_ACCESS_FS_READ_FILE
	fsReadDir     = unix.LANDLOCK_ACCESS_FS_READ_DIR
	fsMakeChar    = unix.LANDLOCK_ACCESS_FS_MAKE_CHAR
	fsMakeBlock   = unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK
	fsRefer       = unix.LANDLOCK_ACCESS_FS_REFER
	fsTruncate    = unix.LANDLOCK_ACCESS_FS_TRUNCATE
	fsIoctlDev    = unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	fsResolveUnix = unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX

	// fsV1 is every filesystem right of Landlock ABI 1.
	fsV1 = fsExecute | fsWriteFile | fsReadFile | fsReadDir |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		fsMakeChar | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
		fsMakeBlock | unix.LANDLOCK_ACCESS_FS_MAKE_SYM

	// fsFileRights are the rights that apply to a file that is not a
	// directory; adding any other right in a rule for a file is EINVAL.
	fsFileRights = fsExecute | fsWriteFile | fsReadFile | fsTruncate | fsIoctlDev

	netTCP = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	netUDP = unix.LANDLOCK_ACCESS_NET_BIND_UDP | unix.LANDLOCK_ACCESS_NET_CONNECT_SEND_UDP

	ruleTypeNetPort = 2 // LANDLOCK_RULE_NET_PORT
)

// handledFS returns every filesystem right Landlock ABI abi knows.
func handledFS(abi int) uint64 {
	if abi < 1 {
		return 0
	}
	h := uint64(fsV1)
	if abi >= abiRefer {
		h |= fsRefer
	}
	if abi >= abiTruncate {
		h |= fsTruncate
	}
	if abi >= abiIoctlDev {
		h |= fsIoctlDev
	}
	if abi >= abiResolveUnix {
		h |= fsResolveUnix
	}
	return h
}

// grant is the rights one policy list gives, for directories and for
// other files.
type grant struct {
	dir, file uint64
}

// grants returns the rights of ReadExec, ReadOnly, ReadWrite, WriteOnly and
// List (in the order of Policy.lists) for a ruleset that handles the rights
// in fs.
func grants(fs uint64) [5]grant {
	rw := fs &^ (fsMakeChar | fsMakeBlock)
	wo := uint64(fsWriteFile | unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | fsTruncate)
	g := [5]grant{
		{dir: fsExecute | fsReadFile | fsReadDir, file: fsExecute | fsReadFile},
		{dir: fsReadFile | fsReadDir, file: fsReadFile},
		{dir: rw, file: rw & (fsReadFile | fsWriteFile | fsTruncate | fsIoctlDev)},
		{dir: wo, file: fsWriteFile | fsTruncate},
		{dir: fsReadDir},
	}
	for i := range g {
		g[i].dir &= fs
		g[i].file &= fs & fsFileRights
	}
	return g
}

// rulesetAttr is struct landlock_ruleset_attr up to the scoped field,
// the part this package uses. The kernel accepts a larger struct than it
// knows as long as the extra fields are zero.
type rulesetAttr struct {
	handledAccessFS  uint64
	handledAccessNet uint64
	scoped           uint64
}

// pathBeneathAttr is struct landlock_path_beneath_attr, which the kernel
// declares packed (12 bytes); the Go padding after it is not read.
type pathBeneathAttr struct {
	allowedAccess uint64
	parentFd      int32
}

// netPortAttr is struct landlock_net_port_attr.
type netPortAttr struct {
	allowedAccess uint64
	port          uint64
}

// buildRuleset creates a ruleset file descriptor for p as enforced by e.
// It returns the policy paths that do not exist. The caller closes the
// descriptor.
func buildRuleset(p Policy, e Enforcement) (fd int, skipped []string, err error) {
	attr := rulesetAttr{
		handledAccessFS: handledFS(e.ABI),
	}
	if e.TCPRules {
		attr.handledAccessNet |= netTCP
	}
	if e.UDPRules {
		attr.handledAccessNet |= netUDP
	}
	if e.ScopeSignals {
		attr.scoped |= unix.LANDLOCK_SCOPE_SIGNAL
	}
	if e.ScopeAbstractUnix {
		attr.scoped |= unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
	}
	r, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET,
		uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return -1, nil, fmt.Errorf("creating the Landlock ruleset (ABI %d): %w", e.ABI, errno)
	}
	fd = int(r)
	defer func() {
		if err != nil {
			unix.Close(fd)
			fd = -1
		}
	}()

	g := grants(attr.handledAccessFS)
	for i, l := range p.lists() {
		for _, path := range l.paths {
			missing, err := addPathRule(fd, path, g[i])
			if err != nil {
				return fd, nil, fmt.Errorf("landlock policy: %s path %s: %w", l.name, path, err)
			}
			if missing {
				skipped = append(skipped, path)
			}
		}
	}
	if e.TCPRules {
		for _, port := range p.AllowTCPConnect {
			rule := netPortAttr{allowedAccess: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: uint64(port)}
			if err := addRule(fd, ruleTypeNetPort, unsafe.Pointer(&rule)); err != nil {
				return fd, nil, fmt.Errorf("landlock policy: allowing TCP connections to port %d: %w", port, err)
			}
		}
	}
	return fd, skipped, nil
}

// addPathRule grants g beneath path (following symlinks). It reports
// missing=true, and adds nothing, when path does not exist.
func addPathRule(rulesetFd int, path string, g grant) (missing bool, err error) {
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if isMissing(err) {
			return true, nil
		}
		return false, fmt.Errorf("opening it: %w", err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return false, fmt.Errorf("stat: %w", err)
	}
	rights := g.file
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		rights = g.dir
	}
	if rights == 0 {
		return false, nil
	}
	rule := pathBeneathAttr{allowedAccess: rights, parentFd: int32(pfd)}
	if err := addRule(rulesetFd, unix.LANDLOCK_RULE_PATH_BENEATH, unsafe.Pointer(&rule)); err != nil {
		return false, fmt.Errorf("adding the Landlock rule: %w", err)
	}
	return false, nil
}

func addRule(rulesetFd int, ruleType int, attr unsafe.Pointer) error {
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE,
		uintptr(rulesetFd), uintptr(ruleType), uintptr(attr), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// restrictSelf sets no_new_privs on the calling thread and enforces the
// ruleset on it. The caller must have locked the goroutine to its thread
// and must never unlock it.
func restrictSelf(rulesetFd int) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	_, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(rulesetFd), 0, 0)
	if errno != 0 {
		return fmt.Errorf("enforcing the Landlock ruleset: %w", errno)
	}
	return nil
}
