package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/agent-sandbox/agent-sandbox/internal/suggest"
)

// Subcommands are the first words that are not agent names.
var Subcommands = []string{CmdRun, CmdAgents, CmdPrune, CmdDoctor, CmdResolve, CmdLog, CmdVersion, CmdHelp, CmdWhy, CmdRuns, CmdDiff, CmdUndo}

// flagSuggestion is the did-you-mean of pflag's "unknown flag: --NAME".
func flagSuggestion(fs *pflag.FlagSet, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return ""
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if m := suggest.Closest(name, names); m != "" {
		return ` (did you mean --` + m + `?)`
	}
	return ""
}

// valueFlags are the run flags that take a value as the next argument.
var valueFlags = map[string]bool{"--allow-host": true, "--workdir": true, "--read": true, "--write": true, "--sandbox-backend": true, "--network": true}

// tookTheAgent explains an unknown flag that follows a value flag whose
// value was probably meant as the agent (`--allow-host shell -c x`: the
// flag took "shell", and "-c" became agent-sandbox's): "" otherwise.
func tookTheAgent(args []string, err error) string {
	msg := err.Error()
	bad := ""
	if i := strings.LastIndex(msg, " in "); strings.HasPrefix(msg, "unknown shorthand flag") && i >= 0 {
		bad = msg[i+len(" in "):]
	} else if name, ok := strings.CutPrefix(msg, "unknown flag: "); ok {
		bad = name
	}
	if bad == "" {
		return ""
	}
	for i, a := range args {
		if a != bad && !strings.HasPrefix(a, bad+"=") {
			continue
		}
		if i >= 2 && valueFlags[args[i-2]] {
			return fmt.Sprintf("%s took %q as its value, so %q was read as a flag of agent-sandbox, not of the agent: give %s its value first (%s VALUE AGENT %s ...)", args[i-2], args[i-1], a, args[i-2], args[i-2], a)
		}
		break
	}
	return ""
}
