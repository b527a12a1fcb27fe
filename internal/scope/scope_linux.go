package scope

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// BusctlPaths are where [Find] looks for busctl, in order: the system's
// own directories (Debian, Fedora, Arch; NixOS's system profile), never
// PATH, whose directories may include one a sandboxed agent could write
// (a project's bin/), since busctl runs outside the sandbox.
var BusctlPaths = []string{"/usr/bin/busctl", "/bin/busctl", "/run/current-system/sw/bin/busctl"}

// trustedBusctl is the first of paths that exists, resolved through
// symlinks, provided that it and its directory belong to root and no
// one else may write them; otherwise an error.
func trustedBusctl(paths []string) (string, error) {
	for _, p := range paths {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		for _, q := range []string{real, filepath.Dir(real)} {
			fi, err := os.Stat(q)
			if err != nil {
				return "", err
			}
			uid := -1
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				uid = int(st.Uid)
			}
			if uid != 0 || fi.Mode().Perm()&0o022 != 0 {
				return "", fmt.Errorf("%s (for %s) is not root's alone (owner uid %d, mode %v): busctl runs outside the sandbox, so it is not used", q, p, uid, fi.Mode().Perm())
			}
		}
		return real, nil
	}
	return "", fmt.Errorf("busctl (systemd's D-Bus client) is not installed where the system keeps it (%s)", strings.Join(paths, ", "))
}

// Find looks for the caller's user manager with the memory controller
// delegated to it: cgroup v2 mounted at [CgroupRoot], user@UID.service's
// cgroup there listing "memory", a root-owned busctl in the system's
// directories ([BusctlPaths]) and the user bus where systemd puts it,
// /run/user/UID/bus, a socket of the caller's. Neither
// $DBUS_SESSION_BUS_ADDRESS nor $XDG_RUNTIME_DIR is read, and busctl gets
// no environment of the caller's: a project's environment (direnv) could
// point them at a socket in the workdir, where an agent would answer
// instead of systemd. It only looks (no D-Bus call); the error says what
// is missing, as a phrase that can follow "no memory bound: ".
func Find() (*Manager, error) {
	uid := os.Getuid()
	return find(CgroupRoot, uid, fmt.Sprintf("/run/user/%d", uid))
}

func find(root string, uid int, runDir string) (*Manager, error) {
	if err := cgroupV2(root); err != nil {
		return nil, err
	}
	cg := managerCgroup(uid)
	ctl, err := os.ReadFile(filepath.Join(root, cg, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("no systemd user manager runs for uid %d (no %s%s)", uid, root, cg)
	}
	if !hasController(string(ctl), "memory") {
		return nil, fmt.Errorf("the memory controller is not delegated to your systemd user manager (%s%s/cgroup.controllers lists %q; Delegate= of user@.service)", root, cg, strings.TrimSpace(string(ctl)))
	}
	m := &Manager{root: root, pids: hasController(string(ctl), "pids")}
	bus := filepath.Join(runDir, "bus")
	fi, err := os.Lstat(bus)
	if err != nil || fi.Mode()&os.ModeSocket == 0 {
		return nil, fmt.Errorf("no user bus at %s to reach your systemd user manager (dbus-user-session or dbus-broker provides it)", bus)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != uid {
		return nil, fmt.Errorf("the user bus %s is not yours (uid %d)", bus, uid)
	}
	if m.busctl, err = trustedBusctl(BusctlPaths); err != nil {
		return nil, err
	}
	m.address = "unix:path=" + bus
	return m, nil
}

// cgroupV2 says why root is not a cgroup v2 mount, or nil.
func cgroupV2(root string) error {
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err != nil {
		return fmt.Errorf("cgroup v2 is not mounted at %s (this host uses cgroup v1 or a hybrid layout, whose memory controller no user manager is given)", root)
	}
	return nil
}

// Delegated checks what nono's --memory needs (nono creates its cgroup
// itself, in the delegated subtree it runs in): cgroup v2 at
// [CgroupRoot], and this process's cgroup under its user manager,
// user@UID.service (a terminal of a desktop session; a login over ssh
// runs in session-N.scope, outside it). The error says which is missing.
func Delegated() error {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return err
	}
	return delegated(CgroupRoot, string(b), os.Getuid())
}

func delegated(root, procCgroup string, uid int) error {
	if err := cgroupV2(root); err != nil {
		return err
	}
	path := unifiedPath(procCgroup)
	manager := fmt.Sprintf("/user@%d.service", uid)
	if !strings.Contains(path+"/", manager+"/") {
		return fmt.Errorf("this process's cgroup %s does not lie under your systemd user manager (user@%d.service), whose subtree nono's --memory needs (a login over ssh runs outside it; a terminal of a desktop session runs inside)", path, uid)
	}
	return nil
}

// Attach creates the scope unit holding pid with limits l (TasksMax only
// where [Manager.Tasks]), waits until pid is in it, and reads the limits
// back from its cgroup. pid must not have started anything yet: only pid
// itself is moved, and what it starts afterwards is born in the scope.
// On an error pid may still have been moved (into a scope with the limits,
// or one without): the caller ends it.
func (m *Manager) Attach(pid int, unit, description string, l Limits) (*Scope, error) {
	if !m.pids {
		l.TasksMax = 0
	}
	// memory.max holds whole pages.
	page := int64(os.Getpagesize())
	l.MemoryMax -= l.MemoryMax % page
	msg := m.call(CallArgs(unit, description, pid, l, true))
	if msg != "" && oomPolicyUnknown(msg) {
		msg = m.call(CallArgs(unit, description, pid, l, false))
	}
	if msg != "" {
		return nil, fmt.Errorf("your systemd user manager did not create the scope %s (%s): %s", unit, m.busctl, msg)
	}
	return m.settle(fmt.Sprintf("/proc/%d/cgroup", pid), pid, unit, l)
}

// call runs busctl with args; "" when it succeeded, else its message.
func (m *Manager) call(args []string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, m.busctl, append([]string{"--address=" + m.address}, args...)...)
	// None of the caller's environment (see Find); messages in English.
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return msg
		}
		return err.Error()
	}
	return ""
}

// settleTimeout bounds the wait for the manager to move the process.
var settleTimeout = 10 * time.Second

// settle waits until the process pid (whose /proc cgroup file is procFile)
// is in the scope unit, and checks that its cgroup holds the limits l.
func (m *Manager) settle(procFile string, pid int, unit string, l Limits) (*Scope, error) {
	// The call returns once the scope's start job is queued; the
	// manager moves pid when the job runs, at once.
	var path string
	for delay, waited := 50*time.Microsecond, time.Duration(0); ; {
		b, err := os.ReadFile(procFile)
		if err != nil {
			return nil, fmt.Errorf("the scope %s: the process %d is gone: %v", unit, pid, err)
		}
		path = unifiedPath(string(b))
		if strings.HasSuffix(path, "/"+unit) {
			break
		}
		if waited > settleTimeout {
			return nil, fmt.Errorf("your systemd user manager created the scope %s, but the process %d is still in %s after %v", unit, pid, path, waited)
		}
		time.Sleep(delay)
		waited += delay
		delay = min(2*delay, 5*time.Millisecond)
	}
	s := &Scope{Unit: unit, Cgroup: filepath.Join(m.root, path)}
	for _, c := range []struct {
		file string
		want int64
	}{{"memory.max", l.MemoryMax}, {"pids.max", l.TasksMax}} {
		if c.want <= 0 {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.Cgroup, c.file))
		if err != nil {
			return s, fmt.Errorf("the scope %s holds no limit %s (%v): the controller is not delegated to its cgroup", unit, c.file, err)
		}
		if got := strings.TrimSpace(string(b)); got != strconv.FormatInt(c.want, 10) {
			return s, fmt.Errorf("the scope %s: %s reads %s, not the %d asked for", unit, c.file, got, c.want)
		}
	}
	return s, nil
}
