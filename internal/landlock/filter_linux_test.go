//go:build linux

package landlock

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStartFiltered: the child gets no_new_privs and the filter (its
// optional parts only when asked for), while the rest of the process
// keeps neither: it still makes the Unix socket the child may not, and a
// child it starts the ordinary way afterwards has neither. The
// child gets Pdeathsig, and a connect listener is refused.
func TestStartFiltered(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the probe uses amd64 system call numbers")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("needs python3 to make the system calls")
	}
	const probe = seccompProbe + `
for name, ty in (("dgram", socket.SOCK_DGRAM), ("raw", socket.SOCK_RAW), ("seqpacket", socket.SOCK_SEQPACKET)):
    try:
        socket.socketpair(socket.AF_UNIX, ty); print("pair-" + name, "ok")
    except PermissionError:
        print("pair-" + name, "denied")
print("userns", "denied" if libc.unshare(0x10000000) < 0 else "ok")
for line in open("/proc/self/status"):
    if line.startswith(("NoNewPrivs:", "Seccomp:")): print(line.split()[0], line.split()[1])
`
	for _, tc := range []struct {
		sc   Seccomp
		want []string
	}{
		{Seccomp{}, []string{"keyctl ok", "unix ok", "socketpair ok", "pair-dgram ok", "pair-raw ok", "pair-seqpacket ok", "NoNewPrivs: 1", "Seccomp: 2"}},
		{Seccomp{DenyKeyrings: true, DenyUnixSockets: true, DenyUserns: true, DenyHostIPC: true},
			// A SOCK_RAW pair is a datagram pair to the kernel.
			[]string{"keyctl denied", "unix denied", "socketpair ok", "pair-dgram denied", "pair-raw denied", "pair-seqpacket ok", "userns denied", "NoNewPrivs: 1", "Seccomp: 2"}},
	} {
		cmd := exec.Command(py, "-c", probe)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		wait, err := StartFiltered(cmd, tc.sc)
		if err != nil {
			t.Fatal(err)
		}
		if cmd.SysProcAttr == nil || cmd.SysProcAttr.Pdeathsig != syscall.SIGKILL {
			t.Errorf("the child has no Pdeathsig SIGKILL: %+v", cmd.SysProcAttr)
		}
		if err := wait(); err != nil {
			t.Fatalf("%+v: %v\n%s", tc.sc, err, out.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%+v: output lacks %q:\n%s", tc.sc, w, out.String())
			}
		}
		// The caller is untouched.
		l, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
		if err != nil {
			t.Errorf("the caller lost socket(AF_UNIX): %v", err)
		} else {
			l.Close()
		}
		// A child started the ordinary way afterwards has neither (the
		// filtered thread never runs Go code again; /proc/self/status
		// would not tell, as it is the main thread's, which may be the
		// one that was locked).
		plain, err := exec.Command(py, "-c", probe).CombinedOutput()
		if err != nil || !strings.Contains(string(plain), "NoNewPrivs: 0") || !strings.Contains(string(plain), "unix ok") {
			t.Errorf("a child started afterwards from another thread inherited the filter (%v):\n%s", err, plain)
		}
	}
	if _, err := StartFiltered(exec.Command(py), Seccomp{NotifyConnect: true}); err == nil {
		t.Error("a connect listener nobody serves was accepted")
	}
}

// familyProbe tries socket(2) in each family outside the filter's allow
// list (AF_PACKET, AF_ALG, AF_BLUETOOTH, AF_CAN, AF_VSOCK, AF_TIPC, 45
// and 46: AF_MCTP and the first number no kernel has yet), socketpair(2)
// in AF_TIPC, a netlink socket other than NETLINK_ROUTE, and, as the
// neighbours an agent needs, AF_INET, AF_INET6 (where the kernel has it),
// AF_UNIX and NETLINK_ROUTE. It prints "FAMILY errno-name" or "FAMILY ok".
const familyProbe = `
import errno, socket
def try_(name, f):
    try:
        f().close() if not isinstance(f, tuple) else None
        print(name, "ok")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, str(e.errno)))
for name, fam, ty, proto in (("packet", 17, socket.SOCK_RAW, 0), ("alg", 38, socket.SOCK_SEQPACKET, 0),
        ("bluetooth", 31, socket.SOCK_STREAM, 3), ("can", 29, socket.SOCK_RAW, 1), ("vsock", 40, socket.SOCK_STREAM, 0),
        ("tipc", 30, socket.SOCK_RDM, 0), ("fam45", 45, socket.SOCK_DGRAM, 0), ("fam46", 46, socket.SOCK_DGRAM, 0),
        ("netlink-diag", 16, socket.SOCK_DGRAM, 4), ("netlink-route", 16, socket.SOCK_DGRAM, 0),
        ("inet", 2, socket.SOCK_STREAM, 0), ("inet-dgram", 2, socket.SOCK_DGRAM, 0), ("unix-stream", 1, socket.SOCK_STREAM, 0)):
    try_(name, lambda: socket.socket(fam, ty, proto))
try:
    socket.socket(10, socket.SOCK_STREAM).close(); print("inet6 ok")
except OSError as e:
    print("inet6", "ok" if e.errno == errno.EAFNOSUPPORT and not open("/proc/net/if_inet6").read() else errno.errorcode.get(e.errno))
try:
    socket.socketpair(30, socket.SOCK_SEQPACKET); print("pair-tipc ok")
except OSError as e:
    print("pair-tipc", errno.errorcode.get(e.errno, str(e.errno)))
`

// familyWant is what familyProbe must print under any filter: every family
// outside the allow list refused as on a kernel without it, netlink but
// NETLINK_ROUTE refused, the neighbours working.
var familyWant = []string{"packet EAFNOSUPPORT", "alg EAFNOSUPPORT", "bluetooth EAFNOSUPPORT", "can EAFNOSUPPORT",
	"vsock EAFNOSUPPORT", "tipc EAFNOSUPPORT", "fam45 EAFNOSUPPORT", "fam46 EAFNOSUPPORT", "pair-tipc EAFNOSUPPORT",
	"netlink-diag EPERM", "netlink-route ok", "inet ok", "inet-dgram ok", "inet6 ok"}

// TestSocketFamilyAllowList (issue 38, item 8): the filter admits socket
// families from an allow list (AF_INET, AF_INET6, AF_UNIX unless refused,
// AF_NETLINK with NETLINK_ROUTE), so a family it does not name, one a
// later kernel adds included, fails with EAFNOSUPPORT, under the filter
// nono's supervisor gets (StartFiltered), the weaker sandbox's (Unix
// sockets refused: EPERM) and the view's (ConfineThread). The control,
// unfiltered, shows which of those families this kernel does have.
func TestSocketFamilyAllowList(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("needs python3 to make the system calls")
	}
	control, _ := exec.Command(py, "-c", familyProbe).CombinedOutput()
	t.Logf("unfiltered:\n%s", control)
	check := func(name string, out string, unix string) {
		t.Helper()
		for _, w := range append(familyWant, unix) {
			if !strings.Contains(out, w+"\n") {
				t.Errorf("%s: output lacks %q:\n%s", name, w, out)
			}
		}
	}
	for _, tc := range []struct {
		sc   Seccomp
		unix string
	}{
		{Seccomp{}, "unix-stream ok"},
		{Seccomp{DenyKeyrings: true, DenyUnixSockets: true, DenyUserns: true, DenyHostIPC: true}, "unix-stream EPERM"},
	} {
		cmd := exec.Command(py, "-c", familyProbe)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		wait, err := StartFiltered(cmd, tc.sc)
		if err != nil {
			t.Fatal(err)
		}
		if err := wait(); err != nil {
			t.Fatalf("%+v: %v\n%s", tc.sc, err, out.String())
		}
		check(fmt.Sprintf("StartFiltered %+v", tc.sc), out.String(), tc.unix)
	}
	if _, err := ABI(); err != nil {
		t.Logf("no Landlock here (%v): ConfineThread not tried", err)
		return
	}
	out, err := confinedOutput(t, Seccomp{NotifyConnect: false}, "/usr/bin/python3", "-c", familyProbe)
	if err != nil {
		t.Fatalf("ConfineThread: %v\n%s", err, out)
	}
	check("ConfineThread", out, "unix-stream ok")
}

// runBPF runs a seccomp filter over the seccomp_data of one system call
// (nr, the native arch, args) with the classic BPF operations the filter
// uses, and returns its verdict.
func runBPF(t *testing.T, prog []unix.SockFilter, arch, nr uint32, args ...uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[0:], nr)
	binary.LittleEndian.PutUint32(data[4:], arch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(data[16+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			acc &= in.K
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			var ok bool
			switch in.Code &^ (unix.BPF_JMP | unix.BPF_K) {
			case unix.BPF_JEQ:
				ok = acc == in.K
			case unix.BPF_JGE:
				ok = acc >= in.K
			default:
				ok = acc&in.K != 0
			}
			if ok {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("instruction %d: code %#x not emulated", pc, in.Code)
		}
	}
	t.Fatal("the filter ran off its end")
	return 0
}

// TestSeccompFamiliesEmulated: over every socket family number (0-1023:
// the ones this kernel lacks, and those no kernel has yet, included),
// every filter admits socket(2) only for AF_INET, AF_INET6, AF_UNIX
// (EPERM when Unix sockets are refused) and AF_NETLINK with NETLINK_ROUTE
// (EPERM for another protocol), and socketpair(2) only for AF_UNIX; the
// rest fail with EAFNOSUPPORT. Run on each architecture's filter.
func TestSeccompFamiliesEmulated(t *testing.T) {
	const (
		allow    = unix.SECCOMP_RET_ALLOW
		eperm    = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		nofamily = unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT)
	)
	for name, a := range seccompArches {
		for _, sc := range []Seccomp{{}, {DenyUnixSockets: true, DenyHostIPC: true, DenyKeyrings: true, DenyUserns: true}, {NotifyConnect: true}} {
			prog := seccompFilter(a, sc)
			for fam := uint64(0); fam < 1024; fam++ {
				want := nofamily
				switch fam {
				case unix.AF_INET, unix.AF_INET6:
					want = allow
				case unix.AF_UNIX:
					want = allow
					if sc.DenyUnixSockets {
						want = eperm
					}
				}
				if fam == unix.AF_NETLINK {
					if got := runBPF(t, prog, a.audit, a.socket, fam, unix.SOCK_DGRAM, unix.NETLINK_ROUTE); got != allow {
						t.Errorf("%s %+v: NETLINK_ROUTE: %#x", name, sc, got)
					}
					for _, proto := range []uint64{unix.NETLINK_SOCK_DIAG, unix.NETLINK_AUDIT, unix.NETLINK_KOBJECT_UEVENT, unix.NETLINK_GENERIC, unix.NETLINK_NETFILTER, 31} {
						if got := runBPF(t, prog, a.audit, a.socket, fam, unix.SOCK_DGRAM, proto); got != eperm {
							t.Errorf("%s %+v: netlink protocol %d: %#x, want EPERM", name, sc, proto, got)
						}
					}
				} else if got := runBPF(t, prog, a.audit, a.socket, fam, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); got != want {
					t.Errorf("%s %+v: socket(%d): %#x, want %#x", name, sc, fam, got, want)
				}
				wantPair := nofamily
				if fam == unix.AF_UNIX {
					wantPair = allow
				}
				if got := runBPF(t, prog, a.audit, a.socketpair, fam, unix.SOCK_STREAM, 0); got != wantPair {
					t.Errorf("%s %+v: socketpair(%d): %#x, want %#x", name, sc, fam, got, wantPair)
				}
			}
		}
	}
}
