//go:build linux

package landlock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// helperEnv makes the test binary act as a small probe program (see
// runHelper) instead of running tests. Tests only: the package itself
// never starts a second Go process.
const helperEnv = "LANDLOCK_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(runHelper(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// runHelper runs one probe and prints "ok" or "denied: <error>". It exits
// 0 when the probe succeeded and 1 when it failed.
func runHelper(args []string) int {
	if len(args) != 2 {
		fmt.Println("usage: connect-tcp|send-udp|connect-abstract ADDR")
		return 2
	}
	var err error
	switch args[0] {
	case "connect-tcp":
		var c net.Conn
		if c, err = net.DialTimeout("tcp", args[1], 3*time.Second); err == nil {
			c.Close()
		}
	case "send-udp":
		var c net.Conn
		if c, err = net.Dial("udp", args[1]); err == nil {
			// Several datagrams, in case one is dropped.
			for range 5 {
				if _, err = c.Write([]byte("canary")); err != nil {
					break
				}
			}
			c.Close()
		}
	case "connect-abstract":
		var c net.Conn
		if c, err = net.DialTimeout("unix", "@"+args[1], 3*time.Second); err == nil {
			c.Close()
		}
	case "tiocsti":
		// Push one byte into the terminal on fd 0 (threat class 17).
		b := []byte(args[1])
		_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, 0, syscall.TIOCSTI, uintptr(unsafe.Pointer(&b[0])))
		if errno != 0 {
			err = errno
		}
	case "truncate":
		// truncate(2) by path (ABI 3 mediates it; below, seccomp).
		err = syscall.Truncate(args[1], 0)
	case "fscrypt":
		// Make the directory args[1] encrypted, then add a key (both
		// refused in the sandbox; EOPNOTSUPP outside on a filesystem
		// without encryption).
		d, derr := syscall.Open(args[1], syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
		if derr != nil {
			err = derr
			break
		}
		var policy [12]byte
		policy[0], policy[1], policy[2] = 1, 1, 4 // v1, AES-256-XTS, AES-256-CTS
		_, _, e1 := syscall.Syscall(syscall.SYS_IOCTL, uintptr(d), ioctlFSSetEncryptionPolicy, uintptr(unsafe.Pointer(&policy[0])))
		var key [80 + 64]byte
		key[0] = 1 // FSCRYPT_KEY_SPEC_TYPE_DESCRIPTOR
		key[40] = 64
		_, _, e2 := syscall.Syscall(syscall.SYS_IOCTL, uintptr(d), ioctlFSAddEncryptionKey, uintptr(unsafe.Pointer(&key[0])))
		syscall.Close(d)
		fmt.Printf("set-policy: %v; add-key: %v\n", e1, e2)
		if e1 == syscall.EPERM && e2 == syscall.EPERM {
			err = syscall.EPERM
		}
	default:
		fmt.Println("unknown probe", args[0])
		return 2
	}
	if err != nil {
		fmt.Println("denied:", err)
		return 1
	}
	fmt.Println("ok")
	return 0
}

// testExe is the test binary, granted to children that run probes.
func testExe(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// systemPolicy grants what /bin/sh, coreutils and the test binary need.
func systemPolicy(t testing.TB) Policy {
	return Policy{
		ReadExec:  []string{"/bin", "/usr", "/lib", "/lib64", "/etc", testExe(t)},
		ReadWrite: []string{"/dev/null"},
	}
}

// testKernel returns the running kernel, or a variant of it that forces
// one way of blocking the network. mode is "host", "netns" or "tcp".
func testKernel(t testing.TB, mode string) kernel {
	t.Helper()
	k := hostKernel(Policy{Network: NetBlocked})
	if k.abi < 1 {
		t.Skipf("skipping: %v", k.abiErr)
	}
	switch mode {
	case "host":
	case "netns":
		if !k.userns {
			t.Skipf("skipping: the network namespace mode needs user namespaces, which are unavailable: %s", k.usernsWhy)
		}
	case "tcp":
		if k.abi < abiTCP {
			t.Skipf("skipping: the TCP rules mode needs Landlock ABI %d, the kernel has ABI %d", abiTCP, k.abi)
		}
		k.userns, k.usernsWhy = false, "disabled by the test"
	default:
		t.Fatalf("unknown mode %q", mode)
	}
	return k
}

type result struct {
	out  string
	err  error // from Wait
	proc *Process
}

// runConfined runs argv confined by p on kernel k and returns its
// combined output. A Start error fails the test.
func runConfined(t testing.TB, p Policy, k kernel, argv ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = []string{helperEnv + "=1", "PATH=/usr/bin:/bin", "LC_ALL=C"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	proc, err := start(cmd, p, Seccomp{}, k)
	if err != nil {
		t.Fatalf("Start %q: %v", argv, err)
	}
	err = proc.Wait()
	return result{out: out.String(), err: err, proc: proc}
}

// runBare runs argv without any sandbox: the control that shows a probe
// works at all.
func runBare(t testing.TB, argv ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = []string{helperEnv + "=1", "PATH=/usr/bin:/bin", "LC_ALL=C"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// exitCode returns the exit status in err (0 for nil, -1 if not an exit).
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// nnpThreads counts this process's threads that have no_new_privs set.
func nnpThreads(t testing.TB) (nnp, total int) {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/status")
		if err != nil {
			continue // the thread ended meanwhile
		}
		total++
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "NoNewPrivs:"); ok && strings.TrimSpace(v) == "1" {
				nnp++
			}
		}
	}
	return nnp, total
}

// processAlive reports whether pid still exists and is not a zombie.
func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] != 'Z'
}
