package scope

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeRoot lays out a cgroup v2 tree with uid 1000's user manager, its
// cgroup.controllers reading controllers ("" for no manager at all).
func fakeRoot(t *testing.T, controllers string) string {
	t.Helper()
	root := t.TempDir()
	write(t, filepath.Join(root, "cgroup.controllers"), "cpu memory pids\n")
	if controllers != "" {
		write(t, filepath.Join(root, managerCgroup(1000), "cgroup.controllers"), controllers+"\n")
	}
	return root
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFind checks what Find requires and what it says is missing, on
// cgroup trees laid out in a temporary directory.
func TestFind(t *testing.T) {
	runDir := t.TempDir()
	l, err := net.Listen("unix", filepath.Join(runDir, "bus"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	uid := os.Getuid()
	rootFor := func(controllers string) string {
		root := t.TempDir()
		write(t, filepath.Join(root, "cgroup.controllers"), "cpu memory pids\n")
		if controllers != "" {
			write(t, filepath.Join(root, managerCgroup(uid), "cgroup.controllers"), controllers+"\n")
		}
		return root
	}

	if _, err := find(t.TempDir(), uid, runDir); err == nil || !strings.Contains(err.Error(), "cgroup v2 is not mounted") {
		t.Errorf("no cgroup v2: %v", err)
	}
	if _, err := find(rootFor(""), uid, runDir); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("no systemd user manager runs for uid %d", uid)) {
		t.Errorf("no user manager: %v", err)
	}
	if _, err := find(rootFor("cpu pids"), uid, runDir); err == nil || !strings.Contains(err.Error(), "memory controller is not delegated") || !strings.Contains(err.Error(), `"cpu pids"`) {
		t.Errorf("no memory controller: %v", err)
	}
	if _, err := find(rootFor("memory pids"), uid, t.TempDir()); err == nil || !strings.Contains(err.Error(), "no user bus at") {
		t.Errorf("no user bus: %v", err)
	}
	if _, err := find(rootFor("memory pids"), uid+1, runDir); err == nil {
		t.Errorf("another user's bus was taken")
	}
	if _, err := trustedBusctl(BusctlPaths); err != nil {
		t.Skipf("the rows that find a manager need busctl installed (Debian: systemd): %v", err)
	}
	m, err := find(rootFor("memory pids"), uid, runDir)
	if err != nil || !m.Tasks() || !filepath.IsAbs(m.busctl) || m.address != "unix:path="+filepath.Join(runDir, "bus") {
		t.Errorf("a manager with memory and pids: %+v, %v", m, err)
	}
	if m, err := find(rootFor("memory"), uid, runDir); err != nil || m.Tasks() {
		t.Errorf("a manager with memory alone: %+v, %v", m, err)
	}
}

// TestSettle checks the wait for the move and the limits read back, on a
// /proc cgroup file and a cgroup tree laid out in a temporary directory.
func TestSettle(t *testing.T) {
	root := t.TempDir()
	unit := "agent-sandbox-x-5.scope"
	cg := managerCgroup(1000) + "/app.slice/" + unit
	write(t, filepath.Join(root, cg, "memory.max"), "1073741824\n")
	write(t, filepath.Join(root, cg, "pids.max"), "8192\n")
	proc := filepath.Join(t.TempDir(), "cgroup")
	m := &Manager{root: root}

	write(t, proc, "0::"+cg+"\n")
	s, err := m.settle(proc, 5, unit, Limits{MemoryMax: 1 << 30, TasksMax: 8192})
	if err != nil || s.Cgroup != filepath.Join(root, cg) || s.Unit != unit {
		t.Fatalf("settle: %+v, %v", s, err)
	}
	if _, err := m.settle(proc, 5, unit, Limits{MemoryMax: 1 << 20}); err == nil || !strings.Contains(err.Error(), "memory.max reads 1073741824, not the 1048576 asked for") {
		t.Errorf("a memory.max other than asked: %v", err)
	}
	os.Remove(filepath.Join(root, cg, "pids.max"))
	if _, err := m.settle(proc, 5, unit, Limits{TasksMax: 10}); err == nil || !strings.Contains(err.Error(), "holds no limit pids.max") {
		t.Errorf("no pids.max: %v", err)
	}

	// The move happens after the call returns: settle waits for it.
	write(t, proc, "0::/user.slice/user-1000.slice/session-1.scope\n")
	go func() {
		time.Sleep(20 * time.Millisecond)
		write(t, proc+".new", "0::"+cg+"\n")
		os.Rename(proc+".new", proc)
	}()
	if _, err := m.settle(proc, 5, unit, Limits{MemoryMax: 1 << 30}); err != nil {
		t.Errorf("a late move: %v", err)
	}

	defer func(d time.Duration) { settleTimeout = d }(settleTimeout)
	settleTimeout = 30 * time.Millisecond
	write(t, proc, "0::/elsewhere\n")
	if _, err := m.settle(proc, 5, unit, Limits{}); err == nil || !strings.Contains(err.Error(), "still in /elsewhere") {
		t.Errorf("never moved: %v", err)
	}
	if _, err := m.settle(filepath.Join(t.TempDir(), "gone"), 5, unit, Limits{}); err == nil || !strings.Contains(err.Error(), "the process 5 is gone") {
		t.Errorf("a process gone: %v", err)
	}
}

// TestAttachRealBusctl runs Attach's call with the real busctl against a
// real D-Bus daemon (a private session bus started for the test) where no
// systemd answers: busctl must parse every argument CallArgs gives and
// send the call, which the bus refuses as addressed to a name nobody owns.
// An argument busctl could not parse would fail before anything is sent,
// with another message. What systemd does with the call is checked in the
// NixOS VM test vm-scope (nix/tests/vm.nix), under nix flake check.
func TestAttachRealBusctl(t *testing.T) {
	busctl, err := trustedBusctl(BusctlPaths)
	if err != nil {
		t.Skipf("needs busctl (Debian: systemd): %v", err)
	}
	daemon, err := exec.LookPath("dbus-daemon")
	if err != nil {
		t.Skip("needs dbus-daemon (Debian: dbus-daemon)")
	}
	// A bus of its own configuration: no service directories, so that
	// nothing is activated for the name (a host's session configuration
	// activates org.freedesktop.systemd1 by running /bin/false).
	dir := t.TempDir()
	conf := filepath.Join(dir, "bus.conf")
	write(t, conf, `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=`+filepath.Join(dir, "bus")+`</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*"/>
    <allow own="*"/>
    <allow receive_sender="*"/>
    <allow user="*"/>
  </policy>
</busconfig>
`)
	cmd := exec.Command(daemon, "--config-file="+conf, "--nofork", "--nopidfile", "--print-address")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon printed no address: %v", err)
	}
	m := &Manager{busctl: busctl, pids: true, root: t.TempDir(), address: strings.TrimSpace(addr)}
	_, err = m.Attach(os.Getpid(), UnitName("probe", os.Getpid()), "agent-sandbox: probe in /a dir with spaces", Limits{MemoryMax: 3<<30 + 5, TasksMax: 8192})
	if err == nil {
		t.Fatal("Attach succeeded on a bus without systemd")
	}
	msg := err.Error()
	if !strings.Contains(msg, "did not create the scope agent-sandbox-probe-") || !strings.Contains(msg, "org.freedesktop.systemd1") ||
		!(strings.Contains(msg, "not provided by any .service files") || strings.Contains(msg, "ServiceUnknown")) {
		t.Errorf("Attach's error is not the bus refusing an unowned name: %s", msg)
	}

	// The control: an argument list busctl cannot parse fails otherwise.
	bad := CallArgs("u.scope", "d", 1, Limits{}, true)
	count := slices.Index(bad, "fail") + 1 // the number of properties
	n, _ := strconv.Atoi(bad[count])
	bad[count] = strconv.Itoa(n + 1) // one more than given
	c := exec.Command(busctl, append([]string{"--address=" + m.address}, bad...)...)
	b, _ := c.CombinedOutput()
	if s := string(b); strings.Contains(s, "not provided by any .service files") || strings.Contains(s, "ServiceUnknown") || s == "" {
		t.Errorf("a malformed call was sent, or failed silently: %q", s)
	}
}

func TestDelegated(t *testing.T) {
	v2 := fakeRoot(t, "memory pids")
	app := "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-term.scope\n"
	if err := delegated(v2, app, 1000); err != nil {
		t.Errorf("a desktop terminal's cgroup: %v", err)
	}
	if err := delegated(v2, "0::/user.slice/user-1000.slice/session-3.scope\n", 1000); err == nil || !strings.Contains(err.Error(), "does not lie under your systemd user manager (user@1000.service)") {
		t.Errorf("an ssh login's cgroup: %v", err)
	}
	if err := delegated(v2, "0::/user.slice/user-1000.slice/user@10001.service/app.slice\n", 1000); err == nil {
		t.Errorf("another user's manager was taken for this one's")
	}
	if err := delegated(t.TempDir(), app, 1000); err == nil || !strings.Contains(err.Error(), "cgroup v2 is not mounted") {
		t.Errorf("cgroup v1: %v", err)
	}
}

// busctl runs outside the sandbox: Find takes it only from the system's
// directories, owned by root and writable by no one else.
func TestTrustedBusctl(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "busctl")
	write(t, good, "#!/bin/sh\n")
	os.Chmod(good, 0o755)
	link := filepath.Join(t.TempDir(), "busctl")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		if got, err := trustedBusctl([]string{filepath.Join(dir, "missing"), link}); err != nil || got != good {
			t.Errorf("a root-owned busctl behind a symlink: %q, %v", got, err)
		}
		os.Chmod(good, 0o775)
		if _, err := trustedBusctl([]string{good}); err == nil || !strings.Contains(err.Error(), "is not root's alone") {
			t.Errorf("a group-writable busctl: %v", err)
		}
		os.Chmod(good, 0o755)
		os.Chmod(dir, 0o777)
		if _, err := trustedBusctl([]string{link}); err == nil || !strings.Contains(err.Error(), dir+" (for "+link+") is not root's alone") {
			t.Errorf("a busctl in a world-writable directory: %v", err)
		}
	} else if _, err := trustedBusctl([]string{good}); err == nil || !strings.Contains(err.Error(), "owner uid") {
		t.Errorf("a busctl the user owns: %v", err)
	}
	if _, err := trustedBusctl([]string{filepath.Join(dir, "missing")}); err == nil || !strings.Contains(err.Error(), "is not installed where the system keeps it") {
		t.Errorf("no busctl: %v", err)
	}
}
