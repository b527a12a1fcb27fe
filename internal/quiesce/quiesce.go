// Package quiesce is the step between a run's agent and every check after
// it: it ends whatever the run left running, until nothing is left, and
// proves it with a value (Gone) that only this step makes. The guard's
// final audit (guard.End) takes a Gone, so that no host-side work that
// reads or restores what the agent could write starts while a process of
// the run could still write it: a process the agent left behind that
// waits on inotify over .git would otherwise undo the restore within
// microseconds of it.
//
// How each engine meets it: the namespace view's init reports the agent's
// status only once nothing else of its PID namespace runs (End's done);
// the weaker sandbox and nono are swept here. agent-sandbox is the
// subreaper of every process the run starts (Begin), so that a process
// the agent detaches (setsid, nohup, a double fork) stays below it; End
// kills the run's cgroup where the run has a scope of its own
// (cgroup.kill), then every descendant it finds, round after round, until
// a round finds none. A process can fork between the listing and the
// kill, but it has a parent that the round kills, so it is below
// agent-sandbox again at the next round. Should processes keep appearing
// past a generous bound, End says so (Gone.Proven is false) and the audit
// says loudly that it is not final.
package quiesce

import (
	"errors"
	"fmt"
	"time"
)

// errUnsupported is End's error on a system with no subreaper.
var errUnsupported = errors.New("off Linux agent-sandbox cannot find the processes the agent detached (no subreaper): one may still run and change what the audit checked")

// Bound is how long End keeps ending processes before it gives up.
const Bound = 10 * time.Second

// Gone is End's result: whether nothing of the run is left running. The
// zero value proves nothing.
type Gone struct {
	proven bool
	// left is how many processes were still there at the bound.
	left int
	// why says what could not be ended, when not proven.
	why string
	// remote, when not empty, says where the agent may still run that
	// no sweep on this host reaches (sbx's guest).
	remote string
	// unsupported says the system has no way to find what the agent
	// detached (no subreaper off Linux): not proven, on every run.
	unsupported bool
}

// Unsupported says that this system cannot prove any run gone (off
// Linux): the audit says so once per run, without treating the run as
// unfinished.
func (g Gone) Unsupported() bool { return g.unsupported }

// Proven says that nothing the run started runs any more on this host.
func (g Gone) Proven() bool { return g.proven }

// Problem says why the run could not be proven gone ("" when it is).
func (g Gone) Problem() string {
	if g.proven {
		return ""
	}
	if g.why != "" {
		return g.why
	}
	return "the run's processes were not ended before the checks after it"
}

// Remote says where the agent may still run beyond this host's processes
// ("" for nowhere).
func (g Gone) Remote() string { return g.remote }

// WithRemote is g noting that the agent ran in place (a VM kept between
// runs) that the sweep does not reach.
func (g Gone) WithRemote(place string) Gone {
	g.remote = place
	return g
}

// Run is one run's processes as End ends them.
type Run struct {
	// done, when not 0, is a child that has already ended everything it
	// ran (the view's init): not killed, not waited for.
	done int
	// cgroup is the run's own cgroup directory (a scope), "" for none.
	cgroup string
}

// Track starts following the run whose first process is pid; ended says
// pid has ended all it ran once the run's wait returned (the view's
// init).
func Track(pid int, ended bool) *Run {
	r := &Run{}
	if ended {
		r.done = pid
		return r
	}
	if pid > 0 {
		r.cgroup = ownCgroup(pid)
	}
	return r
}

// End ends every process of the run still running, within Bound, and
// says whether it could. A nil Run ends what is below this process.
func (r *Run) End() Gone {
	if r == nil {
		r = &Run{}
	}
	left, err := r.end(time.Now().Add(Bound))
	if err != nil {
		return Gone{why: err.Error(), unsupported: errors.Is(err, errUnsupported)}
	}
	if left > 0 {
		return Gone{left: left, why: fmt.Sprintf("%d process(es) of the run were still running after %v of killing them (new ones kept appearing)", left, Bound)}
	}
	return Gone{proven: true}
}
