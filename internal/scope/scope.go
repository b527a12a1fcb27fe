// Package scope puts a run's processes into a systemd user scope: a
// transient unit of the caller's own service manager (user@UID.service),
// whose cgroup the kernel bounds as one group (MemoryMax, TasksMax). No
// privilege is needed: the user manager owns its delegated part of the
// cgroup tree. The package owns finding that manager ([Find]), the call
// that creates the scope (through busctl, systemd's own D-Bus client:
// [Manager.Attach]), and the check that the limits took effect, read back
// from the scope's cgroup.
//
// The agent cannot leave the scope: moving a process to another cgroup
// takes write access to cgroup.procs files, and neither the namespace view
// (whose /sys is read-only) nor Landlock in the weaker sandbox grants any
// under /sys/fs/cgroup.
package scope

import (
	"fmt"
	"strconv"
	"strings"
)

// Limits are what a scope bounds; 0 leaves a limit unset.
type Limits struct {
	// MemoryMax is the memory the scope's processes may use together,
	// in bytes (memory.max; page cache and tmpfs pages they write
	// count): past it the kernel reclaims, then kills one of them.
	MemoryMax int64
	// TasksMax is how many processes and threads the scope may hold
	// together (pids.max); unlike RLIMIT_NPROC it counts the agent's
	// alone, not the user's whole session.
	TasksMax int64
}

// UnitName is the scope's unit name for a run of agent whose init (or
// first process) is pid: agent-sandbox-<agent>-<pid>.scope, with every
// character a unit name cannot hold replaced by '_'.
func UnitName(agent string, pid int) string {
	var b strings.Builder
	for i, r := range agent {
		if i >= 64 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		b.WriteString("agent")
	}
	return fmt.Sprintf("agent-sandbox-%s-%d.scope", b.String(), pid)
}

// CallArgs are busctl's arguments (after the program name and --address)
// for the user manager's StartTransientUnit: a scope named unit holding pid, with
// description, limits l, CollectMode inactive-or-failed (a scope whose
// process the kernel killed for memory is removed too, not kept as
// failed) and, with oomContinue, OOMPolicy continue: past MemoryMax the
// kernel kills the largest process (a runaway build) and the run goes on,
// where systemd's default for scopes (253 and later) would stop the whole
// scope, the agent's session with it. busctl reads each value from its
// own argument: nothing is parsed by a shell, and a description may hold
// any text.
func CallArgs(unit, description string, pid int, l Limits, oomContinue bool) []string {
	props := [][]string{
		{"Description", "s", description},
		{"PIDs", "au", "1", strconv.Itoa(pid)},
		{"CollectMode", "s", "inactive-or-failed"},
	}
	if oomContinue {
		props = append(props, []string{"OOMPolicy", "s", "continue"})
	}
	if l.MemoryMax > 0 {
		props = append(props, []string{"MemoryMax", "t", strconv.FormatInt(l.MemoryMax, 10)})
	}
	if l.TasksMax > 0 {
		props = append(props, []string{"TasksMax", "t", strconv.FormatInt(l.TasksMax, 10)})
	}
	args := []string{"--quiet", "--timeout=10", "call",
		"org.freedesktop.systemd1", "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
		"StartTransientUnit", "ssa(sv)a(sa(sv))", unit, "fail", strconv.Itoa(len(props))}
	for _, p := range props {
		args = append(args, p...)
	}
	return append(args, "0") // no auxiliary units
}

// CgroupRoot is where cgroup v2 is mounted on a systemd host.
const CgroupRoot = "/sys/fs/cgroup"

// Manager is the caller's systemd user manager, found by [Find], through
// which [Manager.Attach] creates scopes.
type Manager struct {
	busctl  string // absolute path
	address string // the user bus, for busctl --address
	root    string // the cgroup v2 mount
	pids    bool   // the pids controller is delegated to the manager too
}

// Tasks says whether the pids controller is delegated too: without it a
// scope's TasksMax is not enforced, and [Manager.Attach] leaves it out.
func (m *Manager) Tasks() bool { return m.pids }

// Scope is a scope [Manager.Attach] created.
type Scope struct {
	// Unit is its unit name.
	Unit string
	// Cgroup is its cgroup's directory.
	Cgroup string
}

// oomPolicyUnknown says whether busctl's error message is a user manager
// older than systemd 253 refusing OOMPolicy on a scope (which it does not
// have: the kernel's kill there never stops the scope).
func oomPolicyUnknown(msg string) bool {
	return strings.Contains(msg, "OOMPolicy")
}

// unifiedPath is the cgroup v2 path of a process from the text of its
// /proc/PID/cgroup: the "0::" line's path, "" when there is none.
func unifiedPath(procCgroup string) string {
	for _, line := range strings.Split(procCgroup, "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p
		}
	}
	return ""
}

// managerCgroup is the cgroup v2 path of uid's user manager, as systemd
// lays it out.
func managerCgroup(uid int) string {
	return fmt.Sprintf("/user.slice/user-%d.slice/user@%d.service", uid, uid)
}

// hasController says whether a cgroup.controllers text lists name.
func hasController(controllers, name string) bool {
	for _, c := range strings.Fields(controllers) {
		if c == name {
			return true
		}
	}
	return false
}
