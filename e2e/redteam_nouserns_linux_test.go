package e2e

import (
	"os"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// noUsernsEnv makes this test binary, started with it set, a wrapper that
// runs the command after "--" where creating a user namespace fails with
// EPERM (clone3 with ENOSYS, for the fallback to clone): a host without
// user namespaces for an ordinary user, as the user, with no capability in
// any namespace. (noUserns's `unshare -U -r` simulates the host with
// agent-sandbox as its namespace's root, which reads and writes whatever
// a file's mode says: an attack through chmod does not show there.)
const noUsernsEnv = "AGENT_SANDBOX_E2E_SECCOMP_NOUSERNS"

func init() {
	if os.Getenv(noUsernsEnv) != "1" {
		return
	}
	var argv []string
	for i, a := range os.Args {
		if a == "--" {
			argv = os.Args[i+1:]
			break
		}
	}
	if len(argv) == 0 {
		os.Exit(2)
	}
	eperm := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	enosys := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	f := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // the syscall's number
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_CLONE3, Jt: 0, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: enosys},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_UNSHARE, Jt: 1, Jf: 0},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_CLONE, Jt: 0, Jf: 3},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 16}, // the flags (low word)
		{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: unix.CLONE_NEWUSER, Jt: 0, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: eperm},
		{Code: unix.BPF_RET | unix.BPF_K, K: allow},
	}
	prog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		os.Exit(3)
	}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog))); e != 0 {
		os.Exit(4)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, noUsernsEnv+"=") {
			env = append(env, kv)
		}
	}
	_ = syscall.Exec(argv[0], argv, env)
	os.Exit(5)
}

// seccompNoUserns is the prefix and the environment that run agent-sandbox
// on a host without user namespaces, as the caller (see noUsernsEnv).
func seccompNoUserns() (prefix, env []string) {
	return []string{os.Args[0], "--"}, []string{noUsernsEnv + "=1"}
}
