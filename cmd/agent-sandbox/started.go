package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agent-sandbox/agent-sandbox/internal/backend"
	"github.com/agent-sandbox/agent-sandbox/internal/cli"
	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	"github.com/agent-sandbox/agent-sandbox/internal/engine"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/plan"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/session"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// superviseArg is the hidden first argument of a started session's
// supervisor: agent-sandbox start re-executes itself, detached, as
// `agent-sandbox superviseArg ID start ARGS...`.
const superviseArg = "__agent-sandbox-started-session"

// readyFd is the supervisor's descriptor of the pipe to `start`: it
// writes "ready OFFSET" once the session's control socket listens (OFFSET:
// how much of its log the start printed), and closes it.
const readyFd = 3

// stopWait bounds how long agent-sandbox stop waits for a session's end
// (its processes' grace, then the audit and the workdir's scan).
const stopWait = 10 * time.Minute

// startSession is `agent-sandbox start [run flags] [AGENT]`: it starts the
// session's supervisor detached (a session of its own, no terminal, its
// output in the session's log under the state root), waits until its
// control socket listens, prints what the start printed (warnings) and
// the session's id (or with --json its ps record), and returns 0; when
// the session does not start, what it printed and its status.
func startSession(e env, st cli.Start, args []string) int {
	root := e.home.StateRoot()
	if err := os.MkdirAll(session.Dir(root), 0o700); err != nil {
		return fail(e.stdio.Err, fmt.Errorf("start: %v", err))
	}
	id := session.NewID()
	logPath := session.LogPath(root, id)
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return fail(e.stdio.Err, fmt.Errorf("start: the session's log: %v", err))
	}
	defer logf.Close()
	// Held, through the log's open file, by the supervisor (and the
	// sandbox's init) for as long as it lives: a log whose lock is free
	// and that has no findings beside it is a killed session's (Orphans).
	if err := session.LockLog(logf); err != nil {
		return fail(e.stdio.Err, fmt.Errorf("start: locking the session's log: %v", err))
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		return fail(e.stdio.Err, fmt.Errorf("start: %v", err))
	}
	defer null.Close()
	rd, wr, err := os.Pipe()
	if err != nil {
		return fail(e.stdio.Err, fmt.Errorf("start: %v", err))
	}
	defer rd.Close()
	exe, err := os.Executable()
	if err != nil {
		wr.Close()
		return fail(e.stdio.Err, fmt.Errorf("start: finding agent-sandbox itself: %v", err))
	}
	cmd := exec.Command(exe, append([]string{superviseArg, id}, args...)...)
	cmd.Args[0] = os.Args[0] // the name it was started by
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, logf, logf
	cmd.ExtraFiles = []*os.File{wr}
	// A session of its own: no controlling terminal, and neither the
	// terminal's signals nor its hang-up reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		wr.Close()
		os.Remove(logPath)
		return fail(e.stdio.Err, fmt.Errorf("start: starting the session's supervisor: %v", err))
	}
	wr.Close()
	// An interrupt before the session is ready ends it.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	var interrupted sync.Once
	go func() {
		if _, ok := <-sigs; ok {
			interrupted.Do(func() { _ = cmd.Process.Signal(syscall.SIGTERM) })
		}
	}()
	line, _ := bufio.NewReader(rd).ReadString('\n')
	offset, ready := readyOffset(line)
	if !ready {
		code := launch.ExitStatus(cmd.Wait())
		if b, err := os.ReadFile(logPath); err == nil {
			e.stdio.Err.Write(b)
		}
		os.Remove(logPath)
		if code == 0 {
			code = launch.ExitRefused
		}
		return code
	}
	_ = cmd.Process.Release()
	if b, err := readRange(logPath, 0, offset); err == nil {
		e.stdio.Err.Write(b)
	}
	if !st.JSON {
		fmt.Fprintln(e.stdio.Out, id)
		return 0
	}
	c, err := session.Dial(root, id)
	if err != nil {
		return fail(e.stdio.Err, fmt.Errorf("start: session %s started but does not answer: %v", id, err))
	}
	defer c.Close()
	info, err := c.Info()
	if err != nil {
		return fail(e.stdio.Err, fmt.Errorf("start: session %s started but does not answer: %v", id, err))
	}
	b, _ := json.Marshal(info)
	fmt.Fprintln(e.stdio.Out, string(b))
	return 0
}

// readyOffset parses the supervisor's "ready OFFSET" line.
func readyOffset(line string) (int64, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	return n, err == nil && n >= 0
}

// readRange reads path's bytes from off to end (end < 0: to its end).
func readRange(path string, off, end int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	if end < 0 {
		return io.ReadAll(f)
	}
	return io.ReadAll(io.LimitReader(f, end-off))
}

// superviseSession is the detached supervisor of a started session (args:
// ID, then `start ARGS...`): the run of its plan with no agent process.
// Once the session has ended it keeps what it printed after it was ready
// (the run's warnings, the after-run findings) for stop, ps or the next
// run in the workdir (session.WriteFindings), and removes its log.
func superviseSession(e env, args []string) int {
	if len(args) < 2 {
		return fail(e.stdio.Err, errors.New("the started session's supervisor needs an id and a start command line"))
	}
	id := args[0]
	inv, err := cli.Parse(args[1:])
	if err == nil && inv.Command != cli.CmdStart {
		err = fmt.Errorf("not a start command line: %q", strings.Join(args[1:], " "))
	}
	if err != nil {
		return fail(e.stdio.Err, err)
	}
	ready := os.NewFile(readyFd, "ready")
	root := e.home.StateRoot()
	logPath := session.LogPath(root, id)
	var mu sync.Mutex
	reason, offset, wasReady, agentID := "ended", int64(0), false, ""
	began := time.Now()
	e.started = &spec.Started{
		ID:          id,
		IdleTimeout: inv.Start.IdleTimeout,
		Ready: func(agent string) {
			var size int64
			if fi, err := os.Stderr.Stat(); err == nil {
				size = fi.Size()
			}
			mu.Lock()
			offset, wasReady, agentID = size, true, agent
			mu.Unlock()
			if ready != nil {
				fmt.Fprintf(ready, "ready %d\n", size)
				ready.Close()
			}
		},
		Ended: func(r string) {
			mu.Lock()
			reason = r
			mu.Unlock()
		},
	}
	r := inv.Start.Run
	if r.Posture.Backend == "" {
		// A started session is the namespace view's: the built-in
		// engine, whatever the folder's default backend.
		r.Posture.Backend = posture.Landlock
	}
	code := runAgent(e, r)
	mu.Lock()
	defer mu.Unlock()
	if !wasReady {
		return code // start prints the log and removes it
	}
	text, _ := readRange(logPath, offset, -1)
	workdir, _ := resolveWorkdir(r.Workdir)
	f := session.Findings{ID: id, Agent: agentID, Workdir: workdir, Started: began, Ended: time.Now(), Reason: reason, Code: code, Text: string(text)}
	if err := session.WriteFindings(root, f); err != nil {
		diag.Errorf(e.stdio.Err, "keeping session %s's findings: %v", id, err)
		return code
	}
	os.Remove(logPath)
	return code
}

// startRefusal is why the plan p cannot be a started session ("" when it
// can): only the namespace view runs one.
func startRefusal(p *plan.Plan) string {
	var id engine.ID
	if p.Sandboxed {
		id = p.EngineID()
	}
	return backend.StartRefusal(id)
}

// stopSession is `agent-sandbox stop SESSION|AGENT`: it asks the session
// to end, waits for its end (its processes' grace, the audit and the
// scan, once) and prints a started session's findings as its run printed
// them. The status is the session's supervisor's: 0, 128+N when an
// interrupt cut its checks short, 125 when it failed; 125 when the
// session cannot be reached or does not end.
func stopSession(e env, s cli.Stop) int {
	root := e.home.StateRoot()
	info, err := session.Find(root, s.Session)
	if err != nil {
		return fail(e.stdio.Err, fmt.Errorf("stop: %v", err))
	}
	c, err := session.Dial(root, info.ID)
	if err != nil {
		return fail(e.stdio.Err, fmt.Errorf("stop: %v", err))
	}
	err = c.Stop()
	c.Close()
	if err != nil {
		return fail(e.stdio.Err, fmt.Errorf("stop session %s: %v", info.ID, err))
	}
	if !session.Wait(info.Pid, stopWait) {
		return fail(e.stdio.Err, fmt.Errorf("stop: session %s was asked to end but its supervisor (pid %d) still runs after %s", info.ID, info.Pid, stopWait))
	}
	if !info.Detached {
		fmt.Fprintf(e.stdio.Err, "agent-sandbox: session %s (%s) ended; its run printed its findings where it ran\n", info.ID, info.Agent)
		return 0
	}
	f, err := session.TakeFindings(root, info.ID)
	if err != nil {
		return fail(e.stdio.Err, fmt.Errorf("stop: session %s ended but left no findings (its supervisor was killed?): %v; what it printed, if anything, is in %s", info.ID, err, session.LogPath(root, info.ID)))
	}
	io.WriteString(e.stdio.Err, f.Text)
	return f.Code
}

// stopClaim is how long the findings of a session ended by stop are left
// to the stop that waits for them before ps or a run prints them.
const stopClaim = time.Minute

// printOrphans prints, once, what the started sessions whose supervisor
// was killed printed (their log), and removes it: their findings were
// never kept (the next run in their workdir audits what they left).
func printOrphans(e env) {
	root := e.home.StateRoot()
	for _, id := range session.Orphans(root) {
		path := session.LogPath(root, id)
		b, err := os.ReadFile(path)
		if err != nil || os.Remove(path) != nil {
			continue
		}
		diag.Warnf(e.stdio.Err, "session %s ended without keeping its findings (its supervisor was killed): the next run in its workdir audits what it left; what it printed:", id)
		e.stdio.Err.Write(b)
	}
}

// printPending prints, once, the findings of the started sessions of
// workdir that ended without a stop to print them (their idle timeout),
// and removes them.
func printPending(e env, workdir string) {
	root := e.home.StateRoot()
	for _, f := range session.Pending(root, workdir) {
		if f.Reason == "stop" && time.Since(f.Ended) < stopClaim {
			continue
		}
		if _, err := session.TakeFindings(root, f.ID); err != nil {
			continue // another ps or run took them
		}
		diag.Notef(e.stdio.Err, "%s", f.Describe())
		io.WriteString(e.stdio.Err, f.Text)
	}
}
