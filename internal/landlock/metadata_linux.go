//go:build linux

package landlock

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Metadata emulation ([StartProtected]). Landlock governs opening,
// creating, removing and renaming files, but not changing a file's
// metadata: chmod, chown, utimes and extended attributes only need the
// file's owner (or write access, for touching to the current time). Where
// no mount namespace hides what is not granted (the weaker sandbox), an
// agent could therefore chmod 644 the user's private key, chmod 000 the
// user's shell start-up files or change any file's times. The filter
// sends those system calls to a listener, and the process that started
// the agent performs them in its place: it reads the call's arguments
// once from the agent's memory, opens the file they name (O_PATH, no
// magic links), decides on that opened file (its path must lie in a
// writable grant, outside the protected entries; device nodes are
// refused) and performs the call on it, returning its result. It never
// lets the agent's own call proceed (SECCOMP_USER_NOTIF_FLAG_CONTINUE):
// the agent could change the path in its memory between the check and
// the kernel's own read.
//
// The serving thread drops every capability first: the agent runs
// without capabilities even when its user is root, and an emulated call
// must not gain any (a root supervisor could otherwise chown a file to
// another user or set file capabilities for the agent).

// metaOp is what a metadata system call does.
type metaOp uint8

const (
	opChmod       metaOp = iota + 1 // mode
	opChown                         // uid, gid
	opUtime                         // struct utimbuf * (seconds)
	opUtimes                        // struct timeval[2]
	opUtimensat                     // struct timespec[2]
	opSetxattr                      // name, value, size, flags
	opRemovexattr                   // name
)

// metaCall describes one metadata system call's arguments.
type metaCall struct {
	op metaOp
	// how the file is named: by a path (args[0]), by a directory
	// descriptor and a path (args[0], args[1]), or by a descriptor
	// (args[0]).
	dirfd, path bool
	// nofollow: the call never follows a final symlink (lchown,
	// lsetxattr, lremovexattr).
	nofollow bool
	// flags is the index of the AT_* flags argument, or 0 for none.
	flags int
}

// rest is the index of the first argument after the file's name.
func (c metaCall) rest() int {
	if c.dirfd {
		return 2
	}
	return 1
}

// SECCOMP_IOCTL_NOTIF_SET_FLAGS, _IOW('!', 4, __u64).
const ioctlNotifSetFlags = 0x40082104

// Numbers shared by every architecture below, and the kernel's limits
// on extended attributes (linux/limits.h).
const (
	xattrNameMax    = 255
	xattrSizeMax    = 65536
	nrFchmodat2     = 452
	nrSetxattrat    = 463
	nrRemovexattrat = 466
	nrFileSetattr   = 469
)

// metaAMD64 and metaGeneric are the metadata calls of amd64 and of the
// generic table (arm64, riscv64), which has no chmod, chown, lchown,
// utime, utimes and futimesat.
var (
	metaAMD64 = map[uint32]metaCall{
		90: {op: opChmod, path: true}, 91: {op: opChmod}, 268: {op: opChmod, dirfd: true}, nrFchmodat2: {op: opChmod, dirfd: true, flags: 3},
		92: {op: opChown, path: true}, 93: {op: opChown}, 94: {op: opChown, path: true, nofollow: true}, 260: {op: opChown, dirfd: true, flags: 4},
		132: {op: opUtime, path: true}, 235: {op: opUtimes, path: true}, 261: {op: opUtimes, dirfd: true}, 280: {op: opUtimensat, dirfd: true, flags: 3},
		188: {op: opSetxattr, path: true}, 189: {op: opSetxattr, path: true, nofollow: true}, 190: {op: opSetxattr},
		197: {op: opRemovexattr, path: true}, 198: {op: opRemovexattr, path: true, nofollow: true}, 199: {op: opRemovexattr},
	}
	metaGeneric = map[uint32]metaCall{
		52: {op: opChmod}, 53: {op: opChmod, dirfd: true}, nrFchmodat2: {op: opChmod, dirfd: true, flags: 3},
		55: {op: opChown}, 54: {op: opChown, dirfd: true, flags: 4},
		88: {op: opUtimensat, dirfd: true, flags: 3},
		5:  {op: opSetxattr, path: true}, 6: {op: opSetxattr, path: true, nofollow: true}, 7: {op: opSetxattr},
		14: {op: opRemovexattr, path: true}, 15: {op: opRemovexattr, path: true, nofollow: true}, 16: {op: opRemovexattr},
	}
)

// metaFilter adds the metadata part to b: every call of a.meta goes to
// the listener; setxattrat, removexattrat (Linux 6.13) and file_setattr
// (6.17: the inode flags FS_IOC_FSSETXATTR sets, by path, nodump and
// noatime for the owner) fail with ENOSYS, as on a kernel without them.
// The ioctls that set those flags need a descriptor, which Landlock
// lets the agent open only on a granted file.
func metaFilter(b *bpf, a seccompArch) {
	const jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	nrs := make([]uint32, 0, len(a.meta))
	for nr := range a.meta {
		nrs = append(nrs, nr)
	}
	slices.Sort(nrs)
	for _, nr := range nrs {
		b.jmp(jeq, nr, "notify", "")
	}
	b.jmp(jeq, nrSetxattrat, "nosys", "")
	b.jmp(jeq, nrRemovexattrat, "nosys", "")
	b.jmp(jeq, nrFileSetattr, "nosys", "")
}

// metaGuard decides which files an emulated call may change.
type metaGuard struct {
	// dirs and files are the writable grants, canonical: a directory
	// covers everything beneath it.
	dirs, files []string
	// protected are the paths inside them that stay unchanged
	// (canonical; everything beneath one too).
	protected []string
}

// newMetaGuard is the guard of p's ReadWrite and WriteOnly paths and
// protected. Missing paths are left out (Landlock skips them too).
func newMetaGuard(p Policy, protected []string) metaGuard {
	var g metaGuard
	for _, path := range slices.Concat(p.ReadWrite, p.WriteOnly) {
		c, err := filepath.EvalSymlinks(path)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(c); err == nil && fi.IsDir() {
			g.dirs = append(g.dirs, c)
		} else if err == nil {
			g.files = append(g.files, c)
		}
	}
	for _, path := range protected {
		// The entry itself, where its directory really is (an entry
		// that is a symlink is kept as it is: its target is not
		// protected by it).
		path = filepath.Clean(path)
		g.protected = append(g.protected, path)
		if d, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil && d != filepath.Dir(path) {
			g.protected = append(g.protected, filepath.Join(d, filepath.Base(path)))
		}
	}
	return g
}

// within says whether path is root or lies beneath it.
func within(path, root string) bool {
	return path == root || root == "/" || strings.HasPrefix(path, root+"/")
}

// allows says whether a call may change the file open as fd: a file
// that is not a device node, whose path lies inside a writable grant and
// outside every protected path, or a regular file no directory holds.
func (g metaGuard) allows(fd int) unix.Errno {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return unix.EPERM
	}
	if t := st.Mode & unix.S_IFMT; t == unix.S_IFCHR || t == unix.S_IFBLK {
		return unix.EPERM
	}
	path, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return unix.EPERM // a pipe, a socket, an anonymous inode
	}
	if strings.HasSuffix(path, " (deleted)") && st.Nlink == 0 && st.Mode&unix.S_IFMT == unix.S_IFREG {
		// A file no directory holds (a memfd, an O_TMPFILE, one
		// removed while open): only its holders reach it, by a
		// descriptor, and linking it anywhere needs a grant. A name
		// removed while others remain is judged by the directory it
		// was in ("DIR/NAME (deleted)").
		return 0
	}
	inside := slices.Contains(g.files, path)
	for _, d := range g.dirs {
		inside = inside || within(path, d)
	}
	if !inside {
		return unix.EPERM
	}
	for _, p := range g.protected {
		if within(path, p) {
			return unix.EPERM
		}
	}
	return 0
}

// metaRequest is one notification being served.
type metaRequest struct {
	listener int
	req      *seccompNotif
	mem      int // the target's /proc/PID/mem, or -1
}

// valid says whether the request is still pending: its process has not
// died (so req.pid still names it), and what was read from it belongs to it.
func (r *metaRequest) valid() bool {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(r.listener), unix.SECCOMP_IOCTL_NOTIF_ID_VALID, uintptr(unsafe.Pointer(&r.req.id)))
	return errno == 0
}

// read reads n bytes at addr of the target's memory.
func (r *metaRequest) read(addr uint64, n int) ([]byte, unix.Errno) {
	if r.mem < 0 {
		fd, err := unix.Open("/proc/"+strconv.Itoa(int(r.req.pid))+"/mem", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, unix.EPERM
		}
		r.mem = fd
	}
	b := make([]byte, n)
	got := 0
	for got < n {
		m, err := unix.Pread(r.mem, b[got:], int64(addr)+int64(got))
		if err != nil || m <= 0 {
			return nil, unix.EFAULT
		}
		got += m
	}
	return b, 0
}

// readString reads a NUL-terminated string of at most max bytes at addr,
// a page at a time (the string may end just before an unmapped page).
func (r *metaRequest) readString(addr uint64, max int, tooLong unix.Errno) (string, unix.Errno) {
	if addr == 0 {
		return "", unix.EFAULT
	}
	var s []byte
	for len(s) <= max {
		n := 4096 - int((addr+uint64(len(s)))%4096)
		chunk, errno := r.read(addr+uint64(len(s)), n)
		if errno != 0 {
			return "", errno
		}
		if i := bytes.IndexByte(chunk, 0); i >= 0 {
			s = append(s, chunk[:i]...)
			if len(s) > max {
				break
			}
			return string(s), 0
		}
		s = append(s, chunk...)
	}
	return "", tooLong
}

// openProc opens the target's /proc entry name (cwd, fd/N) O_PATH.
func (r *metaRequest) openProc(name string) (int, unix.Errno) {
	fd, err := unix.Open("/proc/"+strconv.Itoa(int(r.req.pid))+"/"+name, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return -1, unix.EBADF // no such descriptor
		}
		return -1, unix.EPERM
	}
	return fd, 0
}

// metaArgs are a call's arguments, read from the target.
type metaArgs struct {
	path    string // "" with emptyPath
	fdOnly  bool   // the file is the descriptor args[0] itself
	dirfd   int32
	atFlags uint64
	times   []unix.Timespec // nil: now
	name    string
	value   []byte
	mode    uint32
	uid     int
	gid     int
	xflags  int
}

// readArgs reads what c needs from the target, in the order the kernel
// validates it.
func (r *metaRequest) readArgs(c metaCall) (metaArgs, unix.Errno) {
	a := metaArgs{dirfd: unix.AT_FDCWD}
	args := r.req.args
	if c.flags > 0 {
		a.atFlags = args[c.flags] & 0xffffffff
		if a.atFlags&^uint64(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
			return a, unix.EINVAL
		}
	}
	switch {
	case !c.path && !c.dirfd:
		a.fdOnly, a.dirfd = true, int32(args[0])
	case c.dirfd && args[1] == 0 && (c.op == opUtimes || c.op == opUtimensat) && int32(args[0]) != unix.AT_FDCWD:
		// futimesat and utimensat with no path work on the
		// descriptor (futimens), without flags.
		if a.atFlags != 0 {
			return a, unix.EINVAL
		}
		a.fdOnly, a.dirfd = true, int32(args[0])
	default:
		pathArg := args[0]
		if c.dirfd {
			a.dirfd, pathArg = int32(args[0]), args[1]
		}
		if pathArg == 0 && a.atFlags&unix.AT_EMPTY_PATH != 0 {
			break // an empty path (Linux 6.10 and later accept NULL)
		}
		p, errno := r.readString(pathArg, unix.PathMax-1, unix.ENAMETOOLONG)
		if errno != 0 {
			return a, errno
		}
		if p == "" && a.atFlags&unix.AT_EMPTY_PATH == 0 {
			return a, unix.ENOENT
		}
		a.path = p
	}
	return a, r.readOpArgs(c, &a)
}

// readOpArgs reads the arguments of c's operation into a.
func (r *metaRequest) readOpArgs(c metaCall, a *metaArgs) unix.Errno {
	args, i := r.req.args, c.rest()
	var errno unix.Errno
	switch c.op {
	case opChmod:
		a.mode = uint32(args[i] & 0xffff)
	case opChown:
		// The ids are the target's: inside a user namespace of its own
		// (nested_userns) they are mapped to this process's.
		if a.uid, errno = r.mapID("uid_map", int32(args[i])); errno == 0 {
			a.gid, errno = r.mapID("gid_map", int32(args[i+1]))
		}
	case opUtime, opUtimes, opUtimensat:
		a.times, errno = r.readTimes(c.op, args[i])
	case opSetxattr, opRemovexattr:
		a.name, errno = r.readString(args[i], xattrNameMax, unix.ERANGE)
		if errno == 0 && a.name == "" {
			errno = unix.ERANGE
		}
		if errno == 0 && c.op == opSetxattr {
			a.xflags = int(int32(args[i+3]))
			size := args[i+2]
			if size > xattrSizeMax {
				return unix.E2BIG
			}
			if size > 0 {
				a.value, errno = r.read(args[i+1], int(size))
			}
		}
	}
	return errno
}

// mapID maps id, a user or group id in the target's user namespace, to
// this process's: the same id in the same namespace, else by the
// target's /proc/PID/uid_map or gid_map (which the kernel shows relative
// to the reader's namespace when it is another); -1 (leave it) stays.
// An id the namespace does not map is EINVAL, as chown says.
func (r *metaRequest) mapID(file string, id int32) (int, unix.Errno) {
	if id == -1 {
		return -1, 0
	}
	proc := "/proc/" + strconv.Itoa(int(r.req.pid))
	var theirs, ours unix.Stat_t
	if unix.Stat(proc+"/ns/user", &theirs) != nil || unix.Stat("/proc/self/ns/user", &ours) != nil {
		return 0, unix.EPERM
	}
	if theirs.Dev == ours.Dev && theirs.Ino == ours.Ino {
		return int(id), 0
	}
	b, err := os.ReadFile(proc + "/" + file)
	if err != nil {
		return 0, unix.EPERM
	}
	want := uint64(uint32(id))
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		inside, err1 := strconv.ParseUint(f[0], 10, 32)
		outside, err2 := strconv.ParseUint(f[1], 10, 32)
		count, err3 := strconv.ParseUint(f[2], 10, 33)
		if err1 == nil && err2 == nil && err3 == nil && want >= inside && want-inside < count {
			return int(int32(uint32(outside + want - inside))), 0
		}
	}
	return 0, unix.EINVAL
}

// readTimes reads the times of op at addr: a struct utimbuf (seconds),
// two struct timeval or two struct timespec; nil (the current time) for
// a NULL addr.
func (r *metaRequest) readTimes(op metaOp, addr uint64) ([]unix.Timespec, unix.Errno) {
	if addr == 0 {
		return nil, 0
	}
	le := binary.NativeEndian
	if op == opUtime {
		b, errno := r.read(addr, 16)
		if errno != 0 {
			return nil, errno
		}
		return []unix.Timespec{{Sec: int64(le.Uint64(b))}, {Sec: int64(le.Uint64(b[8:]))}}, 0
	}
	b, errno := r.read(addr, 32)
	if errno != 0 {
		return nil, errno
	}
	var times []unix.Timespec
	for k := 0; k < 2; k++ {
		sec, frac := int64(le.Uint64(b[16*k:])), int64(le.Uint64(b[16*k+8:]))
		if op == opUtimes {
			if frac < 0 || frac >= 1000000 {
				return nil, unix.EINVAL
			}
			frac *= 1000 // microseconds
		}
		times = append(times, unix.Timespec{Sec: sec, Nsec: frac})
	}
	return times, 0
}

// openTarget opens the file a names, O_PATH, as the target would reach
// it: relative to its working directory or to its descriptor dirfd, a
// final symlink followed unless c or the flags say not to, magic links
// (/proc/PID/fd/N) never followed on the way.
func (r *metaRequest) openTarget(c metaCall, a metaArgs) (int, unix.Errno) {
	if a.fdOnly || (a.path == "" && a.atFlags&unix.AT_EMPTY_PATH != 0) {
		switch {
		case a.dirfd == unix.AT_FDCWD && !a.fdOnly:
			return r.openProc("cwd")
		case a.dirfd < 0:
			return -1, unix.EBADF
		}
		return r.openProc("fd/" + strconv.Itoa(int(a.dirfd)))
	}
	if fd, ok := selfFd(a.path); ok {
		// The target's own descriptor by its /proc path (glibc's
		// lchmod and others name an O_PATH descriptor so): /proc/self
		// would be this process here.
		return r.openProc("fd/" + strconv.Itoa(fd))
	}
	base := unix.AT_FDCWD
	if !filepath.IsAbs(a.path) {
		name := "cwd"
		if a.dirfd != unix.AT_FDCWD {
			if a.dirfd < 0 {
				return -1, unix.EBADF
			}
			name = "fd/" + strconv.Itoa(int(a.dirfd))
		}
		fd, errno := r.openProc(name)
		if errno != 0 {
			return -1, errno
		}
		defer unix.Close(fd)
		base = fd
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_MAGICLINKS}
	if c.nofollow || a.atFlags&unix.AT_SYMLINK_NOFOLLOW != 0 {
		how.Flags |= unix.O_NOFOLLOW
	}
	fd, err := unix.Openat2(base, a.path, &how)
	if err != nil {
		var errno unix.Errno
		if errors.As(err, &errno) {
			if errno == unix.ELOOP && how.Flags&unix.O_NOFOLLOW == 0 {
				return -1, unix.ELOOP
			}
			return -1, errno
		}
		return -1, unix.EPERM
	}
	return fd, 0
}

// selfFd reads path as /proc/self/fd/N or /proc/thread-self/fd/N.
func selfFd(path string) (int, bool) {
	for _, prefix := range []string{"/proc/self/fd/", "/proc/thread-self/fd/"} {
		if rest, ok := strings.CutPrefix(path, prefix); ok {
			n, err := strconv.Atoi(rest)
			return n, err == nil && n >= 0 && strconv.Itoa(n) == rest
		}
	}
	return 0, false
}

// perform does c with a on the file open (O_PATH) as fd.
func perform(c metaCall, a metaArgs, fd int, nofollow bool) unix.Errno {
	self := "/proc/self/fd/" + strconv.Itoa(fd)
	var err error
	switch c.op {
	case opChmod:
		var st unix.Stat_t
		if nofollow {
			if err := unix.Fstat(fd, &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return unix.EOPNOTSUPP // as fchmodat2 and glibc's lchmod
			}
		}
		err = unix.Fchmodat(unix.AT_FDCWD, self, a.mode, 0)
	case opChown:
		err = unix.Fchownat(fd, "", a.uid, a.gid, unix.AT_EMPTY_PATH)
	case opUtime, opUtimes, opUtimensat:
		if a.times != nil {
			err = unix.UtimesNanoAt(unix.AT_FDCWD, self, a.times, 0)
		} else {
			p, perr := unix.BytePtrFromString(self)
			if perr != nil {
				return unix.EINVAL
			}
			cwd := unix.AT_FDCWD
			_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(cwd), uintptr(unsafe.Pointer(p)), 0, 0, 0, 0)
			err = errnoErr(e)
		}
	case opSetxattr:
		err = unix.Setxattr(self, a.name, a.value, a.xflags)
	case opRemovexattr:
		err = unix.Removexattr(self, a.name)
	}
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno
	}
	if err != nil {
		return unix.EPERM
	}
	return 0
}

// errnoErr is e as an error (nil for 0).
func errnoErr(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// serveMetadata serves the metadata listener of StartProtected until
// stop hangs up (the child has ended) or the listener fails, then closes
// both. It runs on a thread of its own without capabilities (see the
// comment at the top), and reports on ready whether it could drop them
// (the child must not start otherwise).
func serveMetadata(listener, stop int, g metaGuard, ready chan<- error) {
	runtime.LockOSThread() // for good: the thread drops its capabilities
	defer unix.Close(listener)
	defer unix.Close(stop)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		ready <- fmt.Errorf("dropping the capabilities of the metadata listener's thread: %w", err)
		return
	}
	ready <- nil
	// The agent waits for each reply: ask the kernel to switch to this
	// thread and back at once (Linux 6.6 and later; older kernels
	// refuse the flag, and the replies only come a little later).
	sync := uint64(unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
	_, _, _ = unix.Syscall(unix.SYS_IOCTL, uintptr(listener), ioctlNotifSetFlags, uintptr(sync))
	table := seccompArches[runtime.GOARCH].meta
	for {
		pfd := []unix.PollFd{{Fd: int32(listener), Events: unix.POLLIN}, {Fd: int32(stop), Events: unix.POLLIN}}
		if _, err := unix.Poll(pfd, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return
		}
		if pfd[1].Revents != 0 {
			return
		}
		if pfd[0].Revents&unix.POLLIN == 0 {
			return
		}
		var req seccompNotif
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(listener), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&req))); errno != 0 {
			if errno == unix.EINTR || errno == unix.ENOENT {
				continue
			}
			return
		}
		resp := seccompNotifResp{id: req.id}
		if errno := serveOne(listener, &req, table, g); errno != 0 {
			resp.error = -int32(errno)
		}
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(listener), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp))); errno != 0 && errno != unix.ENOENT {
			return
		}
	}
}

// serveOne performs one request, returning its errno (0: success).
func serveOne(listener int, req *seccompNotif, table map[uint32]metaCall, g metaGuard) unix.Errno {
	c, ok := table[uint32(req.nr)]
	if !ok {
		return unix.ENOSYS
	}
	r := &metaRequest{listener: listener, req: req, mem: -1}
	defer func() {
		if r.mem >= 0 {
			unix.Close(r.mem)
		}
	}()
	a, errno := r.readArgs(c)
	if errno != 0 {
		return errno
	}
	fd, errno := r.openTarget(c, a)
	if errno != 0 {
		return errno
	}
	defer unix.Close(fd)
	// Everything read from the target (its memory, its working
	// directory, its descriptors) was read while it still waited in
	// this call: req.pid named it throughout.
	if !r.valid() {
		return unix.ENOENT
	}
	if errno := g.allows(fd); errno != 0 {
		return errno
	}
	return perform(c, a, fd, c.nofollow || a.atFlags&unix.AT_SYMLINK_NOFOLLOW != 0)
}
