package backend

import (
	"fmt"

	"github.com/agent-sandbox/agent-sandbox/internal/engine"
)

// The reasons exec is refused, by engine: agent-sandbox start, which
// needs exec, gives the same (StartRefusal).
var (
	// WeakerExecRefusal is why exec is refused in the weaker sandbox.
	WeakerExecRefusal = NoExec("the weaker sandbox", "no process of agent-sandbox stays inside the agent's Landlock domain that could start another, and a Landlock domain cannot be entered from outside; the namespace view has exec")
	// NonoInViewExecRefusal is why exec is refused for nono inside the
	// view.
	NonoInViewExecRefusal = NoExec("nono inside the namespace view", "the view's init would start the command without nono's own Landlock layer, which the agent runs under: it would be wider than the session's agent")
	// NonoExecRefusal is why exec is refused for nono alone.
	NonoExecRefusal = NoExec("nono alone", "no process of agent-sandbox stays inside nono's Landlock domain that could start another, and a Landlock domain cannot be entered from outside")
)

// StartRefusal is why agent-sandbox start is refused where the run would
// be in engine id ("" : unsandboxed): a session with no agent process is
// the namespace view's alone, whose init starts exec'd commands.
func StartRefusal(id engine.ID) string {
	const use = "agent-sandbox start needs the built-in engine's namespace view (--sandbox-backend landlock, on a host with user namespaces)"
	why := ""
	switch id {
	case engine.View:
		return ""
	case engine.Weaker:
		why = WeakerExecRefusal
	case engine.NonoInView:
		why = NonoInViewExecRefusal
	case engine.Nono:
		why = NonoExecRefusal
	case engine.Sbx:
		why = "sbx runs the agent in its microVM, and a session with no agent there is not built yet"
	default:
		why = "an unsandboxed run (--no-sandbox) has no sandbox to start commands in"
	}
	return fmt.Sprintf("start: %s; %s", why, use)
}
