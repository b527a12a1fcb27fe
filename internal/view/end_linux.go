//go:build linux

package view

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/landlock"
)

// A session's end on request (agent-sandbox stop, a started session's
// idle timeout), and the session with no agent (agent-sandbox start):
// init starts no process of its own; the session holds the processes
// exec starts and lasts, with none, until the parent asks it to end ("Q")
// or init is sent SIGINT, SIGTERM or SIGHUP (its supervisor was).

// holdSession is runAgent for a Config with NoAgent: it keeps the
// session open for exec'd processes until it is asked to end and the
// last of them has ended, and reports a status of 0.
func holdSession(c Config, rules *landlock.Ruleset, sigs <-chan os.Signal) report {
	keepRules(c, rules)
	session.Lock()
	session.agentDone, session.held = true, true
	session.Unlock()
	for {
		if _, done := reap(0); done {
			ws := 0
			return report{Status: &ws}
		}
		sig := <-sigs
		switch sig {
		case unix.SIGCHLD:
		case unix.SIGINT, unix.SIGTERM, unix.SIGHUP:
			endSessionAfter(defaultGrace)
		default:
			signalAgent(0, sig.(unix.Signal), func(unix.Signal) {})
		}
	}
}

// defaultGrace is how long the processes of a session asked to end have
// after SIGTERM before SIGKILL.
const defaultGrace = 5 * time.Second

// endRequest serves a "Q" request: "Q<grace in ms>" ends the session: its
// processes (the agent, the exec'd ones) get SIGTERM, then, after grace,
// every process of the namespace SIGKILL. The answer is "q".
func endRequest(body string) {
	ms, err := strconv.Atoi(body)
	if err != nil || ms < 0 {
		_, _ = unix.Write(controlFd, []byte("!bad request"))
		return
	}
	endSessionAfter(time.Duration(ms) * time.Millisecond)
	_, _ = unix.Write(controlFd, []byte("q"))
}

// endSessionAfter releases a held session and sends SIGTERM to every
// process of the session, then SIGKILL to every process of the namespace
// after grace; it wakes init's wait (a SIGCHLD to itself), which ends the
// session once no process is left.
func endSessionAfter(grace time.Duration) {
	session.Lock()
	session.held = false
	session.over = true // no more execs
	pids := make([]int, 0, len(session.live)+1)
	for pid := range session.live {
		pids = append(pids, pid)
	}
	if a := int(agentPid.Load()); a > 0 && !session.agentDone {
		pids = append(pids, a)
	}
	session.Unlock()
	for _, pid := range pids {
		_ = unix.Kill(pid, unix.SIGTERM)
	}
	if len(pids) > 0 && os.Getpid() == 1 { // kill(-1) is init's alone
		time.AfterFunc(grace, func() {
			// From PID 1, kill(-1) reaches every other process of
			// the namespace; init's reap then ends the session.
			_ = unix.Kill(-1, unix.SIGKILL)
		})
	}
	// Init may be waiting for a signal with nothing left to reap.
	_ = unix.Kill(os.Getpid(), unix.SIGCHLD)
}

// End asks the session to end: its processes get SIGTERM, then SIGKILL
// after grace; the session ends, as after its last process, once they
// are gone (Ended returns then).
func (p *Process) End(grace time.Duration) error {
	msg, f, err := p.request([]byte("Q" + strconv.FormatInt(grace.Milliseconds(), 10)))
	if f != nil {
		f.Close()
	}
	if err == nil && msg != "q" {
		err = errors.New(strings.TrimPrefix(msg, "!"))
	}
	if err != nil {
		return fmt.Errorf("view: asking the sandbox to end: %w", err)
	}
	return nil
}
