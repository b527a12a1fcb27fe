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
