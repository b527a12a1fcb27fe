//go:build linux

package landlock

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The rules of a Landlock domain are tied to inodes when the ruleset is
// built, and Start builds it in the parent, before the child exists: the
// child's own /proc/<pid> cannot be named then, so a policy that lets the
// agent read its /proc/self (which runtimes such as Bun and V8 need) must
// grant all of /proc, other processes' cmdline included. ExecNarrowed is the
// second half: the first program the confined child runs is agent-sandbox
// itself (a trampoline), which adds a second Landlock layer that allows
// reading everything the first layer allows except /proc, where it allows
// only its own /proc/<pid> and a few host-wide files, and then execs the
// agent. A process must satisfy every layer, so the agent reads its own
// /proc/self and nothing of other processes.

// ProcFiles are the host-wide /proc entries the narrowed layer keeps
// readable (CPU and memory sizing, kernel version, sysctls).
var ProcFiles = []string{
	"/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/loadavg", "/proc/version",
	"/proc/filesystems", "/proc/uptime", "/proc/sys", "/proc/mounts",
}

// RootEntries lists the entries of "/" other than /proc, as absolute paths,
// for ExecNarrowed. The parent calls it (the confined child cannot list /).
func RootEntries() ([]string, error) {
	entries, err := os.ReadDir("/")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.Name() != "proc" {
			out = append(out, "/"+e.Name())
		}
	}
	return out, nil
}

// ExecNarrowed adds the /proc-narrowing Landlock layer to the calling
// process and execs argv with env. roots are the entries of "/" to keep
// readable (from RootEntries). It returns only on error.
func ExecNarrowed(roots, argv, env []string) error {
	runtime.LockOSThread()
	abi, err := ABI()
	if err != nil {
		return err
	}
	handled := uint64(fsReadFile | fsReadDir)
	if abi >= abiRefer {
		// A layer that does not handle REFER refuses every link and
		// rename across directories (EXDEV), whatever the other layers
		// allow: this one handles it and grants it on every root entry,
		// leaving the decision to the policy's layer.
		handled |= fsRefer
	}
	attr := rulesetAttr{handledAccessFS: handled}
	if abi >= abiScope {
		// This layer is the agent's innermost domain: scoped, it keeps
		// the agent from signalling (or reaching the abstract sockets
		// of) the outer domain, where the thread of agent-sandbox that
		// confined itself for it lives (a SIGKILL to that thread would
		// end agent-sandbox, and with it the clean-up of the run).
		attr.scoped = unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
	}
	r, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return fmt.Errorf("creating the /proc layer (ABI %d): %w", abi, errno)
	}
	fd := int(r)
	defer unix.Close(fd)
	g := grant{dir: handled, file: fsReadFile}
	paths := append(append(append([]string{}, roots...), "/proc/self"), ProcFiles...)
	var opener pathOpener
	defer opener.close()
	for _, p := range paths {
		if _, err := addPathRule(fd, &opener, p, g); err != nil {
			return fmt.Errorf("/proc layer: %s: %w", p, err)
		}
	}
	if err := restrictSelf(fd); err != nil {
		return err
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	return syscall.Exec(path, argv, env)
}
