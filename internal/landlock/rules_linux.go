//go:build linux

package landlock

import (
	"fmt"
	"path/filepath"
	"strings"
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
	r, err := createRuleset(p, e)
	if err != nil {
		return -1, nil, err
	}
	if err := r.AddRest(); err != nil {
		r.Close()
		return -1, nil, err
	}
	return r.fd, r.e.Skipped, nil
}

// createRuleset creates the ruleset of p as enforced by e, with its
// network rules and none of its paths' (see [Ruleset.AddOpened] and
// [Ruleset.AddRest]).
func createRuleset(p Policy, e Enforcement) (*Ruleset, error) {
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
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET,
		uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return nil, fmt.Errorf("creating the Landlock ruleset (ABI %d): %w", e.ABI, errno)
	}
	r := &Ruleset{fd: int(fd), e: e, p: p, grants: grants(attr.handledAccessFS), done: map[string]bool{}}
	if e.TCPRules {
		for _, port := range p.AllowTCPConnect {
			rule := netPortAttr{allowedAccess: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: uint64(port)}
			if err := addRule(r.fd, ruleTypeNetPort, unsafe.Pointer(&rule)); err != nil {
				r.Close()
				return nil, fmt.Errorf("landlock policy: allowing TCP connections to port %d: %w", port, err)
			}
		}
	}
	return r, nil
}

// AddOpened adds the rules of path (one for each of the policy's lists
// that names it) on fd, a descriptor of the inode path shows, instead of
// looking path up: Landlock rules hold inodes, not names. The view's init
// adds the rule of each bind on the descriptor it opened the bind's
// source by, which is the inode the bind shows at its path. A path the
// policy does not name adds nothing; a descriptor of a symlink (an
// O_PATH|O_NOFOLLOW open) grants nothing, and the path is not looked up
// later either. [Ruleset.AddRest] skips the paths added here.
func (r *Ruleset) AddOpened(path string, fd int) error {
	return r.addOpened(path, fd, false, false)
}

// AddOpenedKnown is AddOpened for a descriptor the caller knows to be of
// a directory (dir) or of a file, never of a symlink, which it does not
// look at again.
func (r *Ruleset) AddOpenedKnown(path string, fd int, dir bool) error {
	return r.addOpened(path, fd, true, dir)
}

func (r *Ruleset) addOpened(path string, fd int, known, dir bool) error {
	if r.none {
		return nil
	}
	if r.at == nil {
		n := 0
		for _, l := range r.p.lists() {
			n += len(l.paths)
		}
		// Sized once: a thousand grants would grow it ten times.
		r.at = make(map[string][]int, n)
		if len(r.done) == 0 {
			r.done = make(map[string]bool, n)
		}
		for i, l := range r.p.lists() {
			for _, p := range l.paths {
				r.at[p] = append(r.at[p], i)
			}
		}
	}
	lists, ok := r.at[path]
	if !ok || r.done[path] {
		return nil
	}
	r.done[path] = true
	var st unix.Stat_t
	switch {
	case known && dir:
		st.Mode = unix.S_IFDIR
	case known:
		st.Mode = unix.S_IFREG
	default:
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("landlock policy: path %s: stat: %w", path, err)
		}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return nil
	}
	for _, i := range lists {
		if err := addFdRule(r.fd, fd, st, r.grants[i]); err != nil {
			return fmt.Errorf("landlock policy: %s path %s: %w", r.p.lists()[i].name, path, err)
		}
	}
	return nil
}

// AddReadWriteFd grants beneath fd (a directory) what the policy's
// ReadWrite list grants, to the threads the ruleset confines from now on:
// a domain already made from it (a thread confined before) does not
// change. The view's init adds so, once the agent has started, the pty
// instance of the commands agent-sandbox exec starts, which the agent's
// domain then does not reach.
func (r *Ruleset) AddReadWriteFd(fd int) error {
	if r.none {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("landlock policy: stat: %w", err)
	}
	return addFdRule(r.fd, fd, st, r.grants[2]) // [Policy.lists]: ReadWrite
}

// Reaches is [Policy.Reaches] of the ruleset's policy.
func (r *Ruleset) Reaches(dir string) bool { return r.p.Reaches(dir) }

// Skip marks path as handled with no rule: AddRest does not look it up.
// The view's init skips a granted entry it found replaced by a symlink
// (a lookup would follow it, and grant the target).
func (r *Ruleset) Skip(path string) { r.done[path] = true }

// AddRest adds the rules of every path of the policy that AddOpened did
// not, looking each up (following symlinks). The paths that do not exist
// are left out, and listed in the Enforcement's Skipped.
func (r *Ruleset) AddRest() error {
	if r.none {
		r.rest = true
		return nil
	}
	paths := pathOpener{}
	defer paths.close()
	for i, l := range r.p.lists() {
		for _, path := range l.paths {
			if r.done[path] {
				continue
			}
			missing, err := addPathRule(r.fd, &paths, path, r.grants[i])
			if err != nil {
				return fmt.Errorf("landlock policy: %s path %s: %w", l.name, path, err)
			}
			if missing {
				r.e.Skipped = append(r.e.Skipped, path)
			}
		}
	}
	r.rest = true
	return nil
}

// pathOpener opens the paths of a ruleset's rules. It holds an O_PATH
// descriptor of the directory of the last path it opened, so that the
// rules of siblings (a thousand grants in one directory) open only their
// last component: openat of a name in the opened parent resolves exactly
// as open of the whole path does, since nothing changes the tree while
// the ruleset is built.
type pathOpener struct {
	path string
	fd   int // 0: none
}

// open returns an O_PATH descriptor of path (following symlinks, as
// open(2) of the whole path does).
func (d *pathOpener) open(path string) (int, error) {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 || i == len(path)-1 || !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	}
	dir, name := path[:i], path[i+1:]
	if dir != d.path {
		d.close()
		dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		}
		d.path, d.fd = dir, dfd
	}
	return unix.Openat(d.fd, name, unix.O_PATH|unix.O_CLOEXEC, 0)
}

// close closes the parent's descriptor.
func (d *pathOpener) close() {
	if d.fd > 0 {
		unix.Close(d.fd)
	}
	d.path, d.fd = "", 0
}

// addPathRule grants g beneath path (following symlinks). It reports
// missing=true, and adds nothing, when path does not exist.
func addPathRule(rulesetFd int, paths *pathOpener, path string, g grant) (missing bool, err error) {
	pfd, err := paths.open(path)
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
	return false, addFdRule(rulesetFd, pfd, st, g)
}

// addFdRule grants g beneath the inode of fd, whose stat is st (a
// directory's rights or a file's).
func addFdRule(rulesetFd, fd int, st unix.Stat_t, g grant) error {
	rights := g.file
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		rights = g.dir
	}
	if rights == 0 {
		return nil
	}
	rule := pathBeneathAttr{allowedAccess: rights, parentFd: int32(fd)}
	if err := addRule(rulesetFd, unix.LANDLOCK_RULE_PATH_BENEATH, unsafe.Pointer(&rule)); err != nil {
		return fmt.Errorf("adding the Landlock rule: %w", err)
	}
	return nil
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
