//go:build linux

package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/diag"
)

// Modes of a run's checkpoint (--checkpoint, agent.toml's checkpoint).
const (
	ModeOn       = "on"       // taken; a failure warns
	ModeOff      = "off"      // not taken
	ModeRequired = "required" // taken; a failure stops the run (125)
)

// lockPath is the workdir's live-run lock: held shared by every run in
// the workdir for its whole run, exclusively by an undo. It sits beside
// the store, not in it, so that a store of another version still has it.
func lockPath(stateRoot, workdir string) string { return StoreDir(stateRoot, workdir) + ".lock" }

func openLock(stateRoot, workdir string) (*os.File, error) {
	repairModes(stateRoot, StoreDir(stateRoot, workdir), false)
	if err := os.MkdirAll(filepath.Join(stateRoot, "checkpoints"), 0o700); err != nil {
		return nil, err
	}
	return os.OpenFile(lockPath(stateRoot, workdir), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
}

// Active is a run in progress: its lock and its checkpoint.
type Active struct {
	lock   *os.File
	store  *Store
	run    *Run
	before *Manifest
	warn   io.Writer
}

// BeginOptions are what Begin needs of the run.
type BeginOptions struct {
	StateRoot, Workdir string
	// Command names the run (the agent, or the command of run --).
	Command  string
	Mode     string
	Settings Settings
	// Warn receives the warnings (a checkpoint that failed in mode on,
	// what was pruned).
	Warn io.Writer
	// Verbose also names what the checkpoint left out when that changed
	// (`agent-sandbox diff` and the manifest always name it).
	Verbose bool
}

// Begin marks a run live in the workdir (undo refuses while it is) and,
// unless o.Mode is off, takes the checkpoint before it. It is called
// before anything of the run touches the workdir (before the
// placeholders of its protected paths). An error is returned only when
// the run must not start: a checkpoint that failed in mode required.
func Begin(o BeginOptions) (*Active, error) {
	a := &Active{warn: o.Warn}
	lock, err := openLock(o.StateRoot, o.Workdir)
	if err == nil {
		if err = unix.Flock(int(lock.Fd()), unix.LOCK_SH); err != nil {
			lock.Close()
		} else {
			a.lock = lock
		}
	}
	if err != nil && o.Mode == ModeRequired {
		return nil, fmt.Errorf("checkpoint (--checkpoint=required): the live-run lock: %v; the agent was not started", err)
	}
	if o.Mode == ModeOff {
		return a, nil
	}
	fail := func(err error) (*Active, error) {
		if o.Mode == ModeRequired {
			a.release()
			return nil, fmt.Errorf("%v; the agent was not started (--checkpoint=required)", err)
		}
		diag.Warnf(o.Warn, "%v; the run goes on without a checkpoint (no undo for it)", err)
		return a, nil
	}
	s, err := Open(o.StateRoot, o.Workdir, o.Settings)
	if err != nil {
		return fail(err)
	}
	head, herr := s.head()
	first := herr != nil // the store's first checkpoint
	m, err := s.Take(s.beforeBase(head.ID, o.Warn))
	if err != nil {
		return fail(err)
	}
	a.store, a.before = s, m
	if m.Note != "" && (first || o.Verbose) {
		diag.Notef(o.Warn, "checkpoint: %s", m.Note)
	}
	a.run = &Run{ID: NewID(time.Now()), Kind: "run", Command: o.Command, Before: m.ID, Start: time.Now().UTC(), Exit: -1}
	if err := s.SaveRun(a.run); err != nil {
		a.store = nil
		return fail(fmt.Errorf("checkpoint store %s: %v", s.Dir, err))
	}
	if n := len(m.Skipped); o.Verbose && m.NewSkips() {
		diag.Notef(o.Warn, "checkpoint %s left out %d path(s): %s", m.ID, n, skipList(m.Skipped, 3))
	}
	// What could not be read (a directory an earlier run made unreadable
	// with chmod 000) is not in the checkpoint: what this run does there
	// cannot be undone. Said on every run, verbose or not.
	var unreadable []Skip
	for _, k := range m.Skipped {
		if strings.HasPrefix(k.Why, "unreadable") {
			unreadable = append(unreadable, k)
		}
	}
	if len(unreadable) > 0 {
		diag.Warnf(o.Warn, "checkpoint %s could not read %s: what the run changes there cannot be undone (make it readable, e.g. chmod u+rwx, before the run)", m.ID, skipList(unreadable, 3))
	}
	return a, nil
}

func skipList(sk []Skip, max int) string {
	s := ""
	for i, k := range sortedSkips(sk) {
		if i == max {
			return s + fmt.Sprintf(", and %d more (`agent-sandbox runs` lists them)", len(sk)-max)
		}
		if i > 0 {
			s += ", "
		}
		s += Quote(k.Path) + " (" + k.Why + ")"
	}
	return s
}

// End records the run once its agent is gone: the checkpoint after it,
// the exit status and a one-line summary of the change; then it prunes
// old checkpoints and lets undo run again.
func (a *Active) End(exit int) {
	if a == nil {
		return
	}
	defer a.release()
	if a.store == nil {
		return
	}
	a.run.End, a.run.Exit = time.Now().UTC(), exit
	repairModes(a.store.StateRoot, a.store.Dir, true) // the agent may have chmodded it
	ownerAccess(a.store.Workdir)
	after, err := a.store.Take(a.before)
	if err != nil {
		diag.Warnf(a.warn, "checkpoint after the run: %v (`agent-sandbox undo` still restores the one before)", err)
		a.run.Summary = "unknown (no checkpoint after the run)"
	} else {
		a.run.After = after.ID
		a.run.Summary = Summary(Diff(a.before, after))
		if n := len(newSkips(a.before, after)); n > 0 {
			a.run.Summary += fmt.Sprintf("; %d path(s) left out after the run, not compared (`agent-sandbox diff` names them)", n)
		}
	}
	if err := a.store.SaveRun(a.run); err != nil {
		diag.Warnf(a.warn, "checkpoint store %s: recording the run: %v", a.store.Dir, err)
	}
	for _, line := range a.store.Prune(time.Now()) {
		diag.Notef(a.warn, "%s", line)
	}
}

func (a *Active) release() {
	if a.lock != nil {
		a.lock.Close()
		a.lock = nil
	}
}

// ErrLive is matched (errors.Is) when a run is live in the workdir.
var ErrLive = errors.New("a run is live in this workdir")

// lockExclusive takes the workdir's live-run lock exclusively, failing at
// once when a run holds it.
func lockExclusive(stateRoot, workdir string) (*os.File, error) {
	lock, err := openLock(stateRoot, workdir)
	if err != nil {
		return nil, fmt.Errorf("the live-run lock: %v", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (%s): undo refuses until it ends", ErrLive, workdir)
		}
		return nil, fmt.Errorf("the live-run lock: %v", err)
	}
	return lock, nil
}
