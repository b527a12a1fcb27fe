//go:build linux

package view

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/landlock"
)

// Process is a sandbox started by [Start].
type Process struct {
	// Pid is the host pid of the sandbox init.
	Pid int
	// Attempted, when set (before Wait), is told each destination
	// (IP:PORT) the agent tried to connect to that leads nowhere in its
	// network namespace (Config.Seccomp.NotifyConnect), once each.
	Attempted func(addr string)
	// Unrecorded, when set (before Wait), is told how many connect
	// attempts past the first thousand distinct destinations were not
	// reported to Attempted, when there were any, once the agent ended.
	Unrecorded func(n int64)
	cmd        *exec.Cmd

	status   *os.File
	dec      *json.Decoder
	listener net.Listener
	forwards []Forwarded

	ctlMu sync.Mutex
	ctl   *os.File // requests to init: sockets (Inbound), re-protection
	// inbound is Config.Inbound: init answers requests for sockets.
	inbound bool
	// notes are init's notes on building the view (Notes).
	notes []string

	result error // what Ended returned, once reaped is set
	// execs are the exit codes' channels of the exec'd processes
	// (Exec), by pid; running counts those still running; early marks
	// the channels made by an end report that came before Exec's answer.
	execMu  sync.Mutex
	execs   map[int]chan int
	early   map[int]bool
	running int

	reaped chan struct{} // set by Ended; closed once init itself is reaped

	// stops is told of each stop init reports (job control); jobsDone
	// ends jobControl.
	stops    chan struct{}
	jobsDone chan struct{}
}

// Forwarded is a listening socket on the sandbox's loopback for one of
// [Config.ForwardPorts]: the caller serves its connections.
type Forwarded struct {
	// Port is the forwarded port; IPv6 says the socket listens on ::1
	// rather than 127.0.0.1.
	Port int
	IPv6 bool
	net.Listener
}

// ExitError is how the agent ended when it did not exit with status 0.
type ExitError struct {
	// Status is the agent's wait status.
	Status syscall.WaitStatus
}

// Error describes the agent's end.
func (e *ExitError) Error() string {
	if e.Status.Signaled() {
		return fmt.Sprintf("the agent was killed by %v", e.Status.Signal())
	}
	return fmt.Sprintf("the agent exited with status %d", e.Status.ExitStatus())
}

// WaitStatus returns the agent's wait status.
func (e *ExitError) WaitStatus() syscall.WaitStatus { return e.Status }

// SetupError is returned by Wait when the sandbox could not start the
// agent. Code is the exit status agent-sandbox returns for it: 125 when the
// sandbox could not be set up, 126 or 127 when the agent's program could
// not be executed.
type SetupError struct {
	Msg  string
	Code int
	// Unavailable says that this host does not let agent-sandbox build a
	// view (user namespaces missing or restricted) and that nothing ran:
	// errors.Is(err, ErrUnavailable) holds.
	Unavailable bool
}

// ErrUnavailable is matched (errors.Is) by the errors of [Start] and
// [Process.Wait] that mean this host does not let an ordinary user build
// a view: user namespaces are disabled, exhausted or restricted. Nothing
// of the agent ran.
var ErrUnavailable = errors.New("unprivileged user namespaces are not available here")

// Is makes errors.Is(err, ErrUnavailable) hold for an unavailable view.
func (e *SetupError) Is(target error) bool { return target == ErrUnavailable && e.Unavailable }

func (e *SetupError) Error() string { return e.Msg }

// ExitCode returns the exit status agent-sandbox returns.
func (e *SetupError) ExitCode() int { return e.Code }

// Pending is a sandbox init started by [Spawn] that waits for its
// [Config]: its runtime starts, and it prepares what needs no Config,
// while the caller finishes the run's plan. Exactly one of
// [Pending.Start] and [Pending.Abort] must be called.
type Pending struct {
	cmd     *exec.Cmd
	private bool // a network namespace of its own
	cfgW    *os.File
	statR   *os.File
	ctl     *os.File // the parent's end of the control socket
}

// Start starts the sandbox init for c and waits until the view is built
// (see [Spawn] and [Pending.Start]).
func Start(cmd *exec.Cmd, c Config) (*Process, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	p, err := Spawn(cmd, c.Network)
	if err != nil {
		return nil, err
	}
	return p.Start(c)
}

// Spawn starts the sandbox init in new user, mount, PID, IPC and UTS
// namespaces, and a network namespace of its own unless network is
// NetHost, before its Config is known. cmd provides the agent's standard
// streams and any process-group settings in its SysProcAttr; its Path,
// Args, Env, Dir and ExtraFiles are replaced (the agent's command,
// working directory and environment travel in the Config). Signals sent
// to cmd.Process reach init, which passes them on to the agent.
//
// Init builds nothing from the host until [Pending.Start] sends the
// Config: what the caller creates before that (placeholders of protected
// paths, the run's TMPDIR) is in the view.
func Spawn(cmd *exec.Cmd, network Network) (*Pending, error) {
	if cmd.Process != nil {
		return nil, errors.New("view: command already started")
	}
	switch network {
	case NetHost, NetLoopback, NetProxy:
	default:
		return nil, fmt.Errorf("view: unknown network %q", network)
	}
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer cfgR.Close()
	statR, statW, err := os.Pipe()
	if err != nil {
		cfgW.Close()
		return nil, err
	}
	defer statW.Close()
	// The control socket: the proxy's and forwarded ports' listeners
	// come back on it, and the parent's requests (Inbound's sockets,
	// re-protection) go over it for the whole run.
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		cfgW.Close()
		statR.Close()
		return nil, err
	}
	ctlChild := os.NewFile(uintptr(pair[1]), "control-child")
	defer ctlChild.Close()
	extra := []*os.File{cfgR, statW, ctlChild}
	p := &Pending{cmd: cmd, private: network != NetHost, cfgW: cfgW, statR: statR, ctl: os.NewFile(uintptr(pair[0]), "control")}
	closeAll := func() {
		cfgW.Close()
		statR.Close()
		p.ctl.Close()
	}

	a := new(syscall.SysProcAttr)
	if cmd.SysProcAttr != nil {
		*a = *cmd.SysProcAttr
	}
	if a.Cloneflags != 0 || a.Unshareflags != 0 || a.UidMappings != nil || a.GidMappings != nil ||
		a.Credential != nil || a.Chroot != "" || len(a.AmbientCaps) > 0 || a.Ptrace {
		closeAll()
		return nil, errors.New("view: the sandbox sets namespaces, id maps, credentials and capabilities itself: leave them unset in SysProcAttr")
	}
	a.Cloneflags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS
	if p.private {
		a.Cloneflags |= unix.CLONE_NEWNET
	}
	// What init needs to build the view, in the new user namespace only
	// (CAP_NET_BIND_SERVICE: the listeners of forwarded ports below 1024
	// in the sandbox's network namespace). The agent gets none of it:
	// init drops them before the agent starts. The uid and gid maps are
	// written after init's exec (below), not by the child before it:
	// then the exec does not wait for that round trip to the parent,
	// and, its ids still unmapped at exec, init holds these ambient
	// capabilities and nothing more, a root caller's too (whose uid 0
	// mapped at exec would have had every capability in the namespace).
	// CAP_DAC_OVERRIDE: an overlay's work directory holds a directory
	// of mode 0 that overlayfs needs its mounter to enter (the caches'
	// layers); in the namespace it reaches only files of the caller's
	// own ids, which the caller can read and change anyway.
	// CAP_SYS_RESOURCE: the namespace's own /proc/sys/user/ limits
	// (Config.UserLimits), which the kernel checks below the host's.
	a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP, unix.CAP_NET_BIND_SERVICE, unix.CAP_DAC_OVERRIDE, unix.CAP_SYS_RESOURCE}
	a.Pdeathsig = syscall.SIGKILL

	cmd.Path = "/proc/self/exe"
	cmd.Args = []string{"agent-sandbox", InitArg}
	// Only GOMAXPROCS, which spares init's Go runtime reading the
	// cgroup's CPU limit at start (the parent has read it already), and
	// an empty TZ: UTC, which spares it reading and parsing
	// /etc/localtime, which a dependency's package initialisation asks
	// for (BurntSushi/toml's local-time zones) and init never uses.
	cmd.Env = []string{"GOMAXPROCS=" + strconv.Itoa(runtime.GOMAXPROCS(0)), "TZ="}
	if os.Getenv("GOCOVERDIR") != "" {
		// A -cover build (the e2e suite's): init's counters go to the
		// sandbox's private /tmp, which vanishes with it, rather than a
		// warning on the agent's stderr (the host's coverage directory
		// is not in the view, and must not be).
		cmd.Env = append(cmd.Env, "GOCOVERDIR=/tmp")
	}
	cmd.Env = append(cmd.Env, testInitEnv...)
	cmd.Dir = "/"
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = a
	devNull, err := nullStdio(cmd)
	if err != nil {
		closeAll()
		return nil, err
	}
	if devNull != nil {
		defer devNull.Close()
	}
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, startError("starting the sandbox (new user, mount, PID and network namespaces)", err)
	}
	// Init waits for its Config before it needs its ids (it creates
	// nothing before): the Config is sent after this.
	if err := landlock.WriteIDMaps(cmd.Process.Pid); err != nil {
		closeAll()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, startError("starting the sandbox: mapping the user and group ids into its user namespace", err)
	}
	// The parent keeps no copy of the child's ends (closed by the defers
	// above): a failing init must end the reads with end-of-file, not
	// leave them waiting.
	return p, nil
}

// startError is err of the sandbox's start, saying what failed, and
// matching ErrUnavailable when the kernel refused the namespaces or the id
// maps (errors that mean this host does not let an ordinary user build a
// view).
func startError(what string, err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EUSERS) {
		return fmt.Errorf("%s: %w (%w)", what, err, ErrUnavailable)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Pid is the host pid of the pending init.
func (p *Pending) Pid() int { return p.cmd.Process.Pid }

// Abort ends a pending init that is not to run anything: it closes the
// Config's pipe unwritten (init exits without building the view) and
// waits for it.
func (p *Pending) Abort() {
	p.cfgW.Close()
	p.ctl.Close()
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	p.statR.Close()
}

// Start sends c to the pending init and waits until the view is built,
// or until init says why it could not be. The network of c must be the
// one the init was spawned for. On an error the init has ended.
//
// With NetProxy, [Process.Listener] is the proxy's listening socket inside
// the sandbox, which the caller must serve.
func (p *Pending) Start(c Config) (*Process, error) {
	err := c.Validate()
	if err == nil && (c.Network != NetHost) != p.private {
		err = fmt.Errorf("view: the sandbox was started for another network than %q", c.Network)
	}
	if err != nil {
		p.Abort()
		return nil, err
	}
	// Written while init waits. A large one fills the pipe: init reads
	// it as it comes.
	cfgW := p.cfgW
	go func() {
		_, _ = cfgW.Write(c.Encode())
		cfgW.Close()
	}()
	proc := &Process{Pid: p.cmd.Process.Pid, cmd: p.cmd, status: p.statR, dec: json.NewDecoder(p.statR)}
	ctl := p.ctl
	// init says "ready" once the view is built, or why it could not be:
	// a host that does not let init build it is known here, before the
	// agent started, so the caller can decide what to do instead.
	var r report
	if err := proc.dec.Decode(&r); err != nil || !r.Ready {
		ctl.Close()
		return nil, proc.finish(r, err)
	}
	proc.notes = r.Notes
	if c.Network == NetProxy || len(c.ForwardPorts) > 0 || c.Inbound {
		if err := proc.receiveSockets(ctl); err != nil {
			ctl.Close()
			proc.closeSockets()
			_ = proc.Signal(syscall.SIGKILL)
			_ = proc.Wait()
			return nil, fmt.Errorf("receiving the network sockets from the sandbox: %w", err)
		}
	}
	proc.ctl, proc.inbound = ctl, c.Inbound
	proc.stops, proc.jobsDone = make(chan struct{}, 1), make(chan struct{})
	go proc.jobControl(c.TerminalSignals)
	return proc, nil
}

// Notes are what the view could not give as its Config asked, and what it
// gave instead (an overlay the kernel refused: the writable layer alone).
func (p *Process) Notes() []string { return p.notes }

// OS is the sandbox init's process, for signals.
func (p *Process) OS() *os.Process { return p.cmd.Process }

// receiveSockets reads init's listening sockets until its "E".
func (p *Process) receiveSockets(ctl *os.File) error {
	for {
		msg, f, err := receiveFd(ctl)
		if err != nil {
			return err
		}
		if msg == "E" {
			if f != nil {
				f.Close()
			}
			return nil
		}
		var kind byte
		var port, family int
		if f == nil {
			return fmt.Errorf("message %q without a socket", msg)
		}
		if _, err := fmt.Sscanf(msg, "%c%d/%d", &kind, &port, &family); err != nil || (kind != 'P' && kind != 'F') {
			f.Close()
			return fmt.Errorf("unexpected message %q", msg)
		}
		l, err := net.FileListener(f)
		f.Close()
		if err != nil {
			return err
		}
		if kind == 'P' {
			p.listener = l
		} else {
			p.forwards = append(p.forwards, Forwarded{Port: port, IPv6: family == 6, Listener: l})
		}
	}
}

// receiveFd reads one message from ctl and the descriptor it carries, if
// any.
func receiveFd(ctl *os.File) (string, *os.File, error) {
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(ctl.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return "", nil, err
	}
	if n == 0 {
		return "", nil, io.EOF
	}
	if oobn == 0 {
		return string(buf[:n]), nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return "", nil, fmt.Errorf("no socket in the message (%v)", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return "", nil, fmt.Errorf("no socket in the message (%v)", err)
	}
	return string(buf[:n]), os.NewFile(uintptr(fds[0]), "sandbox-socket"), nil
}

func (p *Process) closeSockets() {
	if p.listener != nil {
		p.listener.Close()
	}
	for _, f := range p.forwards {
		f.Close()
	}
}

// Listener is the egress proxy's listening socket inside the sandbox's
// network namespace (NetProxy only; nil otherwise).
func (p *Process) Listener() net.Listener { return p.listener }

// Forwards are the listening sockets of [Config.ForwardPorts], on the
// sandbox's 127.0.0.1 and (where it has IPv6) ::1.
func (p *Process) Forwards() []Forwarded { return p.forwards }

// DialInside connects to port on the sandbox's own loopback (127.0.0.1,
// or ::1 with ipv6): a server the agent runs there. It needs
// [Config.Inbound]. The socket is made by init in the sandbox's network
// namespace; the connection is made here.
func (p *Process) DialInside(port int, ipv6 bool) (net.Conn, error) {
	if !p.inbound {
		return nil, errors.New("view: DialInside needs Config.Inbound")
	}
	req := []byte("4")
	if ipv6 {
		req = []byte("6")
	}
	msg, f, err := p.request(req)
	if err != nil {
		return nil, fmt.Errorf("view: asking the sandbox for a socket: %w", err)
	}
	if f == nil {
		return nil, fmt.Errorf("view: the sandbox could not make a socket (%q)", msg)
	}
	defer f.Close()
	var sa unix.Sockaddr = &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}
	if ipv6 {
		sa = &unix.SockaddrInet6{Port: port, Addr: [16]byte{15: 1}}
	}
	// Loopback connects complete (or are refused) at once.
	if err := unix.Connect(int(f.Fd()), sa); err != nil {
		return nil, err
	}
	return net.FileConn(f)
}

// request sends req to init on the control socket and reads its answer
// (and the descriptor it carries, if any). Requests are one at a time.
func (p *Process) request(req []byte) (string, *os.File, error) {
	p.ctlMu.Lock()
	defer p.ctlMu.Unlock()
	if p.ctl == nil {
		return "", nil, errors.New("the sandbox has ended")
	}
	if _, err := p.ctl.Write(req); err != nil {
		return "", nil, err
	}
	return receiveFd(p.ctl)
}

// Reprotect asks init to put the guarded mount at path (a
// [Mount.Guarded] of the Config) back, after the host replaced or removed
// what it covered. It returns once init has done so, or why it could not
// (the path is gone, or is no longer a file or directory).
func (p *Process) Reprotect(path string) error {
	msg, f, err := p.request([]byte("R" + path))
	if f != nil {
		f.Close()
	}
	switch {
	case err != nil:
		return fmt.Errorf("view: asking the sandbox to protect %s again: %w", path, err)
	case msg == "r":
		return nil
	case strings.HasPrefix(msg, "!"):
		return fmt.Errorf("view: protecting %s again: %s", path, msg[1:])
	}
	return fmt.Errorf("view: protecting %s again: unexpected answer %q", path, msg)
}

// Close tells init that the caller is done with it: init, which has
// reported the agent's end, exits (closing what Keep handed it). Wait
// calls it; a caller that checks what the agent left between Ended and
// Wait (and may still ask for Reprotect) calls it when it is done.
func (p *Process) Close() {
	p.ctlMu.Lock()
	defer p.ctlMu.Unlock()
	if p.ctl != nil {
		p.ctl.Close()
		p.ctl = nil
	}
}

// Keep hands f to init, which holds it open until it exits: a file whose
// last close is slow (an inotify instance's waits for an SRCU grace
// period) is then closed in init's exit, not in the caller's.
func (p *Process) Keep(f *os.File) error {
	p.ctlMu.Lock()
	defer p.ctlMu.Unlock()
	if p.ctl == nil {
		return errors.New("the sandbox has ended")
	}
	if err := unix.Sendmsg(int(p.ctl.Fd()), []byte("K"), unix.UnixRights(int(f.Fd())), nil, 0); err != nil {
		return err
	}
	msg, g, err := receiveFd(p.ctl)
	if g != nil {
		g.Close()
	}
	if err == nil && msg != "k" {
		err = fmt.Errorf("unexpected answer %q", msg)
	}
	return err
}

// Signal sends sig to the sandbox init, which passes it on to the agent.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Wait waits for the sandbox to end, init included, and returns nil when
// the agent exited with status 0, an [*ExitError] when it exited otherwise
// or was killed, and a [*SetupError] when it never ran.
func (p *Process) Wait() error {
	err := p.Ended()
	p.Close()
	<-p.reaped
	return err
}

// Ended waits until the agent has exited and every other process of the
// sandbox is gone (init reports the agent's status only then), and
// returns what [Process.Wait] returns. Init's own exit, which tears its
// namespaces down, may still be under way, reaped in the background:
// what the caller does after a run (checking what the agent left) can
// overlap with it, as nothing of the sandbox runs any more. Wait waits
// for it. Ended may be called more than once.
func (p *Process) Ended() error {
	if p.reaped != nil {
		return p.result
	}
	var r report
	derr := p.dec.Decode(&r)
	for derr == nil && (r.Stopped != 0 || r.Connect != "" || r.Exec != 0 || r.ExecStart != 0) {
		if r.ExecStart != 0 {
			p.execStartReport(r.ExecStart)
		} else if r.Exec != 0 {
			p.execReport(r.Exec, r.ExecStatus)
		} else if r.Stopped != 0 {
			select {
			case p.stops <- struct{}{}:
			default: // one is pending: it asks for the state then
			}
		} else if p.Attempted != nil {
			p.Attempted(r.Connect)
		}
		r = report{}
		derr = p.dec.Decode(&r)
	}
	if derr == nil && r.Unrecorded > 0 && p.Unrecorded != nil {
		p.Unrecorded(r.Unrecorded)
	}
	close(p.jobsDone)
	p.result = p.finish(r, derr)
	return p.result
}

// jobControl keeps agent-sandbox's state, as the user's shell sees it (its
// job), the agent's: whenever the agent is stopped, agent-sandbox stops
// too (Ctrl-Z in an agent's TUI stops only the agent, whose Landlock
// domain cannot signal agent-sandbox; the shell gets its prompt back at
// once), and once continued (the shell's fg sends SIGCONT to the job, the
// agent included) it passes SIGCONT on to init, in case the agent did not
// get it. It runs until the agent has ended.
//
// Each event (a stop init reported, the terminal's SIGTSTP when tty) only
// makes it ask init whether the agent is stopped now: the event itself may
// be stale. The terminal's Ctrl-Z stops the agent and signals agent-sandbox,
// and a report or signal read after the shell's fg has continued the job
// would otherwise stop it again, with nobody to continue it. Nothing but
// this goroutine stops agent-sandbox (the terminal's SIGTSTP is caught),
// and it stops with SIGSTOP, at once: no stop can come between init's
// answer and agent-sandbox's own stop, to be followed by a stale one after
// fg. The shell says "Stopped (signal)" for it.
func (p *Process) jobControl(tty bool) {
	var tstp chan os.Signal
	if tty {
		// The terminal's Ctrl-Z is acted on here (registered off the
		// start's way: a Ctrl-Z before that stops agent-sandbox by
		// default, as it did before, and its stale report is looked at
		// like any other).
		tstp = make(chan os.Signal, 1)
		signal.Notify(tstp, syscall.SIGTSTP)
		defer signal.Stop(tstp)
	}
	// The stop is sent to this thread, which stops before its tgkill
	// returns: nothing of this loop runs while the stop is under way.
	runtime.LockOSThread()
	for {
		select {
		case <-tstp:
		case <-p.stops:
		case <-p.jobsDone:
			return
		}
		if !p.agentStopped() {
			continue
		}
		_ = unix.Tgkill(unix.Getpid(), unix.Gettid(), unix.SIGSTOP)
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// agentStopped asks init whether the agent is stopped now; true when init
// cannot say (the stop is then acted on as reported).
func (p *Process) agentStopped() bool {
	msg, f, err := p.request([]byte("T"))
	if f != nil {
		f.Close()
	}
	return err != nil || msg != "T0"
}

// finish turns init's last report r (decoded with error derr) into Wait's
// result, and reaps init: in the background when r is the agent's status
// (init exits right after it), else before it returns.
func (p *Process) finish(r report, derr error) error {
	p.reaped = make(chan struct{})
	var werr error
	if derr == nil && r.Status != nil {
		go func() {
			_ = p.cmd.Wait()
			close(p.reaped)
		}()
	} else {
		werr = p.cmd.Wait()
		close(p.reaped)
	}
	p.status.Close()
	if !(derr == nil && r.Status != nil) {
		p.Close() // init has ended: nothing more to ask of it
	}
	switch {
	case derr == nil && r.Status != nil:
		ws := syscall.WaitStatus(*r.Status)
		if ws.Exited() && ws.ExitStatus() == 0 {
			return nil
		}
		return &ExitError{Status: ws}
	case derr == nil && r.Error != "":
		return &SetupError{Msg: r.Error, Code: r.Code, Unavailable: r.Unavailable}
	}
	if werr == nil {
		werr = errors.New("it exited without a report")
	}
	// The view was built and the agent started (Ended follows Ready):
	// init's death took the agent with it (the kernel kills a PID
	// namespace with its PID 1), as SIGKILL would. Not 125, which says
	// that nothing ran.
	return &SetupError{Msg: fmt.Sprintf("the sandbox's init ended while the agent ran (%v), and the agent with it", werr), Code: 128 + int(syscall.SIGKILL)}
}

// Expected reports whether this host's settings let an ordinary user build
// a view, from the kernel's sysctls alone (no process is started): false,
// with the reason, when user namespaces are switched off or restricted.
// A true answer can still meet a refusal at [Start] (a container's seccomp
// filter, say), which then fails with [ErrUnavailable].
// The sysctls are read once per process.
func Expected() (bool, string) { return expected() }

// expected is Expected's answer, read once per process: the run's early
// init and the backend's engine choice both ask.
var expected = sync.OnceValues(expectedNow)

func expectedNow() (bool, string) {
	read := func(name string) string {
		b, err := os.ReadFile("/proc/sys/" + name)
		if err != nil {
			return ""
		}
		return string(bytesTrim(b))
	}
	switch {
	case read("user/max_user_namespaces") == "0":
		return false, "user.max_user_namespaces is 0"
	case read("kernel/unprivileged_userns_clone") == "0" && os.Geteuid() != 0:
		return false, "kernel.unprivileged_userns_clone is 0"
	case read("kernel/apparmor_restrict_unprivileged_userns") == "1" && os.Geteuid() != 0 && !apparmorProfiled():
		return false, "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns is 1) and agent-sandbox runs without an AppArmor profile that allows them"
	}
	return true, ""
}

// apparmorProfiled reports whether this process runs under an AppArmor
// profile (which may grant the `userns,` rule) rather than unconfined.
func apparmorProfiled() bool {
	for _, p := range []string{"/proc/self/attr/apparmor/current", "/proc/self/attr/current"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		label := string(bytesTrim(b))
		return label != "" && label != "unconfined"
	}
	return false
}

func bytesTrim(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}
