package agent

import (
	"errors"
	"fmt"
	"strings"
)

// CommandID is the agent id of `agent-sandbox run -- CMD`: its state dir
// is $XDG_STATE_HOME/agent-sandbox/agents/run whatever CMD is.
const CommandID = "run"

// ForCommand is the folder of `agent-sandbox run -- CMD`: the built-in
// shell agent's policy (workdir read-write, offline, no folder files of its
// own) running cmd instead of the shell. cmd is a name looked up on PATH or
// a path.
func ForCommand(cmd string) (*Folder, error) {
	switch {
	case strings.TrimSpace(cmd) == "":
		return nil, errors.New("run: empty command name")
	case strings.ContainsAny(cmd, "\x00\n"):
		return nil, fmt.Errorf("run: command %q contains a control character", cmd)
	case strings.HasPrefix(cmd, "~"):
		return nil, fmt.Errorf("run: command %q: ~ is not expanded here (a shell expands it only unquoted); write the absolute path", cmd)
	}
	f, err := LoadBuiltin("shell")
	if err != nil {
		return nil, err
	}
	c := *f.Config
	c.Command, c.Args = cmd, nil
	c.Description = "agent-sandbox run -- " + cmd
	f.Config, f.ID = &c, CommandID
	return f, nil
}

// NotInstalled is the one line said when the folder's command (cmd, as
// looked up) is not on PATH: what the agent is (its description) and, when
// its [sbx] install names an npm package, how to install it.
func (f *Folder) NotInstalled(cmd string) string {
	if f.ID == CommandID {
		return fmt.Sprintf("run: command %q not found on PATH", cmd)
	}
	s := fmt.Sprintf("%s is not installed: %q is not on PATH", f.ID, cmd)
	if d := f.Config.Description; d != "" {
		s += " (" + d + ")"
	}
	if pkg, ok := strings.CutPrefix(f.Config.Sbx.Install, "npm:"); ok {
		s += "; install it with `npm install -g " + pkg + "`, then run agent-sandbox " + f.ID + " again"
	}
	return s
}
