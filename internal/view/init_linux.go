//go:build linux

package view

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/safefs"
)

// The descriptors the parent hands to init.
const (
	configFd  = 3 // the Config, JSON, read to end of file
	statusFd  = 4 // init's report, one JSON object
	controlFd = 5 // the parent's requests (sockets, re-protection) and init's answers
)

// report is what init tells the parent, once.
type report struct {
	// Ready says that the view is built and the agent is about to
	// start; init sends it first, then the final report.
	Ready bool `json:"ready,omitempty"`
	// Status is the agent's wait status, when it ran.
	Status *int `json:"status,omitempty"`
	// Error says why the agent did not run; Code is the exit status
	// agent-sandbox returns then (125, or 126/127 when the program
	// itself could not be executed).
	Error string `json:"error,omitempty"`
	Code  int    `json:"code,omitempty"`
	// Notes are what the view could not give as asked (with Ready).
	Notes []string `json:"notes,omitempty"`
	// Stopped, when not 0, says that the agent stopped on that signal
	// (job control); more reports follow.
	Stopped int `json:"stopped,omitempty"`
	// Unavailable says that the namespaces exist but give init no
	// power over its mounts (a kernel or LSM restriction of user
	// namespaces, such as Ubuntu's AppArmor one): nothing ran.
	Unavailable bool `json:"unavailable,omitempty"`
	// Connect, when not "", is a destination (IP:PORT) the agent tried
	// to connect to that leads nowhere in its network namespace (a
	// loopback port nothing is forwarded to, an address past the
	// broker), each reported once; more reports follow.
	Connect string `json:"connect,omitempty"`
	// Unrecorded, with the agent's status, counts the connect attempts
	// past maxConnects distinct destinations, which were not reported.
	Unrecorded int64 `json:"unrecorded,omitempty"`
	// Exec, when not 0, is an exec'd process (Process.Exec) that ended
	// with the wait status ExecStatus; more reports follow.
	Exec       int `json:"exec,omitempty"`
	ExecStatus int `json:"exec_status,omitempty"`
	// ExecStart, when not 0, is a process init started for a caller of
	// its own exec socket (counted as the session's until its Exec
	// report); more reports follow.
	ExecStart int `json:"exec_start,omitempty"`
}

// Init is the sandbox init: it reads the Config from its parent, builds the
// view, starts the agent and waits for it. It never returns to the caller's
// logic: cmd/agent-sandbox exits with its result right away.
func Init() int {
	// The main goroutine keeps the process's first thread: the thread that
	// confines itself for the agent must be another one.
	runtime.LockOSThread()
	// Nothing in the sandbox can signal init (no thread of it shares the
	// agent's Landlock domain). A host process still can: init ignores
	// every signal sent to it that would end it with a dump of goroutines
	// on the user's terminal or without a word (a real fault still
	// crashes it); SIGQUIT, notified below, is passed on to the agent.
	// If init dies anyway (SIGKILL), the parent says so in one line.
	//
	// Ignored only until the handlers below are registered: a signal
	// ignored (SIG_IGN) stays ignored through fork and exec, and every
	// program inside would start with SIGPIPE, SIGALRM, SIGXCPU, SIGXFSZ
	// and four more ignored. A signal caught by Go's handler is reset to
	// its default in the agent's fork, which then starts with the
	// dispositions agent-sandbox's own children get (as --no-sandbox).
	debug.SetTraceback("single")
	signal.Ignore(shielded...)
	status := os.NewFile(statusFd, "status")
	var sayMu sync.Mutex
	say := func(r report) int {
		sayMu.Lock()
		defer sayMu.Unlock()
		_ = json.NewEncoder(status).Encode(r)
		return r.Code
	}
	if os.Getpid() != 1 {
		return say(report{Error: "the sandbox init must be started by agent-sandbox in new namespaces", Code: 125})
	}
	// What needs no Config is done while the parent still plans the run
	// (it sends the Config when it has it): the signal handlers, the
	// thread that will start the agent, private mount propagation.
	sigs := make(chan os.Signal, 32)
	registered := make(chan struct{})
	go func() {
		// A round trip to the runtime's signal thread per signal: in
		// the background, joined before the agent starts. Until then
		// a terminal's signal (init is in agent-sandbox's process
		// group) ends init, as it ends agent-sandbox: nothing ran.
		// The shielded signals are caught and dropped (the channel is
		// never read: a full channel drops them), not ignored.
		signal.Notify(make(chan os.Signal, 1), shielded...)
		signal.Notify(sigs, unix.SIGCHLD, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT,
			unix.SIGWINCH, unix.SIGUSR1, unix.SIGUSR2, unix.SIGCONT)
		close(registered)
	}()
	agent := agentThread()
	defer close(agent)
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			err = fmt.Errorf("%w (%w)", err, errRestricted)
		}
		err = fmt.Errorf("building the sandbox's filesystem view: making the mounts private: %w", err)
		return say(report{Error: err.Error(), Code: 125, Unavailable: errors.Is(err, errRestricted)})
	}
	var c Config
	cf := os.NewFile(configFd, "config")
	b, err := io.ReadAll(cf)
	cf.Close()
	// Nothing inside may read init's memory or open its descriptors: init
	// is not dumpable from here on, before it opens anything of the host.
	// Not before its Config has come: the parent writes init's uid and gid
	// maps after init's exec and sends the Config after that, and the
	// /proc files of a process that is not dumpable belong to root, so
	// the parent could not have written them.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	if err == nil {
		c, err = DecodeConfig(b)
	}
	if err == nil {
		err = c.Validate()
	}
	if err != nil {
		return say(report{Error: fmt.Sprintf("reading the sandbox configuration: %v", err), Code: 125})
	}
	// The view is built the same whatever the caller's umask; the
	// agent gets the caller's (Config.Umask) at its fork.
	initUmask := unix.Umask(0)
	rules, err := setUp(c)
	if c.SetUmask {
		unix.Umask(c.Umask)
	} else {
		unix.Umask(initUmask)
	}
	if err != nil {
		return say(report{Error: err.Error(), Code: 125, Unavailable: errors.Is(err, errRestricted)})
	}
	<-registered
	say(report{Ready: true, Notes: notes})
	stopped = func(sig unix.Signal) { say(report{Stopped: int(sig)}) }
	attempted = func(addr string) { say(report{Connect: addr}) }
	execEnded = func(pid int, ws unix.WaitStatus) { say(report{Exec: pid, ExecStatus: int(ws)}) }
	execStarted = func(pid int) { say(report{ExecStart: pid}) }
	r := runAgent(c, rules, agent, sigs)
	if r.Status != nil {
		r.Unrecorded = unrecorded.Load()
	}
	code := say(r)
	if r.Status != nil {
		// The agent ran: init ends once the parent is done with it (it
		// closes the control socket after its checks). What the parent
		// handed it to hold (Keep) is then closed in init's exit, which
		// the parent does not wait for.
		select {
		case <-controlDone:
		case <-time.After(controlLinger):
		}
	}
	return code
}

// shielded are the signals a host process could send init that would end
// it with a dump of goroutines or without a word; init drops them (a real
// fault still crashes it). SIGQUIT among them is also passed on to the
// agent once init's handlers are registered.
var shielded = []os.Signal{unix.SIGQUIT, unix.SIGABRT, unix.SIGSEGV, unix.SIGBUS, unix.SIGFPE, unix.SIGILL, unix.SIGTRAP,
	unix.SIGSYS, unix.SIGALRM, unix.SIGVTALRM, unix.SIGPROF, unix.SIGXCPU, unix.SIGXFSZ, unix.SIGSTKFLT,
	unix.SIGPWR, unix.SIGIO, unix.SIGPIPE}

// setUp builds the view and everything around it, up to the agent's
// start, and the agent's Landlock ruleset: the rules of the binds' paths
// are added as the binds are placed, on the descriptors their sources
// were opened by, the others in the view once it is built.
func setUp(c Config) (*landlock.Ruleset, error) {
	newRuleset := landlock.NewRuleset
	if c.WithoutLandlock {
		newRuleset = landlock.NewRulesetOrNone
	}
	rules, err := newRuleset(c.Landlock)
	if err != nil {
		return nil, fmt.Errorf("confining the agent: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			rules.Close()
		}
	}()
	if err := buildRoot(c.Mounts, rules); err != nil {
		return nil, fmt.Errorf("building the sandbox's filesystem view: %w", err)
	}
	if err := rules.AddRest(); err != nil {
		return nil, fmt.Errorf("confining the agent: %w", err)
	}
	// The agent's standard streams (init's) may be files outside the
	// view: /dev/stderr and the like open them again.
	if err := rules.AddDescriptors(0, 1, 2); err != nil {
		return nil, fmt.Errorf("confining the agent: %w", err)
	}
	if err := setUserLimits(c.UserLimits); err != nil {
		return nil, err
	}
	if c.Network != NetHost {
		if err := loopbackUp(); err != nil {
			return nil, fmt.Errorf("bringing up loopback in the sandbox's network namespace: %w", err)
		}
	}
	if c.Network == NetProxy || len(c.ForwardPorts) > 0 || c.Inbound {
		if err := handOver(c); err != nil {
			return nil, fmt.Errorf("creating the sandbox's network sockets: %w", err)
		}
	}
	go serveControl(c)
	// A fresh, empty session keyring: the caller's (into which
	// pam_keyinit links the user keyring) stays out of reach.
	if _, _, errno := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); errno != 0 {
		return nil, fmt.Errorf("joining a new session keyring: %w", errno)
	}
	for _, l := range c.Rlimits {
		var cur unix.Rlimit
		if err := unix.Getrlimit(l.Resource, &cur); err != nil {
			return nil, fmt.Errorf("reading the %s limit: %w", l.Name, err)
		}
		lim := unix.Rlimit{Cur: min(l.Soft, cur.Max), Max: min(l.Hard, cur.Max)}
		if err := unix.Setrlimit(l.Resource, &lim); err != nil {
			return nil, fmt.Errorf("setting the %s limit to %d: %w", l.Name, l.Soft, err)
		}
	}
	// Whatever descriptors agent-sandbox's caller left open stay here.
	if err := closeOnExecAbove(3); err != nil {
		return nil, fmt.Errorf("marking inherited descriptors close-on-exec: %w", err)
	}
	if err := unix.Chdir(c.Workdir); err != nil {
		return nil, fmt.Errorf("entering the working directory %s in the sandbox: %w", c.Workdir, err)
	}
	ok = true
	return rules, nil
}

// setUserLimits writes each limit to /proc/sys/user/ (the view's own
// proc) in the sandbox's user namespace, where init holds
// CAP_SYS_RESOURCE and the agent, without capabilities, can only read
// it. The kernel checks a count against the limit of every user
// namespace up to the host's, so what the agent takes stays below these.
func setUserLimits(ls []UserLimit) error {
	for _, l := range ls {
		p := "/proc/sys/user/" + l.Name
		if err := os.WriteFile(p, []byte(strconv.FormatInt(l.Value, 10)+"\n"), 0); err != nil {
			return fmt.Errorf("bounding %s in the sandbox's user namespace (%s = %d): %w", l.Name, p, l.Value, err)
		}
	}
	return nil
}

// started is how the agent's start went: its pid, or why it did not start,
// and the seccomp listener of its connect(2) calls (0 for none).
type started struct {
	pid      int
	err      error
	listener int
}

// agentThread starts the goroutine, locked to a thread of its own, that
// confines its thread and forks the agent from it for the Config it is
// sent; it answers on the channel inside the Config's job. Closing the
// channel unsent ends it. It is started before the Config arrives, so
// that the thread exists by then.
func agentThread() chan<- agentJob {
	jobs := make(chan agentJob, 1)
	go func() {
		// This thread takes the agent's confinement, forks the agent and
		// ends (its goroutine returns still locked, so the runtime ends
		// the thread): no thread of init stays in the agent's Landlock
		// domain, where the agent could signal it (SIGABRT would crash
		// init). The agent needs no parent-death signal: init is PID 1
		// of the sandbox's PID namespace, and when it dies the kernel
		// kills every process in it.
		runtime.LockOSThread()
		j, ok := <-jobs
		if !ok {
			return // nothing ran on it: the runtime ends the thread
		}
		e, err := j.rules.ConfineThread(j.c.Seccomp)
		if err != nil {
			j.done <- started{err: fmt.Errorf("confining the agent: %w", err)}
			return
		}
		pid, err := syscall.ForkExec(j.c.Argv[0], j.c.Argv, &syscall.ProcAttr{
			Env:   j.c.Env,
			Files: []uintptr{0, 1, 2},
		})
		j.done <- started{pid, err, e.Listener}
	}()
	return jobs
}

// agentJob is what [agentThread] is sent.
type agentJob struct {
	c     Config
	rules *landlock.Ruleset
	done  chan started
}

// runAgent has the agent thread confine itself and fork the agent, and
// waits until the agent has exited and every other process of the sandbox
// is gone, passing on the signals arriving on sigs.
func runAgent(c Config, rules *landlock.Ruleset, agent chan<- agentJob, sigs <-chan os.Signal) report {
	if c.NoAgent {
		return holdSession(c, rules, sigs)
	}
	done := make(chan started, 1)
	agent <- agentJob{c: c, rules: rules, done: done}
	s := <-done
	if s.err != nil {
		rules.Close()
		code := 125
		switch {
		case errors.Is(s.err, unix.ENOENT):
			code = 127
		case errors.Is(s.err, unix.EACCES), errors.Is(s.err, unix.ENOEXEC), errors.Is(s.err, unix.EPERM):
			code = 126
		}
		if s.listener > 0 {
			unix.Close(s.listener)
		}
		return report{Error: fmt.Sprintf("starting %s in the sandbox: %v", c.Argv[0], s.err), Code: code}
	}
	if s.listener > 0 {
		go watchConnects(c, s.listener)
	}
	agentPid.Store(int32(s.pid))
	keepRules(c, rules) // for the session's exec'd processes
	for {
		st, done := reap(s.pid)
		if done {
			ws := int(st)
			return report{Status: &ws}
		}
		if st.Stopped() {
			// The agent stopped itself (a TUI's Ctrl-Z sends its own
			// SIGTSTP: its Landlock domain cannot signal agent-sandbox,
			// which the shell waits on): the parent stops too, as the
			// job the user's shell sees.
			stopped(st.StopSignal())
		}
		sig := <-sigs
		if sig == unix.SIGCHLD {
			continue
		}
		// The terminal's signals reached the agent already: it is in
		// agent-sandbox's process group. So did the shell's SIGCONT
		// (fg, bg), which is not passed on again either: a copy
		// passed on late (init's signals are a channel away) would
		// continue an agent a later Ctrl-Z had just stopped, which
		// then read the terminal from the background, stopped again
		// on SIGTTIN, and made agent-sandbox stop the job once more
		// after the next fg.
		if c.TerminalSignals && terminalSignal(sig) {
			continue
		}
		signalAgent(s.pid, sig.(unix.Signal), func(sig unix.Signal) { forwardSignal(c, s.pid, sig) })
	}
}

// forwardSignal passes sig on to the started process pid, or, for a
// supervisor that keeps some signals for itself (Config.SignalChildren:
// nono), to its children, the agent; to pid while it has none yet.
func forwardSignal(c Config, pid int, sig unix.Signal) {
	if c.SignalChildren {
		if kids := childrenOf(pid); len(kids) > 0 {
			for _, k := range kids {
				_ = unix.Kill(k, sig)
			}
			return
		}
	}
	_ = unix.Kill(pid, sig)
}

// childrenOf lists pid's children (/proc/PID/task/*/children).
func childrenOf(pid int) []int {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if k, err := strconv.Atoi(f); err == nil {
				out = append(out, k)
			}
		}
	}
	return out
}

// stopped tells the parent that the agent stopped on sig.
var stopped = func(sig unix.Signal) {}

// agentPid is the agent's pid (0 before it started), for the parent's
// question whether it is still stopped.
var agentPid atomic.Int32

// agentStopped reports whether the agent is stopped now (its state in
// /proc is T), and true when that cannot be read: the parent then acts on
// the stop report as it came.
func agentStopped() bool {
	pid := agentPid.Load()
	if pid <= 0 {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/stat")
	if err != nil {
		return true
	}
	// pid (comm) state ...: comm may hold spaces and parentheses, the
	// state follows the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return true
	}
	return b[i+2] == 'T'
}

// attempted reports a connection attempt that leads nowhere (set once the
// status channel is the agent's).
var attempted = func(addr string) {}

// watchConnects serves the seccomp listener of the agent's connect(2)
// calls (Config.Seccomp.NotifyConnect) until the sandbox is empty,
// reporting each destination that leads nowhere once: a loopback port
// that is neither the proxy's nor forwarded, or any other address (the
// namespace has no route past loopback); port 0 and DNS are left out.
func watchConnects(c Config, listener int) {
	open := map[uint16]bool{}
	if c.Network == NetProxy {
		open[uint16(c.ProxyPort)] = true
	}
	for _, p := range c.ForwardPorts {
		open[uint16(p)] = true
	}
	seen := map[netip.AddrPort]bool{}
	_ = landlock.NotifyLoop(listener, func(a landlock.ConnectAttempt) {
		ip, port := a.Addr.Addr(), a.Addr.Port()
		// Port 0 (glibc's address sorting connects UDP sockets so) and
		// DNS (refused in the namespace by design) are not attempts to
		// report.
		if port == 0 || port == 53 || (ip.IsLoopback() || ip.IsUnspecified()) && open[port] || seen[a.Addr] {
			return
		}
		if len(seen) >= maxConnects {
			// Counted, and the count reported with the agent's status.
			unrecorded.Add(1)
			return
		}
		seen[a.Addr] = true
		attempted(a.Addr.String())
	})
	unix.Close(listener)
}

// maxConnects bounds the distinct destinations watchConnects reports
// (and remembers); the attempts past it are counted in unrecorded.
const maxConnects = 1000

// unrecorded counts the connect attempts past maxConnects.
var unrecorded atomic.Int64

// reap collects exited children. When the agent is among them it kills
// every process left in the namespace, waits for all of them and returns
// the agent's status with done=true.
func reap(agent int) (unix.WaitStatus, bool) {
	var stop unix.WaitStatus
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG|unix.WUNTRACED, nil)
		if err == unix.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			if st, over := sessionOver(); over {
				return endSession(st), true
			}
			return stop, false
		}
		if pid != agent {
			execExited(pid, ws)
			continue
		}
		if ws.Stopped() {
			stop = ws // reported to the caller (job control)
			continue
		}
		if !agentExited(ws) {
			continue // an exec'd process still runs: the session lasts
		}
		return endSession(ws), true
	}
}

// endSession ends the session once its last process (the agent, or an
// exec'd one after it) has ended: every other process of the namespace is
// killed and reaped; it returns the agent's status ws.
func endSession(ws unix.WaitStatus) unix.WaitStatus {
	// From PID 1, kill(-1) reaches every other process of the namespace.
	_ = unix.Kill(-1, unix.SIGKILL)
	for {
		_, err := unix.Wait4(-1, nil, 0, nil)
		if err == unix.ECHILD {
			break
		}
		if err != nil && err != unix.EINTR {
			break
		}
	}
	return ws
}

// terminalSignal reports whether the terminal itself sends s to its
// foreground process group.
func terminalSignal(s os.Signal) bool {
	switch s {
	case unix.SIGINT, unix.SIGQUIT, unix.SIGWINCH, unix.SIGCONT:
		return true
	}
	return false
}

// buildRoot assembles the new root on a tmpfs and pivots into it, and
// adds to rules the Landlock rules of the paths its binds show (see
// inodeRules).
//
// Init never holds more than a few descriptors at once: a source is
// opened when its bind is placed and closed right after. Growing the
// descriptor table of a process with several threads waits for an RCU
// grace period, 4 to 20 ms each time here, and a thousand binds held
// open grew it five times. Sources under /tmp, which the staged root
// covers, are reached through a descriptor of the host's /tmp opened
// before it (hostPaths).
func buildRoot(mounts []Mount, rules *landlock.Ruleset) (err error) {
	// Init made the mounts private before the Config came.
	ms := ordered(mounts)
	exists := make([]bool, len(ms))
	overlays := make([]*overlayFds, len(ms))
	encloses := enclosingBinds(ms)
	devNull := -1
	var host hostPaths
	defer func() {
		for _, o := range overlays {
			o.close()
		}
		if devNull > 0 {
			unix.Close(devNull)
		}
		host.close()
	}()
	if err := host.openTmp(); err != nil {
		return err
	}
	if err := openSources(ms, encloses, &host, exists, overlays, &devNull); err != nil {
		return err
	}
	byInode := inodeRules(ms)
	for i, skip := range coveredBinds(ms, exists) {
		if skip {
			exists[i] = false
		}
	}
	var joined map[string][]member
	ms, exists, overlays, joined = joinSiblings(ms, exists, overlays, &host, rules)
	// The new root is a tmpfs over /tmp, in this mount namespace only.
	if err := unix.Mount("tmpfs", stage, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mounting the new root: %w", err)
	}
	dirs := &stagedDirs{}
	defer dirs.release()
	shared := &sharedTmpfs{stage: stage}
	defer func() { _ = shared.release() }()
	for i, m := range ms {
		if m.Kind == Alias {
			continue // placed below, once everything it shows is there
		}
		dirs.at(m.Path)
		if m.Kind != ReadOnly && m.Kind != ReadWrite && m.Kind != Terminal {
			if err := placeOther(m, overlays[i], shared, devNull, dirs); err != nil {
				return fmt.Errorf("%s %s: %w", m.Kind, m.Path, err)
			}
			continue
		}
		if !exists[i] {
			continue // optional and missing, or shown by another bind
		}
		if err := placeHostBind(m, &host, devNull, dirs, rules, byInode, joined); err != nil {
			return err
		}
	}
	dirs.release()
	if err := placeAliases(stage, ms); err != nil {
		return err
	}
	if err := shared.release(); err != nil {
		return err
	}
	// Directories init created on a writable tmpfs only to hold the mount
	// points below them (a workdir or home under /tmp) are read-only, as
	// the root's skeleton is: writes there would vanish with the run.
	for _, top := range skeletonTops(ms) {
		if err := readOnlySelfBind(stage + top); err != nil {
			return fmt.Errorf("making %s read-only: %w", top, err)
		}
	}
	if err := unix.Chdir(stage); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the old root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	// The skeleton (mount points, $HOME as a bare directory) is read-only.
	if err := remountOneReadOnly("/"); err != nil {
		return fmt.Errorf("making the new root read-only: %w", err)
	}
	return nil
}

// openSources does what must be done before the staged root covers
// /tmp, for each mount in ms: it records in exists whether a bind
// enclosed by another is there (for coveredBinds), opens /dev/null into
// *devNull for the first mask, and opens each overlay's layers into
// overlays.
func openSources(ms []Mount, encloses []bool, host *hostPaths, exists []bool, overlays []*overlayFds, devNull *int) error {
	for i, m := range ms {
		switch m.Kind {
		case ReadOnly, ReadWrite, Terminal:
			// Looked at only where it decides what is placed
			// (coveredBinds); any other is opened when placed, and
			// skipped then if optional and missing.
			exists[i] = !encloses[i] || host.exists(m)
		case Mask:
			if *devNull < 0 {
				fd, err := openNoSymlinks("/dev/null")
				if err != nil {
					return err
				}
				*devNull = fd
			}
		case Overlay:
			// Before the staged root covers /tmp: layers may lie there.
			var o overlayFds
			var err error
			if o.upper, err = openNoSymlinks(m.Upper); err != nil {
				return err
			}
			overlays[i] = &o
			if o.work, err = openNoSymlinks(m.Work); err != nil {
				return err
			}
			o.lower, err = openNoSymlinks(m.source())
			if err != nil && !errors.Is(err, unix.ENOENT) {
				return err
			}
		}
	}
	return nil
}

// placeHostBind places m, a bind of the host's (read-only, read-write
// or a terminal), in the staged root: it opens its source, skipping it
// if it is optional and missing, places it, adds the Landlock rules its
// path or its joined members need, and closes the source again.
func placeHostBind(m Mount, host *hostPaths, devNull int, dirs *stagedDirs, rules *landlock.Ruleset, byInode map[string]bool, joined map[string][]member) error {
	fd, oerr := host.open(m.source())
	if oerr != nil {
		if optionalMissing(m, oerr) {
			return nil
		}
		return oerr
	}
	var perr error
	if m.Kind == Terminal {
		perr = place(stage, m, fd, devNull, dirs)
	} else {
		var dir bool
		if dir, perr = isDirFd(fd); perr == nil {
			perr = placeBind(stage, m, fd, dir, dirs)
		}
		if perr == nil && byInode[m.Path] {
			// A source opened refusing symlinks is none.
			perr = rules.AddOpenedKnown(m.Path, fd, dir)
		}
	}
	if perr == nil && joined[m.Path] != nil {
		perr = memberRules(rules, fd, joined[m.Path], byInode)
	}
	unix.Close(fd)
	if perr != nil {
		return fmt.Errorf("%s %s: %w", m.Kind, m.Path, perr)
	}
	return nil
}

// placeOther places a mount that is not a bind of the host's in the
// staged root: an overlay (its layers open in o), a tmpfs shared with
// others (shared), or any other kind (place).
func placeOther(m Mount, o *overlayFds, shared *sharedTmpfs, devNull int, dirs *stagedDirs) error {
	switch {
	case m.Kind == Overlay:
		return placeOverlay(stage, m, o, dirs)
	case m.Kind == Tmpfs && m.Source != "":
		return shared.place(m, dirs)
	}
	return place(stage, m, 0, devNull, dirs)
}

// stage is where the new root is assembled: a tmpfs over /tmp, in init's
// mount namespace only.
const stage = "/tmp"

// hostPaths opens the host's paths while the new root is assembled,
// never following a symlink. A path under /tmp is opened relative to
// tmp, a descriptor of the host's /tmp opened before the staged root
// covered it: a lookup that starts at that directory sees what lies in
// it, not the tmpfs mounted over it.
type hostPaths struct {
	tmp    int
	tmpDir string // where /tmp leads (itself, unless it is a symlink)
}

// openTmp opens the host's /tmp, where the staged root is mounted.
func (h *hostPaths) openTmp() error {
	dir, err := filepath.EvalSymlinks(stage)
	if err != nil {
		return fmt.Errorf("the staged root's place: %w", err)
	}
	h.tmpDir = dir
	h.tmp, err = openNoSymlinks(dir)
	return err
}

// open opens path with O_PATH, refusing any symlink on the way.
func (h *hostPaths) open(path string) (int, error) {
	rel, under := h.underTmp(path)
	if !under {
		return openNoSymlinks(path)
	}
	return swapped(path)(safefs.OpenBeneathFd(h.tmp, rel, path, unix.O_PATH, 0))
}

// underTmp says whether path lies in /tmp (or is it), and its path
// relative to /tmp ("." for /tmp).
func (h *hostPaths) underTmp(path string) (string, bool) {
	if path == h.tmpDir {
		return ".", true
	}
	rel, ok := strings.CutPrefix(path, h.tmpDir+"/")
	return rel, ok && h.tmpDir != "/"
}

// exists says whether a bind's source is there to be placed; only an
// optional source may be absent (a required one that is not there fails
// when it is opened, with the reason).
func (h *hostPaths) exists(m Mount) bool {
	if !m.Optional {
		return true
	}
	var st unix.Stat_t
	var err error
	if rel, under := h.underTmp(m.source()); under {
		err = unix.Fstatat(h.tmp, rel, &st, unix.AT_SYMLINK_NOFOLLOW)
	} else {
		err = unix.Fstatat(unix.AT_FDCWD, m.source(), &st, unix.AT_SYMLINK_NOFOLLOW)
	}
	return !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR)
}

func (h *hostPaths) close() {
	if h.tmp > 0 {
		unix.Close(h.tmp)
	}
}

// optionalMissing says whether err, opening m's source, means an optional
// source that is not there.
func optionalMissing(m Mount, err error) bool {
	return m.Optional && (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR))
}

// errRestricted marks a set-up failure that means the user namespace gives
// no power over mounts (see report.Unavailable).
var errRestricted = errors.New("user namespaces are restricted on this host")

// skeletonTops returns, for every writable tmpfs mount with other mounts
// below it, the first-level entries under it that init created as mere
// parents of those mounts (not mounts themselves).
func skeletonTops(ms []Mount) []string {
	at := map[string]bool{}
	for _, m := range ms {
		at[m.Path] = true
	}
	seen := map[string]bool{}
	var tops []string
	for _, t := range ms {
		if t.Kind != Tmpfs {
			continue
		}
		for _, m := range ms {
			rest, ok := strings.CutPrefix(m.Path, t.Path+"/")
			if !ok {
				continue
			}
			top := t.Path + "/" + strings.SplitN(rest, "/", 2)[0]
			if !at[top] && !seen[top] {
				seen[top] = true
				tops = append(tops, top)
			}
		}
	}
	return tops
}

// readOnlySelfBind binds path onto itself with the new mount read-only;
// the mounts below it keep their own flags.
func readOnlySelfBind(path string) error {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if errors.Is(err, unix.ENOENT) {
		return nil // only optional mounts were to go below it
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(tree)
	return attachReadOnly(tree, fd)
}

// place puts one mount other than a bind into the staged root (buildRoot
// places the binds with placeBind, adding their rules as it goes).
func place(stage string, m Mount, srcFd, devNull int, dirs *stagedDirs) error {
	switch m.Kind {
	case Terminal:
		if srcFd <= 0 {
			return nil
		}
		if err := allocatePty(stage+parentOf(m.Path), baseOf(m.Path)); err != nil {
			return err
		}
		t, err := unix.Openat2(unix.AT_FDCWD, stage+m.Path, &unix.OpenHow{
			Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS,
		})
		if err != nil {
			return err
		}
		defer unix.Close(t)
		return bindAt(srcFd, t, false, false)
	case Mask:
		t, err := unix.Openat2(unix.AT_FDCWD, stage+m.Path, &unix.OpenHow{
			Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS,
		})
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return nil // nothing to hide
		}
		if err != nil {
			return err
		}
		defer unix.Close(t)
		dir, err := isDirFd(t)
		if err != nil {
			return err
		}
		if dir {
			return mountAt("tmpfs", t, unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755,size=4k")
		}
		return bindAt(devNull, t, true, false)
	case Tmpfs, Proc, Devpts, Dir:
		t, err := makeTarget(dirs, stage, m.Path, true)
		if err != nil {
			return err
		}
		defer unix.Close(t)
		switch m.Kind {
		case Tmpfs:
			opts := "mode=1777"
			if m.Size > 0 {
				opts += fmt.Sprintf(",size=%d", m.Size)
			}
			return mountAt("tmpfs", t, unix.MS_NOSUID|unix.MS_NODEV, opts)
		case Proc:
			return mountAt("proc", t, unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
		case Devpts:
			return mountAt("devpts", t, unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620")
		}
		return nil
	case Symlink:
		parent, err := makeTarget(dirs, stage, parentOf(m.Path), true)
		if err != nil {
			return err
		}
		defer unix.Close(parent)
		return unix.Symlinkat(m.Target, parent, baseOf(m.Path))
	case Link:
		return placeLink(stage, m, dirs)
	}
	return fmt.Errorf("unknown mount kind %q", m.Kind)
}

// placeAliases places the Alias mounts of ms, once every other mount is
// there.
func placeAliases(stage string, ms []Mount) error {
	for _, m := range ms {
		if m.Kind == Alias {
			if err := placeAlias(stage, m); err != nil {
				return fmt.Errorf("alias %s of %s: %w", m.Path, m.Source, err)
			}
		}
	}
	return nil
}

// placeAlias shows at m.Path (in the staged root) a recursive clone of
// the mounts at m.Source there, each keeping its own flags.
func placeAlias(stage string, m Mount) error {
	src, err := unix.Openat2(unix.AT_FDCWD, stage+m.Source, &unix.OpenHow{
		Flags: unix.O_PATH | unix.O_CLOEXEC | unix.O_DIRECTORY, Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return err
	}
	defer unix.Close(src)
	t, err := makeTarget(nil, stage, m.Path, true)
	if err != nil {
		return err
	}
	defer unix.Close(t)
	tree, err := unix.OpenTree(src, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(tree)
	if err := unix.MoveMount(tree, "", t, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

// placeBind binds the source open at srcFd (a directory when dir) at
// m.Path in the staged root.
func placeBind(stage string, m Mount, srcFd int, dir bool, dirs *stagedDirs) error {
	t, err := makeTarget(dirs, stage, m.Path, dir)
	if err != nil {
		return err
	}
	defer unix.Close(t)
	return bindAt(srcFd, t, m.Kind == ReadOnly, !isDevPath(m.Path))
}

func parentOf(p string) string {
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "/"
}

func baseOf(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}

// overlayFds are an Overlay's layers, opened before the staged root
// covers /tmp; lower is -1 when the host has none.
type overlayFds struct {
	lower, upper, work int
}

func (o *overlayFds) close() {
	if o == nil {
		return
	}
	for _, fd := range []int{o.lower, o.upper, o.work} {
		if fd > 0 {
			unix.Close(fd)
		}
	}
}

// placeOverlay mounts an Overlay: the host's directory as the read-only
// lower layer, the state's as the writable one; without a lower layer, or
// where the kernel refuses the overlay, the writable layer alone.
func placeOverlay(stage string, m Mount, o *overlayFds, dirs *stagedDirs) error {
	t, err := makeTarget(dirs, stage, m.Path, true)
	if err != nil {
		return err
	}
	defer unix.Close(t)
	if o.lower > 0 {
		opts := "lowerdir=" + fdPath(o.lower) + ",upperdir=" + fdPath(o.upper) + ",workdir=" + fdPath(o.work) + ",userxattr"
		oerr := mountAt("overlay", t, unix.MS_NOSUID|unix.MS_NODEV, opts)
		if oerr == nil {
			return nil
		}
		notes = append(notes, fmt.Sprintf("%s: the kernel refused an overlay over your %s (%v); the agent gets its own empty one", m.Path, m.source(), oerr))
	}
	return bindAt(o.upper, t, false, true)
}

// notes are what building the view could not give as asked and did
// otherwise (an overlay the kernel refused): sent with the ready report.
var notes []string

// heldPtys are the masters init opened to make pty numbers exist in the
// sandbox's devpts instance; init keeps them open for the whole run.
var heldPtys []int

// maxHeldPty bounds how many ptys init allocates for one terminal name.
const maxHeldPty = 512

// allocatePty opens ptys in the devpts instance at dir until the one
// named name (a number) exists.
func allocatePty(dir, name string) error {
	want, err := strconv.Atoi(name)
	if err != nil || want < 0 || want > maxHeldPty {
		return fmt.Errorf("terminal %s/%s: not a pty number up to %d", dir, name, maxHeldPty)
	}
	for {
		if _, err := os.Lstat(dir + "/" + name); err == nil {
			return nil
		}
		fd, err := unix.Open(dir+"/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("allocating a pty in the sandbox: %w", err)
		}
		heldPtys = append(heldPtys, fd)
		n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
		if err != nil {
			return fmt.Errorf("allocating a pty in the sandbox: %w", err)
		}
		if n > want {
			return fmt.Errorf("terminal %s/%s: the sandbox's pty numbers went past it", dir, name)
		}
	}
}

// loopbackUp sets the loopback interface of the new network namespace up.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// handOver listens on the proxy port (NetProxy) and on every forwarded
// port inside the namespace, and sends the listening sockets to the
// parent, which serves them: one message each ("P" or "F", the port, the
// address family), then "E". With c.Inbound init then keeps answering the
// parent's requests for new TCP sockets in this namespace ("4" or "6"),
// until the parent closes its end; otherwise it closes the control socket.
func handOver(c Config) error {
	send := func(kind byte, port int, v6 bool) error {
		fd, err := listenLoopback(port, v6)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		msg := fmt.Sprintf("%c%d/%d", kind, port, map[bool]int{false: 4, true: 6}[v6])
		if err := unix.Sendmsg(controlFd, []byte(msg), unix.UnixRights(fd), nil, 0); err != nil {
			return fmt.Errorf("sending the socket of port %d to agent-sandbox: %w", port, err)
		}
		return nil
	}
	if c.Network == NetProxy {
		if err := send('P', c.ProxyPort, false); err != nil {
			return fmt.Errorf("the egress proxy's socket: %w", err)
		}
	}
	for _, port := range c.ForwardPorts {
		if err := send('F', port, false); err != nil {
			return fmt.Errorf("forwarded port %d: %w", port, err)
		}
		// ::1 as well (localhost may resolve to it first), where the
		// namespace has IPv6.
		if err := send('F', port, true); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) && !errors.Is(err, unix.EAFNOSUPPORT) {
			return fmt.Errorf("forwarded port %d: %w", port, err)
		}
	}
	if err := unix.Sendmsg(controlFd, []byte("E"), nil, nil, 0); err != nil {
		return fmt.Errorf("telling agent-sandbox the sockets are sent: %w", err)
	}
	return nil
}

// listenLoopback returns a socket listening on 127.0.0.1:port (or
// [::1]:port).
func listenLoopback(port int, v6 bool) (int, error) {
	family := unix.AF_INET
	var sa unix.Sockaddr = &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}
	if v6 {
		family = unix.AF_INET6
		sa = &unix.SockaddrInet6{Port: port, Addr: [16]byte{15: 1}}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if v6 {
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1)
	}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("binding port %d: %w", port, err)
	}
	if err := unix.Listen(fd, 512); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// controlDone is closed when serveControl returns (the parent closed its
// end, or died).
var controlDone = make(chan struct{})

// controlLinger bounds how long init waits, after the agent's end, for
// the parent to close the control socket.
const controlLinger = 30 * time.Second

// passedFds are the descriptors a control message carries (SCM_RIGHTS),
// none when it carries none or cannot be read.
func passedFds(oob []byte) []int {
	var fds []int
	if len(oob) == 0 {
		return nil
	}
	if msgs, err := unix.ParseSocketControlMessage(oob); err == nil {
		for _, m := range msgs {
			if got, err := unix.ParseUnixRights(&m); err == nil {
				fds = append(fds, got...)
			}
		}
	}
	return fds
}

// sendInboundSocket answers a "4" or "6" request: a fresh TCP socket of
// the sandbox's network namespace (IPv4 or IPv6), passed to the parent,
// or why not.
func sendInboundSocket(req string) {
	family := unix.AF_INET
	if req == "6" {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		_, _ = unix.Write(controlFd, []byte("!"+err.Error()))
		return
	}
	_ = unix.Sendmsg(controlFd, []byte("S"), unix.UnixRights(fd), nil, 0)
	unix.Close(fd)
}

// serveControl answers the parent's requests on the control socket until
// the parent closes its end:
//
//   - "4" or "6" (with c.Inbound): a new, unconnected TCP socket of this
//     network namespace comes back ("S" and the descriptor), which the
//     parent connects to a server the agent runs (listen_port);
//   - "R" and a path: the guarded mount at that path (Mount.Guarded) is put
//     back after the host replaced what it covered (reprotect); the answer
//     is "r", or "!" and why not;
//   - "K" with a descriptor: init holds it until it exits (Process.Keep).
//   - "X" and a JSON command line with three descriptors (Process.Exec), or
//     "Y" and a JSON command line and window size (Process.ExecTTY): a
//     command started confined as the agent (exec_linux.go);
//   - "A" and the session's token with a listening socket: init serves
//     exec on it itself (execListenRequest).
func serveControl(c Config) {
	defer close(controlDone)
	guarded := map[string]Mount{}
	var aliases []Mount
	for _, m := range c.Mounts {
		if m.Guarded {
			guarded[m.Path] = m
		}
		if m.Kind == Alias {
			aliases = append(aliases, m)
		}
	}
	buf := make([]byte, 1<<16)               // an exec request carries a command line
	oob := make([]byte, unix.CmsgSpace(4*4)) // an exec request carries three descriptors
	var kept []int                           // files held for the parent until init exits
	for {
		n, oobn, _, _, err := unix.Recvmsg(controlFd, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			unix.Close(controlFd)
			return
		}
		fds := passedFds(oob[:oobn])
		if execControl(buf[:n], fds) {
			continue
		}
		kept = append(kept, fds...)
		switch req := string(buf[:n]); {
		case strings.HasPrefix(req, "Z"):
			signalRequest(req[1:])
		case strings.HasPrefix(req, "L"):
			forwardRequest(req[1:])
		case strings.HasPrefix(req, "Q"):
			endRequest(req[1:])
		case (req == "4" || req == "6") && c.Inbound:
			sendInboundSocket(req)
		case req == "T":
			stoppedRequest()
		case req == "K":
			// Held until init exits (kept).
			_, _ = unix.Write(controlFd, []byte("k"))
		case strings.HasPrefix(req, "R"):
			reprotectRequest(req[1:], guarded, aliases)
		default:
			_, _ = unix.Write(controlFd, []byte("!unknown request"))
		}
	}
}

// execControl serves the control requests that carry a command line
// (and descriptors): "X" an exec'd command's stdio, "Y" an exec'd
// command with a terminal, "A" the session's exec socket. It says whether
// req was one of them.
func execControl(req []byte, fds []int) bool {
	if len(req) == 0 {
		return false
	}
	switch req[0] {
	case 'X':
		execRequest(req[1:], fds)
	case 'Y':
		execTTYRequest(req[1:], fds)
	case 'A':
		execListenRequest(string(req[1:]), fds)
	default:
		return false
	}
	return true
}

// stoppedRequest answers "T": is the agent still stopped? A stop report
// can be stale by the time the parent reads it: a Ctrl-Z at the terminal
// stopped the parent too, and the shell's fg continued the whole job,
// agent included, before the parent read the report.
func stoppedRequest() {
	ans := "T0"
	if agentStopped() {
		ans = "T1"
	}
	_, _ = unix.Write(controlFd, []byte(ans))
}

// reprotectRequest answers "R": the guarded mount at path is put back
// (reprotectAliased); "r", or "!" and why not.
func reprotectRequest(path string, guarded map[string]Mount, aliases []Mount) {
	m, ok := guarded[path]
	if !ok {
		_, _ = unix.Write(controlFd, []byte("!not a guarded mount: "+path))
		return
	}
	if err := reprotectAliased(m, aliases); err != nil {
		_, _ = unix.Write(controlFd, []byte("!"+err.Error()))
		return
	}
	_, _ = unix.Write(controlFd, []byte("r"))
}

// reprotectAliased puts the guarded mount m back (reprotect), and again
// where an Alias shows its path too: the host's rename over the entry
// detached the alias's clone of the mount as well.
func reprotectAliased(m Mount, aliases []Mount) error {
	if err := reprotect(m); err != nil {
		return err
	}
	for _, a := range aliases {
		if inside(m.Path, a.Source) {
			am := m
			am.Path = a.Path + m.Path[len(a.Source):]
			if err := reprotect(am); err != nil {
				return fmt.Errorf("%s (shown at %s): %w", m.Path, am.Path, err)
			}
		}
	}
	return nil
}

// reprotect puts the guarded mount m back at its path when it is no
// longer there: the kernel detached it because the host replaced or
// removed the directory entry it sat on. What is at the path now (never
// followed through a symlink) gets the mount again: a read-only bind of
// itself (ReadOnly), a bind of itself onto itself (a pinned ReadWrite
// directory), or a mask. A path that still carries a mount of the right
// kind is left alone.
func reprotect(m Mount) error {
	fd, err := safefs.OpenFd(m.Path, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE, &stx); err != nil {
		return err
	}
	typ := uint32(stx.Mode) & unix.S_IFMT
	if typ != unix.S_IFREG && typ != unix.S_IFDIR {
		return fmt.Errorf("%s is neither a file nor a directory now", m.Path)
	}
	root := stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
	readOnly := false
	if root {
		var sfs unix.Statfs_t
		if err := unix.Fstatfs(fd, &sfs); err == nil {
			readOnly = sfs.Flags&unix.ST_RDONLY != 0
		}
	}
	switch m.Kind {
	case ReadOnly:
		if root && readOnly {
			return nil
		}
		return bindAt(fd, fd, true, !isDevPath(m.Path))
	case ReadWrite: // pinned
		if typ != unix.S_IFDIR {
			return fmt.Errorf("%s is not a directory now", m.Path)
		}
		if root {
			return nil
		}
		return bindAt(fd, fd, false, !isDevPath(m.Path))
	case Mask:
		if root && readOnly {
			return nil
		}
		if typ == unix.S_IFDIR {
			return mountAt("tmpfs", fd, unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755,size=4k")
		}
		null, err := safefs.OpenFd("/dev/null", unix.O_PATH, 0)
		if err != nil {
			return err
		}
		defer unix.Close(null)
		return bindAt(null, fd, true, false)
	}
	return fmt.Errorf("%s: a %s mount is not guarded", m.Path, m.Kind)
}
