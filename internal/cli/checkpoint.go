package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// Checkpoint holds the arguments of `agent-sandbox runs`, `diff` and
// `undo`: the workdir's runs, what one changed, putting it back.
type Checkpoint struct {
	// Workdir is --workdir ("": the current directory).
	Workdir string
	// Run is the run named (an id or a unique prefix; "": the latest).
	Run string
	// Yes makes undo act without asking.
	Yes bool
}

// Subcommands of the checkpoint store.
const (
	CmdRuns = "runs"
	CmdDiff = "diff"
	CmdUndo = "undo"
)

// CheckpointModes are the values of --checkpoint.
var CheckpointModes = []string{"on", "off", "required"}

func parseCheckpoint(cmd string, args []string) (Invocation, error) {
	usage := "agent-sandbox " + cmd + " [--workdir DIR] [RUN]"
	switch cmd {
	case CmdRuns:
		usage = "agent-sandbox runs [--workdir DIR]"
	case CmdUndo:
		usage = "agent-sandbox undo [--yes] [--workdir DIR] [RUN]"
	}
	var c Checkpoint
	rest, help, err := subcommand(cmd, usage, args, func(fs *pflag.FlagSet) {
		fs.StringVar(&c.Workdir, "workdir", "", "")
		if cmd == CmdUndo {
			fs.BoolVar(&c.Yes, "yes", false, "")
		}
	})
	switch {
	case err != nil:
		return Invocation{}, err
	case help:
		return Invocation{Command: CmdHelp}, nil
	case cmd == CmdRuns && len(rest) > 0:
		return Invocation{}, fmt.Errorf("runs takes no arguments (got %q); usage: %s", rest[0], usage)
	case len(rest) > 1:
		return Invocation{}, fmt.Errorf("%s takes at most one RUN (got %d arguments); usage: %s", cmd, len(rest), usage)
	}
	if len(rest) == 1 {
		if strings.TrimSpace(rest[0]) == "" {
			return Invocation{}, fmt.Errorf("%s: empty RUN; give a run id (`agent-sandbox runs` lists them) or none for the latest", cmd)
		}
		c.Run = rest[0]
	}
	return Invocation{Command: cmd, Checkpoint: c}, nil
}

// checkpointValue is --checkpoint's value, checked as it is set.
type checkpointValue string

func (v *checkpointValue) String() string { return string(*v) }

// Type is the flag's type name, for pflag.
func (v *checkpointValue) Type() string { return "mode" }

// Set checks and sets the value.
func (v *checkpointValue) Set(s string) error {
	for _, m := range CheckpointModes {
		if s == m {
			*v = checkpointValue(s)
			return nil
		}
	}
	return errors.New("want on, off or required")
}
