package main

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"

	"github.com/agent-sandbox/agent-sandbox/doctor"
	"github.com/agent-sandbox/agent-sandbox/internal/agent"
	"github.com/agent-sandbox/agent-sandbox/internal/cli"
	"github.com/agent-sandbox/agent-sandbox/internal/plan"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
)

// listAgents is `agent-sandbox agents`: every agent visible by name, where it
// came from, and the posture a plain run would get; then, when sbx is on
// PATH, the agent-sandbox-* sandboxes with their status (current, stale or
// unknown; see backends.ClassifyKept). It exits 1 when a folder cannot be loaded.
func listAgents(e env) int {
	_, nonoErr := e.lookPath("nono")
	host := posture.Host{GOOS: runtime.GOOS, NonoFound: nonoErr == nil}
	tw := tabwriter.NewWriter(e.stdio.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tSOURCE\tPOSTURE\tFOLDER\tSTARTS HERE")
	status := 0
	var shadowed []agent.Listed
	// The working-directory rule applies to runs (agent.Find), not to the
	// listing: list every folder, wherever this command is typed.
	for _, l := range agent.All(e.lookup("")) {
		desc, starts := "", "no (the folder does not load)"
		if l.Err != nil {
			desc, status = "error: "+l.Err.Error(), 1
		} else {
			desc = describePosture(l.Folder, host)
			starts = startsHere(e, l.Folder, host)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.Name, l.Source, desc, l.Dir, starts)
		if cli.Shadowed(l.Name) {
			shadowed = append(shadowed, l)
		}
	}
	tw.Flush()
	for _, l := range shadowed {
		fmt.Fprintf(e.stdio.Out, "note: the agent %s shares its name with a subcommand of agent-sandbox (present or reserved): run it by its folder's path (agent-sandbox %s) or after -- (agent-sandbox -- %s)\n", l.Name, l.Dir, l.Name)
	}
	listSbxSandboxes(e)
	return status
}

// startsHere says whether a plain run of f would start on this host and
// with which backend: the plan a run gets (in doctor's neutral working
// directory, so the answer does not depend on where this is typed), and
// its refusal or missing command.
func startsHere(e env, f *agent.Folder, host posture.Host) string {
	pst, err := posture.Resolve(posture.Input{Agent: f.ID, Nono: f.Nono, Sbx: f.Sbx, Host: host})
	if err != nil {
		return "no: " + err.Error()
	}
	p, err := plan.Build(plan.Input{
		Folder: f, Posture: pst, Home: e.home, Workdir: doctor.NeutralWorkdir, Args: []string{},
		Getenv: e.getenv, LookPath: e.lookPath, Protected: e.lookup("").Paths(), NixStore: plan.NixStore(),
	})
	if err != nil {
		return "no: " + err.Error()
	}
	if ok, why := p.Starts(); !ok {
		return "no: " + why
	}
	if p.Backend == nil {
		return "yes, unsandboxed"
	}
	return "yes, " + *p.Backend
}

func describePosture(f *agent.Folder, host posture.Host) string {
	p, err := posture.Resolve(posture.Input{Agent: f.ID, Nono: f.Nono, Sbx: f.Sbx, Host: host})
	if err != nil {
		return "error: " + err.Error()
	}
	if !p.Sandboxed {
		return "unsandboxed (" + string(p.Reason) + ")"
	}
	s := fmt.Sprintf("%s, network %s", p.Backend, p.Network.Mode)
	if n := len(p.Network.AllowDomains); n > 0 {
		s += fmt.Sprintf(" (%s)", strings.Join(p.Network.AllowDomains, ","))
	}
	if p.Network.NoHost() {
		s += " (no host: the allow list is empty)"
	}
	if p.Fallback != "" {
		s += " [nono not found]"
	}
	return s
}

// agentFiles is `agent-sandbox agents show NAME` (the folder's files, each
// under a comment line naming it) and `agents copy NAME [DIR]` (those
// files written to DIR, default $XDG_CONFIG_HOME/agent-sandbox/agents/NAME,
// where a folder of the same name overrides a built-in).
func agentFiles(e env, a cli.Agents) int {
	f, _, err := agent.Find(a.Name, e.lookup(""))
	if err != nil {
		return fail(e.stdio.Err, err)
	}
	if a.Action == "show" {
		files, err := f.Files()
		if err != nil {
			return fail(e.stdio.Err, err)
		}
		for i, file := range files {
			if i > 0 {
				fmt.Fprintln(e.stdio.Out)
			}
			fmt.Fprintf(e.stdio.Out, "# %s/%s\n%s", f.Dir, file.Rel, file.Data)
			if n := len(file.Data); n > 0 && file.Data[n-1] != '\n' {
				fmt.Fprintln(e.stdio.Out)
			}
		}
		return 0
	}
	dir := a.Dir
	if dir == "" {
		dir = filepath.Join(e.home.ConfigRoot(), "agents", f.ID)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fail(e.stdio.Err, err)
	}
	if err := f.CopyTo(abs); err != nil {
		return fail(e.stdio.Err, err)
	}
	fmt.Fprintf(e.stdio.Out, "copied %s to %s\n", f.Dir, abs)
	if copied, _, err := agent.Find(filepath.Base(abs), e.lookup("")); err == nil && copied.Dir == abs {
		fmt.Fprintf(e.stdio.Out, "`agent-sandbox %s` now runs this copy: edit its agent.toml and sandbox/ files there\n", copied.ID)
	} else {
		fmt.Fprintf(e.stdio.Out, "run it with `agent-sandbox %s` (a path: it is not in the lookup directories)\n", abs)
	}
	return 0
}
