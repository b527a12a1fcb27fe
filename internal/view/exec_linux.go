//go:build linux

package view

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/landlock"
	sessionpkg "github.com/agent-sandbox/agent-sandbox/internal/session"
)

// A session's further processes (agent-sandbox exec). A multithreaded Go
// process cannot enter a user namespace (setns), so the sandbox's init
// starts them, as it started the agent: on a thread of its own that takes
// the agent's confinement (the same Landlock ruleset, seccomp filter,
// capabilities dropped, no_new_privs) and forks the command, with the
// agent's environment and working directory and the caller's standard
// streams (passed over the control socket). Nothing of the request can
// widen the session: it carries a command line and three descriptors,
// nothing else.
//
// The session lasts while the agent or one of these runs: init reports
// the agent's status (and the parent runs its after-run checks) once the
// last of them has ended.

// session is init's record of the processes that keep the session alive.
var session struct {
	sync.Mutex
	rules *landlock.Ruleset
	c     Config
	// live are the exec'd processes still running.
	live map[int]bool
	// agentDone is set when the agent has exited, with its status.
	agentDone   bool
	agentStatus unix.WaitStatus
	// over is set once the session is ending: no more execs.
	over bool
	// held keeps a session with no agent (Config.NoAgent) alive with no
	// exec'd process, until it is asked to end (endRequest).
	held bool
	// direct are the exec'd processes init started for a caller of its
	// own exec socket (serveDirect): their status goes to that caller.
	direct map[int]*directProc
}

// execStarted tells the parent that init started pid for a caller of its
// exec socket (the parent counts it as the session's, as its own execs).
var execStarted = func(pid int) {}

// execEnded tells the parent that the exec'd process pid ended with ws
// (set once the status channel is the agent's).
var execEnded = func(pid int, ws unix.WaitStatus) {}

// keepRules keeps the agent's ruleset for the session's further
// processes, instead of closing it once the agent started.
func keepRules(c Config, rules *landlock.Ruleset) {
	session.Lock()
	defer session.Unlock()
	session.rules, session.c = rules, c
	if session.live == nil {
		session.live = map[int]bool{}
	}
	// exec -t's pty instance: granted to the commands started from now
	// on, after the agent's domain was made (it stays out of it).
	if fd, err := unix.Open(ExecPts, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		_ = rules.AddReadWriteFd(fd)
		unix.Close(fd)
	}
}

// execExited records the end of a child that is not the agent.
func execExited(pid int, ws unix.WaitStatus) {
	if ws.Stopped() || ws.Continued() {
		return
	}
	session.Lock()
	ok := session.live[pid]
	delete(session.live, pid)
	d := session.direct[pid]
	delete(session.direct, pid)
	session.Unlock()
	if ok {
		execEnded(pid, ws)
	}
	if d != nil {
		d.end(ws)
	}
}

// agentExited records the agent's end; it reports whether the session is
// over (no exec'd process runs).
func agentExited(ws unix.WaitStatus) bool {
	session.Lock()
	defer session.Unlock()
	session.agentDone, session.agentStatus = true, ws
	over := len(session.live) == 0
	session.over = session.over || over // an end asked (endSessionAfter) takes no more execs
	return over
}

// sessionOver reports, after the agent's end, whether its last exec'd
// process has ended too, and the agent's status.
func sessionOver() (unix.WaitStatus, bool) {
	session.Lock()
	defer session.Unlock()
	if !session.agentDone || session.held || len(session.live) > 0 {
		return 0, false
	}
	session.over = true
	return session.agentStatus, true
}

// startExec starts argv with stdio fds (three) in the sandbox, confined
// as the agent, and returns its pid. With ctty, fds[0] is a pty's slave
// that becomes the command's controlling terminal.
func startExec(argv []string, fds []int, ctty bool) (int, error) {
	return startExecFor(argv, fds, ctty, nil)
}

// startExecFor is startExec; a non-nil d gets the process's status
// (a caller of init's own exec socket).
func startExecFor(argv []string, fds []int, ctty bool, d *directProc) (int, error) {
	session.Lock()
	defer session.Unlock() // held over the fork: reap records the pid first
	if session.rules == nil || session.over {
		return 0, errors.New("the session is ending")
	}
	if len(argv) == 0 || len(fds) != 3 {
		return 0, errors.New("exec needs a command and three descriptors")
	}
	if !ctty && session.rules.None() {
		if err := reopenableStreams(fds); err != nil {
			return 0, err
		}
	}
	c := session.c
	type result struct {
		pid      int
		err      error
		listener int
	}
	done := make(chan result, 1)
	go func() {
		// As agentThread: the thread that took the confinement ends with
		// its goroutine (returns still locked).
		runtime.LockOSThread()
		e, err := session.rules.ConfineThread(c.Seccomp)
		if err != nil {
			done <- result{err: fmt.Errorf("confining the command: %w", err)}
			return
		}
		path, err := lookPath(argv[0], c.Env)
		if err != nil {
			done <- result{err: err, listener: e.Listener}
			return
		}
		pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
			Dir:   c.Workdir,
			Env:   c.Env,
			Files: []uintptr{uintptr(fds[0]), uintptr(fds[1]), uintptr(fds[2])},
			// A session of its own: the agent's terminal's signals
			// do not reach it; the caller's come through exec (or,
			// with ctty, through its own terminal: setsid, then
			// TIOCSCTTY on its fd 0).
			Sys: &syscall.SysProcAttr{Setsid: true, Setctty: ctty, Ctty: 0},
		})
		done <- result{pid, err, e.Listener}
	}()
	r := <-done
	if r.listener > 0 {
		if r.err != nil {
			unix.Close(r.listener)
		} else {
			go watchConnects(c, r.listener)
		}
	}
	if r.err != nil {
		return 0, fmt.Errorf("starting %s in the sandbox: %w", argv[0], r.err)
	}
	session.live[r.pid] = true
	if d != nil {
		d.pid = r.pid
		if session.direct == nil {
			session.direct = map[int]*directProc{}
		}
		session.direct[r.pid] = d
		execStarted(r.pid) // before its end can be reported: the lock is held
	}
	return r.pid, nil
}

// reopenableStreams refuses, in a session whose view runs without Landlock
// (a kernel without it), a caller's standard stream that the agent could
// open again through /proc/PID/fd/N of the command: they run as the same
// uid, the command is dumpable, and only Landlock's domains keep one
// from the other's descriptors. Such a reopen is a new open of the file
// itself (a file given as read-only input opened for writing, the
// caller's terminal read after exec returned). Pipes and sockets (which
// /proc does not open again) and /dev/null carry only what the command
// reads and writes anyway.
func reopenableStreams(fds []int) error {
	names := [3]string{"standard input", "standard output", "standard error"}
	for k, fd := range fds {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("exec: your %s: %w", names[k], err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFIFO, unix.S_IFSOCK:
			continue
		case unix.S_IFCHR:
			if unix.Major(st.Rdev) == 1 && unix.Minor(st.Rdev) == 3 { // /dev/null
				continue
			}
		}
		return fmt.Errorf("exec: this session's view runs without Landlock (the kernel has none), so its agent could open your %s (a file or terminal, not a pipe) again through /proc and read or write it: pass a pipe (cat FILE | agent-sandbox exec ..., agent-sandbox exec ... | cat > FILE), </dev/null, or use -t", names[k])
	}
	return nil
}

// lookPath finds file on the PATH of env, in the view (confined: only what
// the agent may see is found).
func lookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	path := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			path = kv[5:]
		}
	}
	for _, dir := range strings.Split(path, ":") {
		if dir == "" {
			dir = "."
		}
		p := dir + "/" + file
		if unix.Access(p, unix.X_OK) == nil {
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("%s: %w", file, unix.ENOENT)
}

// execRequest serves one "X" request of the control socket: a JSON
// command line and three descriptors; the answer is "x" and the pid, or
// "!" and why not.
func execRequest(body []byte, fds []int) {
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	var argv []string
	if err := json.Unmarshal(body, &argv); err != nil {
		_, _ = unix.Write(controlFd, []byte("!bad request: "+err.Error()))
		return
	}
	pid, err := startExec(argv, fds, false)
	if err != nil {
		_, _ = unix.Write(controlFd, []byte("!"+err.Error()))
		return
	}
	_, _ = unix.Write(controlFd, []byte("x"+strconv.Itoa(pid)))
}

// ttyRequest is the body of a "Y" request.
type ttyRequest struct {
	Argv []string `json:"argv"`
	Rows uint16   `json:"rows"`
	Cols uint16   `json:"cols"`
}

// execTTYRequest serves one "Y" request of the control socket: a command
// line and a window size (JSON, no descriptors). The command gets a
// terminal of its own, a pty of the sandbox's devpts instance (so that
// ttyname finds it in the view), as its standard streams and controlling
// terminal; the answer is "x" and the pid with the pty's master, which
// the caller relays to the user's terminal, or "!" and why not. The
// user's terminal never enters the sandbox: only the master leaves it.
func execTTYRequest(body []byte, fds []int) {
	for _, fd := range fds {
		unix.Close(fd) // a terminal request carries none
	}
	var r ttyRequest
	if err := json.Unmarshal(body, &r); err != nil {
		_, _ = unix.Write(controlFd, []byte("!bad request: "+err.Error()))
		return
	}
	pid, master, err := startTTY(r.Argv, r.Rows, r.Cols, nil)
	if err != nil {
		_, _ = unix.Write(controlFd, []byte("!"+err.Error()))
		return
	}
	_ = unix.Sendmsg(controlFd, []byte("x"+strconv.Itoa(pid)), unix.UnixRights(master), nil, 0)
	unix.Close(master)
}

// startTTY starts argv on a pty of the sandbox's, rows x cols, and
// returns its pid and the pty's master.
func startTTY(argv []string, rows, cols uint16, d *directProc) (int, int, error) {
	master, slave, err := openPty(rows, cols)
	if err != nil {
		return 0, -1, fmt.Errorf("a terminal for the command: %w", err)
	}
	pid, err := startExecFor(argv, []int{slave, slave, slave}, true, d)
	unix.Close(slave)
	if err != nil {
		unix.Close(master)
		return 0, -1, err
	}
	return pid, master, nil
}

// openPty opens a pty pair in the devpts instance of exec's terminals
// (ExecPts in init's root, the view's; not the agent's /dev/pts, whose
// slaves the agent could open), sized rows x cols.
func openPty(rows, cols uint16) (master, slave int, err error) {
	master, err = unix.Open(ExecPts+"/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, -1, err
	}
	fail := func(e error) (int, int, error) {
		unix.Close(master)
		return -1, -1, e
	}
	if err := unix.IoctlSetPointerInt(master, unix.TIOCSPTLCK, 0); err != nil {
		return fail(err)
	}
	if rows > 0 && cols > 0 {
		if err := unix.IoctlSetWinsize(master, unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
			return fail(err)
		}
	}
	// The slave by its master (TIOCGPTPEER, Linux 4.13): no path to
	// race on.
	fd, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(master), unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	if errno != 0 {
		return fail(fmt.Errorf("opening the pty's slave: %w", errno))
	}
	return master, int(fd), nil
}

// signalRequest serves a "Z" request: "Z<pid> <signal>" for an exec'd
// process (and only those).
func signalRequest(body string) {
	var pid, sig int
	if _, err := fmt.Sscanf(body, "%d %d", &pid, &sig); err != nil || sig <= 0 || sig > 64 {
		_, _ = unix.Write(controlFd, []byte("!bad request"))
		return
	}
	session.Lock()
	ok := session.live[pid]
	if ok {
		_ = unix.Kill(pid, unix.Signal(sig))
	}
	session.Unlock()
	if !ok {
		_, _ = unix.Write(controlFd, []byte("!no such process"))
		return
	}
	_, _ = unix.Write(controlFd, []byte("z"))
}

// ExecTTY starts argv in the running sandbox, confined as the agent, with
// a terminal of its own (a pty of the sandbox's, rows x cols) as its
// standard streams and controlling terminal; it returns the pty's master,
// which the caller relays to the user's terminal.
func (p *Process) ExecTTY(argv []string, rows, cols uint16) (*Exec, *os.File, error) {
	b, err := json.Marshal(ttyRequest{Argv: argv, Rows: rows, Cols: cols})
	if err != nil {
		return nil, nil, err
	}
	msg, f, err := p.request(append([]byte("Y"), b...))
	if err != nil {
		return nil, nil, fmt.Errorf("view: asking the sandbox to start %s: %w", argv[0], err)
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(msg, "x"))
	if !strings.HasPrefix(msg, "x") || err != nil || f == nil {
		if f != nil {
			f.Close()
		}
		return nil, nil, errors.New(strings.TrimPrefix(msg, "!"))
	}
	return &Exec{p: p, pid: pid, ch: p.execChan(pid)}, f, nil
}

// directProc is a process init started for a caller of its own exec
// socket: its status goes to that caller (session.Proc).
type directProc struct {
	pid  int
	code chan int
	// reported is closed once the status has been written to the
	// caller: the end of the session waits for it (bounded), so that
	// the last command's caller gets its status before init exits.
	reported chan struct{}
}

func newDirect() *directProc {
	return &directProc{code: make(chan int, 1), reported: make(chan struct{})}
}

// Pid is the process's pid in the sandbox.
func (d *directProc) Pid() int { return d.pid }

// Signal sends sig to the process while it runs (only then: its pid
// could be another's after it was reaped).
func (d *directProc) Signal(sig int) error {
	session.Lock()
	defer session.Unlock()
	if !session.live[d.pid] {
		return errors.New("no such process")
	}
	return unix.Kill(d.pid, unix.Signal(sig))
}

// Wait returns its exit code (128+N when killed by signal N).
func (d *directProc) Wait() int { return <-d.code }

// Reported is told that the status was written to the caller.
func (d *directProc) Reported() { close(d.reported) }

// directReportWait bounds how long the reaper waits for a caller's status
// to be written (a socket write with room: at once).
const directReportWait = 2 * time.Second

// end delivers the process's end (from the reaper) and waits until its
// caller was told.
func (d *directProc) end(ws unix.WaitStatus) {
	code := ws.ExitStatus()
	if ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	d.code <- code
	select {
	case <-d.reported:
	case <-time.After(directReportWait):
	}
}

// execListenRequest serves an "A" request: the session's exec socket
// (listening, bound by the parent in the session's directory, outside the
// view) and, as the body, the session's token. Init serves it itself:
// an exec then goes from its caller to init, without the parent in
// between; the parent hears of each command's start and end on the
// report stream, as of its own.
func execListenRequest(token string, fds []int) {
	if len(fds) != 1 || token == "" {
		for _, fd := range fds {
			unix.Close(fd)
		}
		_, _ = unix.Write(controlFd, []byte("!bad request"))
		return
	}
	f := os.NewFile(uintptr(fds[0]), "exec-socket")
	l, err := net.FileListener(f)
	f.Close()
	ul, ok := l.(*net.UnixListener)
	if err != nil || !ok {
		if l != nil {
			l.Close()
		}
		_, _ = unix.Write(controlFd, []byte(fmt.Sprintf("!not a Unix socket listener (%v)", err)))
		return
	}
	go sessionpkg.ServeExec(ul, token, sessionpkg.Handlers{
		Exec: func(argv []string, stdio []*os.File) (sessionpkg.Proc, error) {
			fds := make([]int, len(stdio))
			for k, f := range stdio {
				fds[k] = int(f.Fd())
			}
			d := newDirect()
			if _, err := startExecFor(argv, fds, false, d); err != nil {
				return nil, err
			}
			return d, nil
		},
		ExecTTY: func(argv []string, rows, cols uint16) (sessionpkg.Proc, *os.File, error) {
			d := newDirect()
			_, master, err := startTTY(argv, rows, cols, d)
			if err != nil {
				return nil, nil, err
			}
			return d, os.NewFile(uintptr(master), "pty"), nil
		},
	})
	_, _ = unix.Write(controlFd, []byte("a"))
}

// ServeExec hands the session's exec socket l (listening) to init, which
// serves exec on it with token (session.ServeExec). The caller closes
// its copy of l.
func (p *Process) ServeExec(l *os.File, token string) error {
	p.ctlMu.Lock()
	defer p.ctlMu.Unlock()
	if p.ctl == nil {
		return errors.New("the session has ended")
	}
	if err := unix.Sendmsg(int(p.ctl.Fd()), []byte("A"+token), unix.UnixRights(int(l.Fd())), nil, 0); err != nil {
		return fmt.Errorf("view: handing the exec socket to the sandbox: %w", err)
	}
	msg, f, err := receiveFd(p.ctl)
	if f != nil {
		f.Close()
	}
	if err == nil && msg != "a" {
		err = errors.New(strings.TrimPrefix(msg, "!"))
	}
	if err != nil {
		return fmt.Errorf("view: handing the exec socket to the sandbox: %w", err)
	}
	return nil
}

// execStartReport registers a command init started for a caller of its
// own exec socket: it counts as running until its end is reported.
func (p *Process) execStartReport(pid int) { p.execChan(pid) }

// Exec is a process started in the sandbox by [Process.Exec].
type Exec struct {
	p   *Process
	pid int
	ch  chan int
}

// Pid is the process's pid in the sandbox's PID namespace.
func (e *Exec) Pid() int { return e.pid }

// Signal asks init to send sig to the process.
func (e *Exec) Signal(sig int) error {
	msg, f, err := e.p.request([]byte(fmt.Sprintf("Z%d %d", e.pid, sig)))
	if f != nil {
		f.Close()
	}
	if err == nil && msg != "z" {
		err = errors.New(strings.TrimPrefix(msg, "!"))
	}
	return err
}

// Wait returns the process's exit code (128+N when signal N killed it).
func (e *Exec) Wait() int { return <-e.ch }

// Exec starts argv in the running sandbox, confined as the agent, with
// stdio (three files) as its standard streams. The session lasts until it
// has ended too.
func (p *Process) Exec(argv []string, stdio []*os.File) (*Exec, error) {
	if len(stdio) != 3 {
		return nil, errors.New("view: exec needs three standard streams")
	}
	b, err := json.Marshal(argv)
	if err != nil {
		return nil, err
	}
	p.ctlMu.Lock()
	if p.ctl == nil {
		p.ctlMu.Unlock()
		return nil, errors.New("the session has ended")
	}
	rights := unix.UnixRights(int(stdio[0].Fd()), int(stdio[1].Fd()), int(stdio[2].Fd()))
	err = unix.Sendmsg(int(p.ctl.Fd()), append([]byte("X"), b...), rights, nil, 0)
	var msg string
	var f *os.File
	if err == nil {
		msg, f, err = receiveFd(p.ctl)
	}
	p.ctlMu.Unlock()
	if f != nil {
		f.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("view: asking the sandbox to start %s: %w", argv[0], err)
	}
	if !strings.HasPrefix(msg, "x") {
		return nil, errors.New(strings.TrimPrefix(msg, "!"))
	}
	pid, err := strconv.Atoi(msg[1:])
	if err != nil {
		return nil, fmt.Errorf("view: unexpected answer %q", msg)
	}
	return &Exec{p: p, pid: pid, ch: p.execChan(pid)}, nil
}

// Execs counts the exec'd processes still running.
func (p *Process) Execs() int {
	p.execMu.Lock()
	defer p.execMu.Unlock()
	return p.running
}

// execChan is the channel of pid's exit code, for Exec: made here, or
// taken from an end report that came first (init may report a short
// command's end before its parent has read the answer naming it).
func (p *Process) execChan(pid int) chan int {
	p.execMu.Lock()
	defer p.execMu.Unlock()
	if p.execs == nil {
		p.execs = map[int]chan int{}
	}
	ch, ok := p.execs[pid]
	if ok && p.early[pid] {
		delete(p.execs, pid)
		delete(p.early, pid)
		return ch
	}
	if !ok {
		ch = make(chan int, 1)
		p.execs[pid] = ch
		p.running++
	}
	return ch
}

// execReport delivers init's report of an exec'd process's end: to the
// channel Exec made, or to one kept for Exec when the report came first
// (that process never counted as running).
func (p *Process) execReport(pid, status int) {
	p.execMu.Lock()
	ch, ok := p.execs[pid]
	if ok {
		delete(p.execs, pid)
		p.running--
	} else {
		if p.execs == nil {
			p.execs = map[int]chan int{}
		}
		if p.early == nil {
			p.early = map[int]bool{}
		}
		ch = make(chan int, 1)
		p.execs[pid] = ch
		p.early[pid] = true
	}
	p.execMu.Unlock()
	ws := syscall.WaitStatus(status)
	code := ws.ExitStatus()
	if ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	ch <- code
}

// forwardRequest serves an "L" request: "L<port>/<4|6>" asks for a socket
// listening on the sandbox's loopback port (agent-sandbox allow
// localhost:PORT while the session runs, as Config.ForwardPorts at its
// start); the answer is "S" and the socket, or "!" and why not.
func forwardRequest(body string) {
	var port, family int
	if _, err := fmt.Sscanf(body, "%d/%d", &port, &family); err != nil || port <= 0 || port > 65535 || (family != 4 && family != 6) {
		_, _ = unix.Write(controlFd, []byte("!bad request"))
		return
	}
	fd, err := listenLoopback(port, family == 6)
	if err != nil {
		_, _ = unix.Write(controlFd, []byte("!"+err.Error()))
		return
	}
	_ = unix.Sendmsg(controlFd, []byte("S"), unix.UnixRights(fd), nil, 0)
	unix.Close(fd)
}

// Forward asks init for a socket listening on port of the sandbox's own
// loopback (127.0.0.1, or ::1 with ipv6), which the caller serves, as
// [Config.ForwardPorts] are at the start.
func (p *Process) Forward(port int, ipv6 bool) (net.Listener, error) {
	fam := 4
	if ipv6 {
		fam = 6
	}
	msg, f, err := p.request([]byte(fmt.Sprintf("L%d/%d", port, fam)))
	if err != nil {
		return nil, fmt.Errorf("view: asking the sandbox to listen on port %d: %w", port, err)
	}
	if f == nil {
		return nil, fmt.Errorf("view: the sandbox cannot listen on its loopback port %d: %s", port, strings.TrimPrefix(msg, "!"))
	}
	defer f.Close()
	return net.FileListener(f)
}

// signalAgent passes sig, sent to init, on to the agent; once the agent
// has ended and the session lasts for its exec'd processes, on to them
// (the user's Ctrl-C or kill of agent-sandbox ends them too).
// An agent that has exited but is not reaped yet (its SIGCHLD may come
// after this signal on init's channel) counts as ended: the signal would
// be lost on its zombie.
func signalAgent(agent int, sig unix.Signal, toAgent func(unix.Signal)) {
	session.Lock()
	defer session.Unlock()
	if !session.agentDone && !zombie(agent) {
		toAgent(sig)
		return
	}
	for pid := range session.live {
		_ = unix.Kill(pid, sig)
	}
}

// zombie reports whether pid has exited and waits to be reaped (its state
// in /proc is Z), or is gone.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}
