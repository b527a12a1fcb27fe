package landlock

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	"github.com/agent-sandbox/agent-sandbox/internal/scope"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// MemoryMax is the bound of a run's memory as a whole in bytes:
// agent.toml memory_max, else three quarters of the machine's memory (what
// the agent's processes, their page cache and the private /tmp's pages
// may take together, leaving the rest to the user's session), else 0: no
// bound (memory_max = "none", or the memory cannot be read).
func MemoryMax(s spec.Spec) int64 {
	switch {
	case s.MemoryMax == spec.NoMemoryLimit:
		return 0
	case s.MemoryMax > 0:
		return s.MemoryMax
	}
	return memTotal() / 4 * 3
}

// findScope is scope.Find, once per process: --dry-run's lines, the
// plan's refusal and the launch ask it within milliseconds of each other.
var findScope = sync.OnceValues(scope.Find)

// runLimits are the limits of a run's systemd user scope.
func runLimits(s spec.Spec) scope.Limits {
	return scope.Limits{MemoryMax: MemoryMax(s), TasksMax: defaultMaxProcesses}
}

// errNoManager wraps scope.Find's error: no user manager can apply a
// bound here, which the default bound accepts (--dry-run says so).
type errNoManager struct{ err error }

func (e *errNoManager) Error() string { return e.err.Error() }

// attachScope puts the process pid, which has started nothing yet, into a
// systemd user scope with the run's limits (a variable for the tests).
var attachScope = func(s spec.Spec, pid int) error {
	m, err := findScope()
	if err != nil {
		return &errNoManager{err}
	}
	_, err = m.Attach(pid, scope.UnitName(s.AgentID, pid), fmt.Sprintf("agent-sandbox: %s in %s", s.AgentID, s.Workdir), runLimits(s))
	return err
}

// scopeOutcome is what a run does when its scope could not be had (err):
// memory_max set in agent.toml refuses the run (refusal); the default
// bound warns where a user manager was found and refused it (warning),
// and is silent where none is found, as --dry-run says.
func scopeOutcome(s spec.Spec, err error) (refusal error, warning string) {
	if err == nil {
		return nil, ""
	}
	if s.MemoryMax > 0 {
		return fmt.Errorf("%s: memory_max = %q cannot be applied: %v; remove the key (or set it to \"none\") to run without a memory bound", agentTomlOf(s), spec.FormatSize(s.MemoryMax), err), ""
	}
	var none *errNoManager
	if errors.As(err, &none) {
		return nil, ""
	}
	return nil, fmt.Sprintf("the run has no memory bound: %v (memory_max = \"none\" in agent.toml turns the bound off)", err)
}

// runScope is a run's systemd user scope for its init, asked for in the
// background (startScope) as soon as init is up. A nil *runScope asks
// for none (no memory bound).
type runScope struct {
	s    spec.Spec
	done chan struct{} // closed when the background attach is over
	pid  int           // the init it was for; 0: none was up
	err  error
}

// join waits for the background attach and returns its error when it
// was for pid; else (no early init) it attaches pid now.
func (r *runScope) join(pid int) error {
	<-r.done
	if r.pid == pid {
		return r.err
	}
	return attachScope(r.s, pid)
}

// wait waits for the background request, if any (nil: nothing).
func (r *runScope) wait() {
	if r != nil {
		<-r.done
	}
}

// check is Early.start's scoped: it joins the scope of init pid and
// applies scopeOutcome, warning on stderr.
func (r *runScope) check(stderr io.Writer) func(pid int) error {
	return func(pid int) error {
		if r == nil {
			return nil
		}
		refusal, warning := scopeOutcome(r.s, r.join(pid))
		if warning != "" {
			diag.Warnf(stderr, "%s", warning)
		}
		return refusal
	}
}

// memoryRefusal refuses a run whose agent.toml sets memory_max where no
// user manager can apply it (scope.Find). The default bound refuses
// nothing.
func memoryRefusal(s spec.Spec) string {
	if s.MemoryMax <= 0 {
		return ""
	}
	_, err := findScope()
	if err == nil {
		return ""
	}
	refusal, _ := scopeOutcome(s, err)
	return refusal.Error()
}

// holdEnv names, for the weaker sandbox's trampoline, the descriptor on
// which it waits for the parent's go-ahead (one byte) before it execs the
// agent: the parent first puts the trampoline's process into the run's
// scope, so that everything the agent starts is born in it.
const holdEnv = "AGENT_SANDBOX_TRAMPOLINE_HOLD"

// awaitScope is the trampoline's side of holdEnv: it waits for the
// go-ahead when env names a descriptor, and returns env without the
// variable; false when the parent closed the descriptor without one
// (it refused the run).
func awaitScope(env []string) ([]string, bool) {
	out := env[:0:0]
	ok := true
	for _, kv := range env {
		v, found := strings.CutPrefix(kv, holdEnv+"=")
		if !found {
			out = append(out, kv)
			continue
		}
		fd, err := strconv.Atoi(v)
		if err != nil || fd < 3 {
			ok = false
			continue
		}
		f := os.NewFile(uintptr(fd), "go-ahead")
		var b [1]byte
		n, _ := f.Read(b[:])
		f.Close()
		ok = ok && n == 1
	}
	return out, ok
}

// appliedMemoryMax is the memory bound a run gets: MemoryMax where a
// user manager can apply it (scope.Find), else 0.
func appliedMemoryMax(s spec.Spec) int64 {
	if _, err := findScope(); err != nil {
		return 0
	}
	return MemoryMax(s)
}

// limitComment is --dry-run's line on the run's resource limits.
func limitComment(s spec.Spec) string {
	line := fmt.Sprintf("resource limits: %d processes (the agent's, which also count toward your user's own limit), %d open files", defaultMaxProcesses, defaultMaxOpenFiles)
	max := MemoryMax(s)
	switch {
	case s.MemoryMax == spec.NoMemoryLimit:
		return line + `; no memory bound (memory_max = "none")`
	case max == 0:
		return line + "; no memory bound (this machine's memory could not be read; memory_max in agent.toml sets one)"
	}
	from := "three quarters of this machine's memory; memory_max in agent.toml sets it"
	if s.MemoryMax > 0 {
		from = "memory_max"
	}
	m, err := findScope()
	if err != nil {
		// With memory_max set, the run is refused (memoryRefusal).
		return line + fmt.Sprintf("; no memory bound: %v", err)
	}
	tasks := fmt.Sprintf(" and %d tasks", defaultMaxProcesses)
	if !m.Tasks() {
		tasks = " (no task bound: the pids controller is not delegated to your user manager)"
	}
	return line + fmt.Sprintf("; memory up to %s for the run as a whole (%s)%s, in a systemd user scope made at launch (agent-sandbox-%s-<pid>.scope)", spec.FormatSize(max), from, tasks, s.AgentID)
}
