// Package launch drives a run's lifecycle, whatever the backend
// (Lifecycle): it readies the host, has the ledger snapshot, starts the
// agent and passes signals on to it, stops passing them on once the agent
// has ended so that an interrupt during the checks after it is acted on,
// ends every process the agent left behind (internal/quiesce: on Linux
// agent-sandbox is their subreaper) before anything after the run looks
// at what it left, has the ledger audited (internal/guard), and turns the
// way the agent ended into agent-sandbox's exit status (the agent's own
// code, 128+N when a signal N killed it, 126/127 when it could not be
// executed).
package launch

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	"github.com/agent-sandbox/agent-sandbox/internal/guard"
	"github.com/agent-sandbox/agent-sandbox/internal/quiesce"
)

// Exit statuses of agent-sandbox itself.
const (
	ExitRefused     = 125 // refused or failed before starting the agent
	ExitNotExecable = 126 // the agent exists but could not be executed
	ExitNotFound    = 127 // the agent's command was not found
)

// Stdio are the streams handed to the agent.
type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
}

// Starter starts a prepared command; the default is (*exec.Cmd).Start. A
// sandbox backend supplies one that confines the child.
type Starter func(cmd *exec.Cmd) (wait func() error, err error)

// Started is an agent a Lifecycle's Start has started.
type Started struct {
	// Wait returns once the agent has ended and nothing of its sandbox
	// runs any more, with how the agent ended (ExitStatus reads it).
	Wait func() error
	// Reprotect, when not nil, binds a read-only entry of the ledger
	// again (the namespace view's; see guard.Reprotect).
	Reprotect guard.Reprotect
	// Masks are paths the sandbox hides (credential files, /etc
	// secrets): Reprotect hides one again when the host replaces it.
	Masks []string
	// Ended says that once Wait returns the started process (cmd's,
	// the view's init) has ended everything it ran and is on its way
	// out: its exit (the teardown of its namespaces) is not waited for,
	// and the quiesce step leaves it alone. Without it, every process
	// below agent-sandbox is killed after Wait returns, until none is
	// left (quiesce.Run.End).
	Ended bool
	// Close, when not nil, is called once the checks after the run are
	// done (the view's init then exits).
	Close func()
	// Keep, when not nil, holds a file open in the sandbox until it ends
	// (the view's init): the ledger's watch is handed to it
	// (guard.Share).
	Keep func(*os.File) error
	// Signal, when not nil, passes a signal sent to agent-sandbox on to
	// the agent (nono's supervisor keeps some signals for itself); nil
	// sends it to the started process.
	Signal func(os.Signal) error
	// OwnJobControl says that the sandbox keeps agent-sandbox's job state
	// the agent's itself (the view's init reports the agent's stops);
	// otherwise Execute does (jobControl), with Stopped, when not nil,
	// saying whether the agent is stopped now (nono's child), else the
	// started process's state.
	OwnJobControl bool
	Stopped       func() bool
}

// Lifecycle is one run, driven the same way whatever the backend:
//
//  1. Prepare readies the host (the view's placeholders of missing
//     protected paths);
//  2. the ledger is snapshot (guard.Begin), before anything of the agent
//     runs;
//  3. Start starts the agent, and the ledger is watched (guard.Watch)
//     while signals sent to agent-sandbox are passed on to the agent;
//  4. once the agent has ended, signal forwarding stops: an interrupt
//     (SIGINT, SIGTERM, SIGHUP) during the checks that follow stops the
//     slow ones (the scan says what it did not check) and makes the run
//     exit 128+N, and a second one ends agent-sandbox at once;
//  5. every process the agent left is ended, until none is left
//     (quiesce.Run.End: the view's init did it already): its
//     quiesce.Gone is what guard.End takes, so nothing after the run
//     reads or restores what the agent could write while a process of
//     the run still runs;
//  6. the ledger is audited and the placeholders released (guard.End),
//     then Done runs.
type Lifecycle struct {
	// Argv, Env and Dir are the agent's command line, environment and
	// working directory; Stdio its streams.
	Argv, Env []string
	Dir       string
	Stdio     Stdio
	// Prepare, when not nil, readies the host before the ledger is
	// snapshot; the release it returns undoes that after the audit and
	// returns the placeholders still as made.
	Prepare func() (release func() []string, err error)
	// Start starts cmd confined; nil starts it as it is.
	Start func(cmd *exec.Cmd) (Started, error)
	// Guard, when not nil, are the options of the run's ledger
	// protection (internal/guard); nil for an unsandboxed run.
	Guard *guard.Options
	// Done, when not nil, runs once the agent has ended and the audit
	// is done (the broker's report).
	Done func()
	// Remote, when not empty, is where the agent ran beyond this host's
	// processes and which outlives the run (sbx's microVM, kept between
	// runs): the quiesce step cannot end it, and the audit says so.
	Remote string
	// Session, when set, is called once the agent has started: it opens
	// the run's control channel (internal/session) and returns what
	// closes it, called as soon as the run's last process has ended,
	// before the after-run checks.
	Session func(run Started) (end func())
}

// callerUmask is the umask agent-sandbox was started with, once OwnUmask
// has set its own; -1 before.
var callerUmask = -1

// OwnUmask makes the files and directories agent-sandbox creates for a run
// (its state, placeholders, the run's TMPDIR) independent of a caller's
// umask that clears the owner's own bits (0177 would make a directory it
// creates untraversable): from now on the process's umask is the caller's
// without the owner's bits. The agent still gets the caller's umask
// (CallerUmask): a Lifecycle sets it back around the agent's start.
func OwnUmask() {
	old := syscall.Umask(0)
	callerUmask = old
	syscall.Umask(old &^ 0o700)
}

// CallerUmask is the umask agent-sandbox was started with (OwnUmask), or
// -1 when OwnUmask was not called.
func CallerUmask() int { return callerUmask }

// Run starts argv in dir with env through start (nil: unconfined), forwards
// signals until it exits, and returns the exit status: a Lifecycle with
// no ledger. Errors before the start are reported to stdio.Err with the
// agent-sandbox prefix.
func Run(argv, env []string, dir string, stdio Stdio, start Starter) int {
	l := Lifecycle{Argv: argv, Env: env, Dir: dir, Stdio: stdio}
	if start != nil {
		l.Start = func(cmd *exec.Cmd) (Started, error) {
			wait, err := start(cmd)
			return Started{Wait: wait}, err
		}
	}
	return l.Execute()
}

// Execute runs the lifecycle and returns the exit status: the agent's
// own, 128+N when a signal N killed it or interrupted the checks after
// it, 125/126/127 when it could not start.
func (l Lifecycle) Execute() int {
	cmd := exec.Command(l.Argv[0], l.Argv[1:]...)
	cmd.Env = l.Env
	cmd.Dir = l.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = l.Stdio.In, l.Stdio.Out, l.Stdio.Err
	start := l.starter()

	// The signals are registered before the agent starts: from then on a
	// signal sent to agent-sandbox is the agent's. A run that called
	// [RegisterSignals] while it planned finds them registered; otherwise
	// registering waits here for the runtime's signal thread (about
	// 0.2-0.4 ms on a small VM).
	r := pending.Swap(nil)
	if r == nil {
		r = registerSignals()
	}
	sigs := r.adopt()
	stopped := false
	stopSignals := func() {
		if !stopped {
			stopped = true
			// Unregistering waits for the signal thread: in the
			// background, off the way out.
			go signal.Stop(sigs)
		}
	}
	defer stopSignals()

	if err := quiesce.Begin(); err != nil {
		diag.Warnf(l.Stdio.Err, "%v", err)
	}
	// Whatever way Execute returns, nothing of the run outlives it.
	var run Started
	var tracked *quiesce.Run
	quiesced := false
	quiet := func() quiesce.Gone {
		quiesced = true
		pid := 0
		if cmd.Process != nil {
			pid = cmd.Process.Pid
		}
		if tracked == nil {
			tracked = quiesce.Track(pid, run.Ended)
		}
		gone := tracked.End()
		if l.Remote != "" {
			gone = gone.WithRemote(l.Remote)
		}
		return gone
	}
	defer func() {
		if !quiesced {
			quiet()
		}
	}()
	if l.Guard != nil {
		// A run in this workdir whose agent-sandbox was killed left no
		// final audit: it is done now, before anything is readied.
		guard.Recover(*l.Guard, l.Stdio.Err)
	}
	release := func() []string { return nil }
	if l.Prepare != nil {
		rel, err := l.Prepare()
		if err != nil {
			diag.Errorf(l.Stdio.Err, "%v", err)
			return ExitRefused
		}
		if rel != nil {
			release = rel
		}
	}
	var err error
	var g *guard.Guard
	if l.Guard != nil {
		if g, err = guard.Begin(*l.Guard); err != nil {
			release()
			diag.Errorf(l.Stdio.Err, "%v", err)
			return ExitRefused
		}
	}
	// The agent gets the caller's umask (inherited at its fork).
	if callerUmask >= 0 {
		own := syscall.Umask(callerUmask)
		run, err = start(cmd)
		syscall.Umask(own)
	} else {
		run, err = start(cmd)
	}
	if err != nil {
		code := startErrorStatus(err)
		diag.Errorf(l.Stdio.Err, "cannot start %s: %v", l.Argv[0], err)
		g.End(io.Discard, quiet(), nil, release)
		return code
	}
	if cmd.Process != nil {
		// Where the start moved the agent into a scope of its own, the
		// quiesce step kills that cgroup first (read now, while the
		// agent runs).
		tracked = quiesce.Track(cmd.Process.Pid, run.Ended)
	}
	if err := g.Share(run.Keep); err != nil {
		diag.Warnf(l.Stdio.Err, "handing the protection watch to the sandbox: %v (the run ends about 10 ms later)", err)
	}
	g.Watch(run.Reprotect, run.Masks...)
	endSession := func() {}
	if l.Session != nil {
		if end := l.Session(run); end != nil {
			endSession = end
		}
	}
	err = l.untilEnded(cmd, run, sigs)
	endSession()
	code := ExitStatus(err)

	// The agent has ended: from here a signal is agent-sandbox's own.
	stopSignals()
	interrupted, by, stopWatch := interrupts()
	defer stopWatch()
	// Nothing of the run may run any more when the audit starts: what
	// it left is ended first, and guard.End takes the proof.
	g.End(l.Stdio.Err, quiet(), interrupted, release)
	if run.Close != nil {
		run.Close()
	}
	if l.Done != nil {
		l.Done()
	}
	if s := by(); s != nil {
		if n, ok := s.(syscall.Signal); ok {
			return 128 + int(n)
		}
	}
	return code
}

// starter is l.Start, or, for an unconfined run, the command's own start.
func (l Lifecycle) starter() func(*exec.Cmd) (Started, error) {
	if l.Start != nil {
		return l.Start
	}
	return func(c *exec.Cmd) (Started, error) {
		if err := c.Start(); err != nil {
			return Started{}, err
		}
		return Started{Wait: c.Wait}, nil
	}
}

// untilEnded passes the signals arriving on sigs on to the agent of run
// (started as cmd) and keeps agent-sandbox's job state the agent's
// (jobControl, unless the sandbox does that itself) until the agent has
// ended, and returns run.Wait's error.
func (l Lifecycle) untilEnded(cmd *exec.Cmd, run Started, sigs <-chan os.Signal) error {
	// The terminal sends keyboard signals and window changes to the whole
	// foreground process group, agent included; forward those only when
	// agent-sandbox has no terminal. Everything else (kill, hang-up)
	// reaches agent-sandbox alone and is passed on.
	fromTTY := IsTerminal(l.Stdio.In)
	skip := func(s os.Signal) bool { return fromTTY && terminalSignal(s) }
	send := func(s os.Signal) bool {
		if cmd.Process == nil {
			return false
		}
		_ = cmd.Process.Signal(s)
		return true
	}
	if run.Signal != nil {
		send = func(s os.Signal) bool { return run.Signal(s) == nil }
	}
	if !run.OwnJobControl && cmd.Process != nil {
		jobsDone := make(chan struct{})
		defer close(jobsDone)
		go jobControl(cmd.Process.Pid, fromTTY, run.Stopped, func() { send(syscall.SIGCONT) }, jobsDone)
	}
	_, err := forward(sigs, send, skip, run.Wait)
	return err
}

// interrupts catches SIGINT, SIGTERM and SIGHUP while the checks after a
// run go on: the first closes the returned channel (the checks stop what
// can wait), a second ends agent-sandbox by its default action. by says
// which signal came first (nil: none); stop ends the catching.
func interrupts() (interrupted <-chan struct{}, by func() os.Signal, stop func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, interruptSignals...)
	done := make(chan struct{})
	closed := make(chan struct{})
	var first atomic.Value
	go func() {
		select {
		case s := <-ch:
			first.Store(s)
			close(closed)
		case <-done:
			return
		}
		select {
		case s := <-ch:
			dieBy(s)
		case <-done:
		}
	}()
	return closed, func() os.Signal {
			if s, ok := first.Load().(os.Signal); ok {
				return s
			}
			return nil
		}, func() {
			close(done)
			go signal.Stop(ch)
		}
}

// Forward waits for wait to return while passing each signal arriving on
// sigs (registered with signal.Notify by the caller, before the start) to
// the process target returns, unless skip (nil: none) holds for it. It
// returns the last signal passed on (nil if none) and wait's error.
func Forward(sigs <-chan os.Signal, target func() *os.Process, skip func(os.Signal) bool, wait func() error) (os.Signal, error) {
	return forward(sigs, func(s os.Signal) bool {
		if p := target(); p != nil {
			_ = p.Signal(s)
			return true
		}
		return false
	}, skip, wait)
}

// forward is Forward with send passing a signal on (false: nothing to
// pass it on to).
func forward(sigs <-chan os.Signal, send func(os.Signal) bool, skip func(os.Signal) bool, wait func() error) (os.Signal, error) {
	done := make(chan error, 1)
	go func() { done <- wait() }()
	var last os.Signal
	for {
		select {
		case s := <-sigs:
			if skip != nil && skip(s) {
				continue
			}
			if send(s) {
				last = s
			}
		case err := <-done:
			return last, err
		}
	}
}

// pending is the registration [RegisterSignals] made for the next Run.
var pending atomic.Pointer[registration]

// registration is the forwarded signals registered with the runtime ahead
// of Run. Until Run adopts it, a signal ends agent-sandbox the way it would
// have without the registration.
type registration struct {
	sigs  chan os.Signal
	take  chan struct{} // closed by adopt
	taken chan struct{} // closed when the signals are Run's
}

// adopt makes the registration Run's once the runtime has it, and returns
// its channel. It is called once.
func (r *registration) adopt() chan os.Signal {
	close(r.take)
	<-r.taken
	return r.sigs
}

// RegisterSignals registers, in the background, the signals the next [Run]
// passes on to the agent, so that the registration's wait for the Go
// runtime's signal thread overlaps the run's planning instead of delaying
// the agent's start. Until that Run starts the agent, a signal keeps the
// effect it had without the registration: a SIGWINCH is ignored and any
// other of them ends agent-sandbox by that signal (and with it a sandbox's
// init, which dies with its parent). Nothing else may register these
// signals between the call and Run (the sbx backend's setup commands
// do: it does not call this).
func RegisterSignals() { pending.Store(registerSignals()) }

func registerSignals() *registration {
	r := &registration{sigs: make(chan os.Signal, 8), take: make(chan struct{}), taken: make(chan struct{})}
	Background(func() {
		signal.Notify(r.sigs, forwarded...)
		for {
			select {
			case s := <-r.sigs:
				if defaultIgnored(s) {
					continue
				}
				dieBy(s)
			case <-r.take:
				close(r.taken)
				return
			}
		}
	})
	return r
}

// dieBy ends agent-sandbox by s, as s's default action would have.
func dieBy(s os.Signal) {
	signal.Reset(s)
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Signal(s)
	}
	time.Sleep(time.Second)
	code := ExitRefused
	if n, ok := s.(syscall.Signal); ok {
		code = 128 + int(n)
	}
	os.Exit(code)
}

// WarmUp does in the background the Go runtime's once-per-process work of
// a first process start, so that the first real start (a sandbox's init,
// or the agent) does not wait for it: on Linux, os probes the kernel's
// pidfd support once, and that probe forks and reaps a child of its own.
// A run that will start something calls it as early as it knows that.
func WarmUp() {
	Background(func() {
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			_ = p.Release()
		}
	})
}

// Background runs f in a new goroutine that starts now, beside the
// caller's own work. A plain go statement queues the new goroutine on the
// caller's processor, behind the caller, and while the caller computes
// (planning a run) the runtime moved it to an idle processor 0.1 to 3 ms
// later on the development VM, which undid the overlap it was started for.
// Yielding once runs f at once, on this processor, while the caller
// resumes on another one (an idle processor takes it); when f blocks in
// a system call (a fork, a read), the caller has this one back.
func Background(f func()) {
	go f()
	runtime.Gosched()
}

// ExitStatus converts the result of Wait into an exit status.
func ExitStatus(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	// Other starters (the namespace view) report the agent's wait status,
	// or the exit status of a failure before it ran.
	var ws interface{ WaitStatus() syscall.WaitStatus }
	if errors.As(err, &ws) {
		if st := ws.WaitStatus(); st.Signaled() {
			return 128 + int(st.Signal())
		}
		return ws.WaitStatus().ExitStatus()
	}
	var code interface{ ExitCode() int }
	if errors.As(err, &code) {
		return code.ExitCode()
	}
	return ExitRefused
}

// SetupError marks a Starter's failure to set the sandbox up (as opposed to
// a failure to execute the agent): it always means exit status 125.
type SetupError struct{ Err error }

func (e *SetupError) Error() string { return e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

func startErrorStatus(err error) int {
	var se *SetupError
	switch {
	case errors.As(err, &se):
		return ExitRefused
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return ExitNotFound
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOEXEC), errors.Is(err, syscall.EISDIR):
		return ExitNotExecable
	}
	return ExitRefused
}

// IsTerminal reports whether a stream (an io.Reader or io.Writer) is a
// terminal: a file the terminal ioctls answer on. Any character device
// is not one (/dev/null is a character device: stdin redirected from it
// once counted as a terminal, and the keyboard's signals sent to
// agent-sandbox were then not passed on).
func IsTerminal(stream any) bool {
	f, ok := stream.(*os.File)
	if !ok || f == nil {
		return false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	tty := false
	_ = rc.Control(func(fd uintptr) {
		_, err := unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ)
		tty = err == nil
	})
	return tty
}
