package landlock

import (
	"fmt"
	"os"
	"time"

	"github.com/agent-sandbox/agent-sandbox/internal/backend"
	"github.com/agent-sandbox/agent-sandbox/internal/broker"
	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	"github.com/agent-sandbox/agent-sandbox/internal/engine"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/session"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// sessionHook is the run's control channel (launch.Lifecycle.Session):
// ps sees the session; exec reaches the view's init (v, when the view
// started); allow reaches the broker (sess).
func sessionHook(s spec.Spec, n Net, sess *netSession, v *viewRun, weaker bool, stdio launch.Stdio) func(launch.Started) func() {
	return func(launch.Started) func() {
		id := sessionEngine(v, weaker)
		info := session.Info{Agent: s.AgentID, Folder: s.AgentDir, Workdir: s.Workdir, Engine: string(id), Network: string(n.Mode), Started: time.Now()}
		if st := s.Started; st != nil {
			info.ID, info.Detached, info.IdleTimeout = st.ID, true, st.IdleTimeout.String()
		}
		srv, err := session.Open(s.StateRoot(), info, sessionHandlers(s, n, sess, v, id))
		if err != nil {
			diag.Warnf(stdio.Err, "this run has no control channel (agent-sandbox ps, exec and allow cannot reach it): %v", err)
			if s.Started != nil && v != nil && v.end != nil {
				// Nothing could reach a started session: it ends.
				_ = v.end(0)
			}
			return nil
		}
		if id == engine.View && v.serveExec != nil {
			directExec(srv, v.serveExec)
		}
		done := make(chan struct{})
		if st := s.Started; st != nil && v != nil && v.end != nil && v.execs != nil {
			go idleWatch(st.IdleTimeout, v.execs, func() { _ = endSession(st, "idle", v.end) }, done)
			if st.Ready != nil {
				st.Ready(s.AgentID)
			}
		}
		return func() { close(done); srv.Close() }
	}
}

// sessionEngine is the engine a session reports (ps) and whose exec rules
// apply: the view, nono inside it, or the weaker sandbox.
func sessionEngine(v *viewRun, weaker bool) engine.ID {
	switch {
	case weaker || v == nil || v.exec == nil:
		return engine.Weaker
	case v.inner != nil:
		return engine.NonoInView
	}
	return engine.View
}

// sessionHandlers are what the control channel of a session on engine id
// answers: info always; exec in the view only; allow where the broker
// runs; stop where the view can be ended.
func sessionHandlers(s spec.Spec, n Net, sess *netSession, v *viewRun, id engine.ID) session.Handlers {
	h := session.Handlers{
		Info: func(i *session.Info) {
			if s.Started == nil {
				i.Processes = 1 // the agent
			}
			if v != nil && v.execs != nil {
				i.Processes += v.execs()
			}
			if sess != nil && sess.proxy != nil {
				sum := sess.proxy.Summary()
				i.Allowed, i.Refused = sum.Allowed, sum.Refused
			}
		},
		Unsupported: map[string]string{"exec": backend.WeakerExecRefusal},
	}
	switch id {
	case engine.NonoInView:
		// init would start the command in the view, without nono's own
		// layer the agent runs under: a wider process than the
		// session's agent.
		h.Unsupported["exec"] = backend.NonoInViewExecRefusal
	case engine.View:
		h.Exec = func(argv []string, fds []*os.File) (session.Proc, error) { return v.exec(argv, fds) }
		h.ExecTTY = v.execTTY
	}
	h.Allow, h.Unsupported["allow"] = sessionAllow(s, n, sess, v)
	if v != nil && v.end != nil {
		h.Stop = func() error { return endSession(s.Started, "stop", v.end) }
	}
	return h
}

// stopGrace is how long a session's processes have after SIGTERM before
// SIGKILL when agent-sandbox stop (or a started session's idle timeout)
// ends it: as long as quiesce gives nothing (it kills at once), and
// enough for a dev server or a test run to write its last state.
const stopGrace = 5 * time.Second

// endSession ends a session on request (reason "stop" or "idle"): a
// started session (st) is told why first.
func endSession(st *spec.Started, reason string, end func(time.Duration) error) error {
	if st != nil && st.Ended != nil {
		st.Ended(reason)
	}
	return end(stopGrace)
}

// idleWatch calls end once execs has counted no process for timeout,
// unless done is closed first. The idle time counts from the first look
// that finds none (up to a tick after the last one ended: never early).
func idleWatch(timeout time.Duration, execs func() int, end func(), done <-chan struct{}) {
	tick := timeout / 4
	tick = min(max(tick, 50*time.Millisecond), time.Second)
	t := time.NewTicker(tick)
	defer t.Stop()
	idleSince, busy := time.Now(), false
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			select {
			case <-done: // stopped while the tick waited: never end after
				return
			default:
			}
			if execs() > 0 {
				busy = true
				continue
			}
			if busy {
				idleSince, busy = now, false
			}
			if now.Sub(idleSince) >= timeout {
				end()
				return
			}
		}
	}
}

// directExec gives the view's init the session's exec socket, on which it
// serves exec itself: the caller's request goes to the process that
// starts the command, not through this one. Where that fails, exec goes
// through the control socket as before (the socket is removed).
func directExec(srv *session.Server, serve func(*os.File, string) error) {
	l, tok, err := srv.ListenExec()
	if err != nil {
		return
	}
	defer l.Close()
	if err := serve(l, tok); err != nil {
		srv.RemoveExec()
	}
}

// sessionAllow is the session's allow request, or why this run's network
// cannot change.
func sessionAllow(s spec.Spec, n Net, sess *netSession, v *viewRun) (func(string) (string, error), string) {
	switch {
	case n.Mode == posture.NetOpen:
		return nil, "allow: this session's network is open (--network open): every host is reachable already"
	case n.Mode != posture.NetAllowlist || sess == nil || sess.proxy == nil:
		return nil, "allow: this session's network is blocked (--offline, or no host allowed): it has no egress broker to admit a host; start the agent again with --allow-host HOST"
	}
	return func(entry string) (string, error) {
		host, port, err := broker.CheckEntry(entry)
		if err != nil {
			return "", err
		}
		forwarded := false
		if broker.Loopback(host) && port != 0 {
			if forwarded = sess.proxy.Forwarded(port); !forwarded && v != nil && v.forward != nil {
				// As at the start: the sandbox's own loopback port,
				// 127.0.0.1 and (where it has IPv6) ::1, relayed to
				// the host's.
				l, err := v.forward(port, false)
				if err != nil {
					return "", err
				}
				why := fmt.Sprintf("agent-sandbox allow %s", entry)
				sess.serveForward(l, Port{Port: port, Why: why})
				if l6, err := v.forward(port, true); err == nil {
					sess.serveForward(l6, Port{Port: port, Why: why})
				}
				forwarded = true
			}
		}
		e, err := sess.proxy.AllowAdd(entry, forwarded)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("allowed %s in the running session of %s until it ends (agent-sandbox log %s shows it)", e, s.AgentID, s.AgentID), nil
	}, ""
}
