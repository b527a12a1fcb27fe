package cli

import (
	"fmt"

	"github.com/agent-sandbox/agent-sandbox/internal/suggest"
)

// Agents holds the arguments of `agent-sandbox agents [show NAME | copy
// NAME [DIR]]`.
type Agents struct {
	// Action is "" (list), "show" or "copy".
	Action string
	// Name is the agent name (or folder path) to show or copy.
	Name string
	// Dir is where copy writes the folder; "" means
	// $XDG_CONFIG_HOME/agent-sandbox/agents/NAME.
	Dir string
}

// parseAgents parses the arguments after `agents`.
func parseAgents(args []string) (Invocation, error) {
	const usage = "agent-sandbox agents [show NAME | copy NAME [DIR]]"
	inv := Invocation{Command: CmdAgents}
	if len(args) == 0 {
		return inv, nil
	}
	a := Agents{Action: args[0]}
	switch {
	case a.Action == "-h" || a.Action == "--help":
		return Invocation{Command: CmdHelp}, nil
	case a.Action != "show" && a.Action != "copy":
		return Invocation{}, fmt.Errorf("agents: unknown action %q%s; usage: %s", a.Action, suggest.Phrase(a.Action, []string{"show", "copy"}), usage)
	case len(args) < 2 || args[1] == "":
		return Invocation{}, fmt.Errorf("agents %s: name an agent; usage: %s", a.Action, usage)
	case a.Action == "show" && len(args) > 2, a.Action == "copy" && len(args) > 3:
		return Invocation{}, fmt.Errorf("agents %s: too many arguments (%q); usage: %s", a.Action, args[2:], usage)
	}
	a.Name = args[1]
	if len(args) == 3 {
		if args[2] == "" {
			return Invocation{}, fmt.Errorf("agents copy: empty DIR; usage: %s", usage)
		}
		a.Dir = args[2]
	}
	inv.Agents = a
	return inv, nil
}
