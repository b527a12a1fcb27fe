package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// WhyRunFlags are the run flags that `why` takes too: they change the plan
// it asks (the working directory, the network, the backend).
var WhyRunFlags = []string{"workdir", "offline", "allow-host", "network", "sandbox-backend"}

// subUsage is the usage line of each subcommand, for the error about a
// run flag given before it.
var subUsage = map[string]string{
	CmdRun:     "agent-sandbox [run flags] run [run flags] -- CMD [ARGS...]",
	CmdWhy:     "agent-sandbox why [--write|--exec] [--json] [--workdir DIR] [--offline] [--allow-host HOST] [--network open] [--sandbox-backend NAME] PATH [AGENT]",
	CmdLog:     "agent-sandbox log [--json] [-n N] [AGENT]",
	CmdAgents:  "agent-sandbox agents [show NAME | copy NAME [DIR]]",
	CmdDoctor:  "agent-sandbox doctor [--json] [--folders-only] [AGENT...]",
	CmdResolve: "agent-sandbox resolve [--json] COMMAND",
	CmdPrune:   "agent-sandbox prune [--yes]",
	CmdVersion: "agent-sandbox version",
	CmdHelp:    "agent-sandbox help",
	CmdRuns:    "agent-sandbox runs [--workdir DIR]",
	CmdDiff:    "agent-sandbox diff [--workdir DIR] [RUN]",
	CmdUndo:    "agent-sandbox undo [--yes] [--workdir DIR] [RUN]",
}

// ownFlags are the subcommands' own flags that share a name with a run
// flag but mean something else there (why --write asks about writing; the
// run flag --write grants a path).
var ownFlags = map[string][]string{
	CmdWhy:     {"json", "write"},
	CmdLog:     {"json"},
	CmdDoctor:  {"json"},
	CmdResolve: {"json"},
	CmdRuns:    {"workdir"},
	CmdDiff:    {"workdir"},
	CmdUndo:    {"workdir"},
}

func isSubcommand(s string) bool { return slices.Contains(Subcommands, s) }

// flagName is "-q/--quiet" or "--offline".
func flagName(f *pflag.Flag) string {
	if f.Shorthand != "" {
		return "-" + f.Shorthand + "/--" + f.Name
	}
	return "--" + f.Name
}

// leadingFlags handles run flags given before a subcommand name (fs has
// parsed lead, rest starts with the name): before `run` they apply as if
// given after it (`agent-sandbox -q run -- make test`); before `why` the
// run flags why takes (WhyRunFlags) apply; any other is an error that
// says where it goes. Words after `--` are never subcommands
// (`agent-sandbox --offline -- run` runs an agent named run).
func leadingFlags(fs *pflag.FlagSet, lead, rest []string) (Invocation, error) {
	sub := rest[0]
	if sub == CmdRun {
		return parseRun(append(slices.Clone(lead), rest[1:]...), true)
	}
	if sub == CmdStart {
		return parseStart(append(slices.Clone(lead), rest[1:]...))
	}
	var bad []*pflag.Flag
	fs.Visit(func(f *pflag.Flag) {
		if sub != CmdWhy || !slices.Contains(WhyRunFlags, f.Name) {
			bad = append(bad, f)
		}
	})
	if len(bad) == 0 {
		return parseWhy(append(slices.Clone(lead), rest[1:]...))
	}
	var names []string
	for _, f := range bad {
		names = append(names, flagName(f))
	}
	what := strings.Join(names, ", ")
	const runs = "agent-sandbox [run flags] AGENT, or agent-sandbox [run flags] run -- CMD"
	var msg string
	if sub == CmdWhy {
		msg = fmt.Sprintf("%s before %q: why takes only these run flags: --%s (%s); %s belongs to a run: %s",
			what, sub, strings.Join(WhyRunFlags, ", --"), subUsage[sub], what, runs)
	} else {
		msg = fmt.Sprintf("%s before %q: %s takes no run flags (%s); run flags belong to a run (%s), and --%s also to why",
			what, sub, sub, subUsage[sub], runs, strings.Join(WhyRunFlags, ", --"))
	}
	for _, f := range bad {
		if slices.Contains(ownFlags[sub], f.Name) {
			msg += fmt.Sprintf("; %s has its own --%s, which goes after %q", sub, f.Name, sub)
			if sub == CmdWhy && f.Name == "write" {
				msg += " (why --write PATH asks whether PATH is writable; the run flag --write PATH grants it)"
			}
		}
	}
	return Invocation{}, fmt.Errorf("%s", msg)
}
