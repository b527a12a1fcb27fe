package backend

import (
	"fmt"
	"time"

	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/session"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// SessionHook is launch.Lifecycle.Session for an engine other than the
// built-in one (nono alone, sbx): ps lists the session; h says what else
// it can do (a nil operation is refused with h.Unsupported's reason).
func SessionHook(s spec.Spec, engine string, h session.Handlers, stdio launch.Stdio) func(launch.Started) func() {
	return func(launch.Started) func() {
		info := session.Info{Agent: s.AgentID, Folder: s.AgentDir, Workdir: s.Workdir, Engine: engine, Network: string(s.Network.Mode), Started: time.Now()}
		if h.Info == nil {
			h.Info = func(i *session.Info) { i.Processes = 1 }
		}
		srv, err := session.Open(s.StateRoot(), info, h)
		if err != nil {
			diag.Warnf(stdio.Err, "this run has no control channel (agent-sandbox ps, exec and allow cannot reach it): %v", err)
			return nil
		}
		return srv.Close
	}
}

// NoExec is the refusal of exec by an engine that keeps no process inside
// its sandbox that could start another.
func NoExec(engine, why string) string {
	return fmt.Sprintf("exec: not supported by this engine yet (%s): %s", engine, why)
}

// NoAllow is the refusal of allow by an engine whose network cannot
// change while it runs.
func NoAllow(engine, why string) string {
	return fmt.Sprintf("allow: %s cannot change a running sandbox's network (%s): stop the agent and start it again with --allow-host HOST, or add the host to the agent folder's sandbox/nono.json", engine, why)
}
