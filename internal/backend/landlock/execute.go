package landlock

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/agent-sandbox/agent-sandbox/internal/backend"
	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	"github.com/agent-sandbox/agent-sandbox/internal/engine"
	"github.com/agent-sandbox/agent-sandbox/internal/grant"
	ll "github.com/agent-sandbox/agent-sandbox/internal/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/piext"
	"github.com/agent-sandbox/agent-sandbox/internal/placeholder"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/session"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// Execute runs the agent of s confined by p, with the network n, and
// returns the exit status: in a namespace view, or with weaker set (the
// user accepted the weaker sandbox and this host allows no view) under
// Landlock and seccomp alone. It refuses (exit 125, one error line) when
// the kernel cannot enforce p. banner prints the "Sandbox Active" line
// (on a terminal). With an allow list it serves the egress
// broker for the agent until the agent has ended, then prints the
// broker's line about refused connections.
func Execute(s spec.Spec, p ll.Policy, n Net, stdio launch.Stdio, verbose, weaker, banner bool, pre *Early) int {
	return execute(s, p, n, stdio, verbose, weaker, banner, pre, nil)
}

// execute is Execute with inner, the second sandbox the view starts the
// agent under, or nil.
func execute(s spec.Spec, p ll.Policy, n Net, stdio launch.Stdio, verbose, weaker, banner bool, pre *Early, inner *Inner) int {
	if why := startedRefusal(s, weaker, inner); why != "" {
		diag.Errorf(stdio.Err, "%s", why)
		return launch.ExitRefused
	}
	if verbose {
		diag.Notef(stdio.Err, "namespace view (new user, mount, PID, IPC, UTS%s namespaces), then %s",
			map[bool]string{true: ", network", false: ""}[p.Network == ll.NetBlocked], insideView())
	}
	// The view's init starts first, unless it was started before the
	// run was planned (pre): its runtime's start overlaps with what
	// follows (the state directories, the run's TMPDIR, the placeholders
	// of protected paths, the view's configuration), and it builds
	// nothing before it is sent its configuration.
	// The run's systemd user scope is asked for as soon as init is up,
	// beside the same work.
	var early *Early
	var sc *runScope
	if !weaker && s.CommandFound {
		if early = pre.take(n); early == nil {
			early = spawnView(n.Mode, stdio, false)
		}
		defer early.Abort()
		sc = startScope(s, early)
		// On a return before the run starts, the scope's request is over
		// before init is ended (deferred calls run last first): a
		// request still going could otherwise name init's pid after
		// the kernel gave it to another process.
		defer sc.wait()
	} else {
		pre.Abort()
	}
	// TMPDIR is private to this run: a fresh directory under the agent's
	// tmp/, granted instead of tmp/ itself and removed afterwards, so that
	// concurrent or later runs share nothing through it (not even its own
	// extended attributes, or a descriptor kept to it: it is never reused).
	runTmp, err := backend.StateDirs(s)
	if err != nil {
		diag.Errorf(stdio.Err, "%v", err)
		return launch.ExitRefused
	}
	defer os.RemoveAll(runTmp)
	if err := backend.CreateConfig(s); err != nil {
		return refuse(stdio.Err, err)
	}
	if !s.CommandFound {
		diag.Errorf(stdio.Err, "%s: command not found on PATH", s.Argv[0])
		return launch.ExitNotFound
	}
	if banner {
		id := engine.View
		switch {
		case weaker:
			id = engine.Weaker
		case inner != nil:
			id = engine.NonoInView
		}
		launch.Banner(stdio.Err, engine.Must(id).BannerLabel())
	}
	p.ReadWrite = append(p.ReadWrite, TerminalNodes(stdio)...)
	tmp, canonTmp := s.TempDir(), grant.Canonical(s.TempDir())
	for i, d := range p.ReadWrite {
		if d == tmp || d == canonTmp {
			p.ReadWrite[i] = runTmp
		}
	}
	var runFiles []string // files shown read-only for this run only
	routes, routeConf, notes, err := credentialRoutes(s, n, os.LookupEnv)
	if err != nil {
		diag.Errorf(stdio.Err, "%v", err)
		return launch.ExitRefused
	}
	for _, note := range notes {
		diag.Notef(stdio.Err, "%s", note)
	}
	if ext, err := piRoutes(s, routes, routeConf); err != nil {
		return refuse(stdio.Err, err)
	} else if ext != "" {
		p.ReadOnly = append(p.ReadOnly, ext)
		runFiles = append(runFiles, ext)
		s.Argv = piext.WithExtension(s.Argv, ext)
	}
	ca, caFile, warning, err := runCA(s, routes, os.LookupEnv)
	if err != nil {
		return refuse(stdio.Err, fmt.Errorf("the run's CA for credential interception: %v", err))
	}
	if caFile != "" {
		defer os.Remove(caFile)
		p.ReadOnly = append(p.ReadOnly, caFile)
		runFiles = append(runFiles, caFile)
	}
	if warning != "" {
		diag.Warnf(stdio.Err, "%s", warning)
	}
	sess, err := newNetSession(n, s.AgentID, s.AuditDir(), s.ExpectedRefusals, routes, routeConf, ca, caFile, stdio.Err)
	if err != nil {
		diag.Errorf(stdio.Err, "%v", err)
		return launch.ExitRefused
	}
	defer sess.close(true)
	sess.setTerminal(stdio.Out)
	env := withEnv(Env(s, os.LookupEnv), append([]string{"TMPDIR=" + runTmp}, sess.env(n.ProxyPort)...))
	weak := weakerStart(&s, &p, n, stdio, verbose, weaker, sess)
	l := launch.Lifecycle{Argv: s.Argv, Env: env, Dir: s.Workdir, Stdio: stdio, Guard: backend.Guard(s)}
	if weaker {
		l.Start = func(cmd *exec.Cmd) (launch.Started, error) {
			wait, err := weak(cmd)
			return launch.Started{Wait: wait}, err
		}
	} else {
		v := &viewRun{early: early, scope: sc, p: p, s: s, n: n, sess: sess, stderr: stdio.Err, fallback: weak, inner: inner, runTmp: runTmp, runFiles: runFiles}
		l.Prepare, l.Start = v.prepare, v.start
		l.Session = sessionHook(s, n, sess, v, false, stdio)
	}
	if weaker {
		l.Session = sessionHook(s, n, sess, nil, true, stdio)
	}
	return l.Execute()
}

// startedRefusal is why a started session (agent-sandbox start) cannot
// run in the weaker sandbox or under nono in the view ("" when it can).
func startedRefusal(s spec.Spec, weaker bool, inner *Inner) string {
	switch {
	case s.Started == nil:
		return ""
	case weaker:
		return backend.StartRefusal(engine.Weaker)
	case inner != nil:
		return backend.StartRefusal(engine.NonoInView)
	}
	return ""
}

// weakerStart returns the start of the weaker sandbox (Landlock and seccomp
// without a view), for a run under weaker or as the view's fallback. It
// works on execute's own s and p, which it updates as the run starts.
func weakerStart(s *spec.Spec, p *ll.Policy, n Net, stdio launch.Stdio, verbose, weaker bool, sess *netSession) func(cmd *exec.Cmd) (func() error, error) {
	return func(cmd *exec.Cmd) (func() error, error) {
		if len(n.Listen) > 0 {
			return nil, &launch.SetupError{Err: errors.New(weakerListenRefusal)}
		}
		if !weaker && len(s.Caches) > 0 {
			// The view turned out impossible at start (the fallback):
			// the caches its plan layered become the run's own copies.
			s.Caches = weakerCaches(*s)
			p.ReadWrite, p.ReadOnly = weakerCacheGrants(s.Caches, p.ReadWrite, p.ReadOnly)
			goproxy, _ := os.LookupEnv("GOPROXY")
			cmd.Env = withEnv(cmd.Env, cacheEnv(s.Caches, goproxy))
		}
		if err := seedCaches(*s, stdio.Err, verbose); err != nil {
			return nil, &launch.SetupError{Err: err}
		}
		// Without a network namespace the host's loopback is shared:
		// Landlock's TCP rules let the agent reach the broker's port
		// on it and the open ports, by port number alone.
		p.AllowTCPConnect = nil
		for _, port := range n.ForwardPorts() {
			p.AllowTCPConnect = append(p.AllowTCPConnect, uint16(port))
		}
		if n.Mode == posture.NetAllowlist {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return nil, &launch.SetupError{Err: fmt.Errorf("the egress broker cannot listen on the host's loopback: %v", err)}
			}
			port := l.Addr().(*net.TCPAddr).Port
			p.AllowTCPConnect = append(p.AllowTCPConnect, uint16(port))
			cmd.Env = withEnv(cmd.Env, sess.env(port))
			cmd.Args = sess.args(cmd.Args, port)
			sess.serveProxy(l)
		}
		// The weaker sandbox: Landlock, seccomp (no Unix sockets, no
		// keyrings), no_new_privs, and agent-sandbox first, as the
		// trampoline that narrows /proc, which then execs the agent.
		e, err := ll.Plan(*p)
		if err != nil {
			return nil, &launch.SetupError{Err: fmt.Errorf("the landlock backend cannot enforce this policy here: %s", strings.TrimPrefix(err.Error(), "landlock: "))}
		}
		for _, w := range namespaceWarnings(e, *p, n.Mode) {
			diag.Warnf(stdio.Err, "%s", w)
		}
		if verbose {
			describe(stdio.Err, e)
		}
		self, err := backend.Self()
		if err != nil {
			return nil, &launch.SetupError{Err: err}
		}
		roots, err := ll.RootEntries()
		if err != nil {
			return nil, &launch.SetupError{Err: err}
		}
		cmd.Path = self
		cmd.Args = append(append(append([]string{"agent-sandbox", TrampolineArg}, roots...), "--"), cmd.Args...)
		// The trampoline's variables are agent-sandbox's alone: one the
		// folder sets (set_env) or passes (env) is dropped.
		cmd.Env = slices.DeleteFunc(withEnv(cmd.Env, []string{weakerLimits()}), func(kv string) bool { return strings.HasPrefix(kv, holdEnv+"=") })
		// With a memory bound a user manager can apply the trampoline
		// waits, before it execs the agent, until its process is in the
		// run's scope (holdEnv). Where none can, nothing is asked: a
		// memory_max set in agent.toml was refused already (Prepare), the
		// default bound is left out (--dry-run says so).
		var hold *os.File
		if appliedMemoryMax(*s) > 0 {
			r, w, err := os.Pipe()
			if err != nil {
				return nil, &launch.SetupError{Err: err}
			}
			defer r.Close()
			hold = w
			defer hold.Close() // unless the go-ahead was written: the trampoline exits
			cmd.ExtraFiles = append(cmd.ExtraFiles, r)
			cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d", holdEnv, 2+len(cmd.ExtraFiles)))
		}
		// Landlock does not govern chmod, chown, utimes and extended
		// attributes: this process performs them for the agent, inside
		// its writable grants only, outside the protected entries.
		var protected []string
		for _, e := range s.Ledger.ReadOnly() {
			protected = append(protected, e.Path)
		}
		proc, err := ll.StartProtected(cmd, *p, ll.Seccomp{DenyKeyrings: true, DenyUnixSockets: true, DenyUserns: !s.NestedUserns, DenyHostIPC: true}, protected)
		if err != nil {
			return nil, &launch.SetupError{Err: fmt.Errorf("the landlock backend cannot start the agent: %w", err)}
		}
		if hold != nil {
			refusal, warning := scopeOutcome(*s, attachScope(*s, proc.Pid))
			if warning != "" {
				diag.Warnf(stdio.Err, "%s", warning)
			}
			if refusal != nil {
				hold.Close()
				_ = proc.Wait()
				return nil, &launch.SetupError{Err: refusal}
			}
			if _, err := hold.Write([]byte{1}); err != nil {
				// The trampoline is gone (a signal while it waited):
				// its exit status is the run's.
				return proc.Wait, nil
			}
		}
		return proc.Wait, nil
	}
}

// insideView names what confines the agent inside the view on this
// kernel, for --verbose.
func insideView() string {
	abi, _ := ll.ABI()
	if abi < 1 {
		return "seccomp and no_new_privs (no Landlock on this kernel)"
	}
	return fmt.Sprintf("Landlock ABI %d, seccomp and no_new_privs", abi)
}

// ViewWarnings are KernelWarnings for a run in the namespace view: the view
// holds no host socket path and the PID namespace no host process, so
// only abstract Unix sockets with an open (shared) network namespace need
// the kernel's scoping.
func ViewWarnings(p ll.Policy, abi int) []string {
	if abi < ll.ABIScope && p.Network != ll.NetBlocked {
		return []string{abstractUnixWarning(abi)}
	}
	return nil
}

// KernelWarnings are the protections p asks for that a kernel with Landlock
// ABI abi gives only in part. They depend on the ABI alone, so plan.Build
// puts them in the plan (and --dry-run shows them); Execute adds the ones
// that depend on user namespaces.
func KernelWarnings(p ll.Policy, abi int) []string {
	var w []string
	if p.Network == ll.NetBlocked && abi < ll.ABIResolveUnix {
		w = append(w, fmt.Sprintf("Landlock ABI %d cannot confine Unix sockets by path (needs ABI %d): with the network blocked the agent can still connect to a host service whose socket path it knows (the Docker socket, $XDG_RUNTIME_DIR/bus)", abi, ll.ABIResolveUnix))
	}
	if abi < ll.ABIScope {
		w = append(w, fmt.Sprintf("Landlock ABI %d cannot scope signals (needs ABI %d, Linux 6.12): the agent can signal your other processes", abi, ll.ABIScope))
		if p.Network != ll.NetBlocked {
			w = append(w, abstractUnixWarning(abi))
		}
	}
	return w
}

// namespaceWarnings are printed when a blocked network gets no private
// network namespace (user namespaces unavailable).
// An allow list gets weakerAllowlistWarning instead of the first line,
// which says the same of its network (one warning per fact).
func namespaceWarnings(e ll.Enforcement, p ll.Policy, mode posture.NetMode) []string {
	if p.Network != ll.NetBlocked || e.NetNamespace {
		return nil
	}
	var w []string
	if mode != posture.NetAllowlist {
		w = append(w, "network blocked with Landlock TCP rules only (no user namespaces here): UDP and DNS are not confined")
	}
	if !e.ScopeAbstractUnix {
		w = append(w, abstractUnixWarning(e.ABI))
	}
	return w
}

// abstractUnixWarning says that ABI abi leaves abstract Unix sockets open.
func abstractUnixWarning(abi int) string {
	return fmt.Sprintf("Landlock ABI %d cannot scope abstract Unix sockets (needs ABI %d): the agent can reach host services listening on them", abi, ll.ABIScope)
}

// describe prints how the policy is enforced, for --verbose.
func describe(w io.Writer, e ll.Enforcement) {
	diag.Notef(w, "landlock ABI %d; network namespace %v; TCP rules %v; signal scoping %v; abstract-socket scoping %v",
		e.ABI, e.NetNamespace, e.TCPRules, e.ScopeSignals, e.ScopeAbstractUnix)
	for _, x := range e.Warnings {
		diag.Notef(w, "note: %s", x)
	}
}

func refuse(w io.Writer, err error) int {
	msg := strings.TrimPrefix(err.Error(), "landlock: ")
	diag.Errorf(w, "the landlock backend cannot enforce this policy here: %s", msg)
	return launch.ExitRefused
}

// TrampolineArg is the hidden first argument that makes agent-sandbox act as
// the trampoline inside the sandbox.
const TrampolineArg = "__landlock-exec"

// Trampoline runs inside the sandbox as the first program: args are the
// entries of / to keep readable, "--", and the agent's argv. It narrows /proc
// (ll.ExecNarrowed) and execs the agent; it returns only on failure,
// with 127 when the agent is missing and 125 otherwise.
func Trampoline(args []string, stderr io.Writer) int {
	sep := -1
	for i, a := range args {
		if a == "--" {
			sep = i
			break
		}
	}
	if sep < 0 || sep == len(args)-1 {
		diag.Errorf(stderr, "%s is internal: ROOTS... -- ARGV...", TrampolineArg)
		return launch.ExitRefused
	}
	env, ok := awaitScope(os.Environ())
	if !ok {
		return launch.ExitRefused // the parent refused the run and says why
	}
	env = applyLimits(env, stderr)
	err := ll.ExecNarrowed(args[:sep], args[sep+1:], env)
	diag.Errorf(stderr, "starting %s in the sandbox: %v", args[sep+1], err)
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return launch.ExitNotFound
	}
	if errors.Is(err, fs.ErrPermission) {
		return launch.ExitNotExecable
	}
	return launch.ExitRefused
}

// TerminalNodes are the /dev/pts nodes among the agent's standard streams:
// its own terminal, which it may use; the user's other terminals stay out
// of reach.
func TerminalNodes(stdio launch.Stdio) []string {
	var out []string
	for _, stream := range []any{stdio.In, stdio.Out, stdio.Err} {
		f, ok := stream.(*os.File)
		if !ok || !launch.IsTerminal(f) {
			continue
		}
		target, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
		if err == nil && strings.HasPrefix(target, "/dev/pts/") && !slices.Contains(out, target) {
			out = append(out, target)
		}
	}
	return out
}

// viewRun is the lifecycle's start and preparation for the namespace
// view. When this host turns out not to allow a view (user namespaces
// restricted), and the user opted into the weaker sandbox, fallback
// starts the agent instead; without the opt-in the run is refused.
type viewRun struct {
	early    *Early
	scope    *runScope
	p        ll.Policy
	s        spec.Spec
	n        Net
	sess     *netSession
	stderr   io.Writer
	fallback func(cmd *exec.Cmd) (func() error, error)
	// set and masks are the view's placeholders and guarded masks, once
	// made (Linux).
	set   *placeholder.Set
	masks map[string]bool
	// layers are the caches' writable layers for this run (cacheLayers).
	layers map[string]string
	// inner is the second sandbox the agent starts under, or nil;
	// runTmp is the run's TMPDIR and runFiles the files shown read-only
	// for this run only, which inner's policy grants again.
	inner    *Inner
	runTmp   string
	runFiles []string
	// exec starts a command in the running view (agent-sandbox exec) and
	// execs counts those still running: set once the view started.
	exec  func(argv []string, stdio []*os.File) (session.Proc, error)
	execs func() int
	// end asks the running view to end (agent-sandbox stop, a started
	// session's idle timeout): SIGTERM, then SIGKILL after the grace.
	end func(grace time.Duration) error
	// execTTY is exec with a terminal of the sandbox's (a pty; its
	// master is returned).
	execTTY func(argv []string, rows, cols uint16) (session.Proc, *os.File, error)
	// serveExec hands the session's exec socket to the view's init,
	// which serves exec on it itself (no hop through this process).
	serveExec func(l *os.File, token string) error
	// forward listens on a port of the view's own loopback
	// (agent-sandbox allow localhost:PORT).
	forward func(port int, ipv6 bool) (net.Listener, error)
}
