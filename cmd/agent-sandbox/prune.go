package main

import (
	"fmt"
	"path/filepath"
	"runtime"
	"text/tabwriter"

	"github.com/agent-sandbox/agent-sandbox/doctor"
	"github.com/agent-sandbox/agent-sandbox/internal/agent"
	"github.com/agent-sandbox/agent-sandbox/internal/backends"
	"github.com/agent-sandbox/agent-sandbox/internal/cli"
	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	"github.com/agent-sandbox/agent-sandbox/internal/plan"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
)

// plantedSbx says why the sbx at path must not be executed (it lies where a
// sandboxed agent can write: doctor.ProgramInsideWritable), or "".
func plantedSbx(e env, path string) string {
	return doctor.ProgramInsideWritable(doctor.Options{Getenv: e.getenv, LookPath: e.lookPath}, "sbx", path)
}

// pruneSandboxes is `agent-sandbox prune [--yes]`: it lists the stale
// agent-sandbox-* sandboxes (see backends.ClassifyKept) and, with --yes, removes them
// with `sbx rm -f NAME` and forgets the records of sandboxes that no longer
// exist. Unknown sandboxes (no record) are listed and never removed. Exit
// status: 0 (also when sbx is not installed: nothing to prune), 1 when a
// removal failed, 125 when sbx cannot list.
func pruneSandboxes(e env, p cli.Prune) int {
	sbxPath, err := e.lookPath("sbx")
	if err != nil {
		fmt.Fprintln(e.stdio.Out, "nothing to prune: sbx (Docker Sandboxes) is not installed (`sbx` is not on PATH), so there are no sbx sandboxes")
		return 0
	}
	if abs, err := filepath.Abs(sbxPath); err == nil {
		sbxPath = abs
	}
	if why := plantedSbx(e, sbxPath); why != "" {
		return fail(e.stdio.Err, fmt.Errorf("%s; not executed: install sbx outside every path a sandboxed agent can write", why))
	}
	names, err := backends.ListKept(sbxPath)
	if err != nil {
		return fail(e.stdio.Err, fmt.Errorf("cannot list sbx sandboxes: %v", err))
	}
	root := e.home.StateRoot()
	listed := backends.ClassifyKept(names, root, currentSbxName(e))
	var stale []backends.Kept
	tw := tabwriter.NewWriter(e.stdio.Out, 0, 4, 2, ' ', 0)
	for _, l := range listed {
		if l.Status == backends.KeptCurrent {
			continue
		}
		if l.Status == backends.KeptStale {
			stale = append(stale, l)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", l.Status, l.Name, l.Reason)
	}
	tw.Flush()
	live := map[string]bool{}
	for _, n := range names {
		live[n] = true
	}
	var forgotten []string
	for _, n := range backends.KeptRecords(root) {
		if !live[n] {
			forgotten = append(forgotten, n)
		}
	}
	if !p.Yes {
		switch {
		case len(stale) == 0:
			fmt.Fprintln(e.stdio.Out, "no stale agent-sandbox sandboxes")
		default:
			fmt.Fprintf(e.stdio.Out, "%d stale; `agent-sandbox prune --yes` removes them (sbx rm -f NAME)\n", len(stale))
		}
		return 0
	}
	status := 0
	for _, l := range stale {
		if err := backends.RemoveKept(sbxPath, root, l.Name); err != nil {
			diag.Errorf(e.stdio.Err, "removing %s: %v", l.Name, err)
			status = 1
			continue
		}
		fmt.Fprintf(e.stdio.Out, "removed %s\n", l.Name)
	}
	for _, n := range forgotten {
		if err := backends.ForgetKept(root, n); err == nil {
			fmt.Fprintf(e.stdio.Out, "forgot %s (no longer listed by sbx)\n", n)
		}
	}
	if len(stale) == 0 {
		fmt.Fprintln(e.stdio.Out, "no stale agent-sandbox sandboxes")
	}
	return status
}

// currentSbxName computes, for a record, the sandbox name its agent gets
// today in the recorded workdir: the agent is looked up by its id as a run
// by name would (or, when that finds another folder, at the recorded folder
// path, for agents run by path), with the sbx backend forced, and planned
// like a real run (without starting or writing anything).
func currentSbxName(e env) func(backends.KeptRecord) (string, error) {
	return func(rec backends.KeptRecord) (string, error) {
		lookup := e.lookup(rec.Workdir)
		f, _, err := agent.Find(rec.Agent, lookup)
		same := err == nil && ((rec.AgentDir == "" && f.Builtin()) || (rec.AgentDir != "" && f.Dir == rec.AgentDir))
		switch {
		case same:
		case rec.AgentDir != "":
			// Run by path, or the name now finds another folder.
			if f, err = agent.LoadDir(rec.AgentDir, agent.FromPath); err != nil {
				return "", fmt.Errorf("agent folder gone: %v", err)
			}
		case err == nil:
			return "", fmt.Errorf("the name %s now finds %s, not the built-in agent", rec.Agent, f.Dir)
		default:
			return "", err
		}
		pst, err := posture.Resolve(posture.Input{
			Agent: f.ID, Flags: posture.Flags{Backend: posture.Sbx}, Nono: f.Nono, Sbx: f.Sbx,
			Host: posture.Host{GOOS: runtime.GOOS},
		})
		if err != nil {
			return "", err
		}
		p, err := plan.Build(plan.Input{
			Folder: f, Posture: pst, Home: e.home, Workdir: rec.Workdir, Args: []string{},
			Getenv: e.getenv, LookPath: e.lookPath, Protected: lookup.Paths(), NixStore: plan.NixStore(),
		})
		if err != nil {
			return "", err
		}
		name, ok := backends.KeptName(p.Prepared)
		if !ok {
			return "", fmt.Errorf("no sbx plan")
		}
		return name, nil
	}
}

// listSbxSandboxes prints the agent-sandbox-* sandboxes under the agent
// table of `agent-sandbox agents`, when sbx is on PATH and lists any. A
// failing `sbx ls -q` is a warning: the agents are still listed.
func listSbxSandboxes(e env) {
	sbxPath, err := e.lookPath("sbx")
	if err != nil {
		return
	}
	if abs, err := filepath.Abs(sbxPath); err == nil {
		sbxPath = abs
	}
	if why := plantedSbx(e, sbxPath); why != "" {
		diag.Warnf(e.stdio.Err, "sbx sandboxes not listed: %s; not executed: install sbx outside every path a sandboxed agent can write", why)
		return
	}
	names, err := backends.ListKept(sbxPath)
	if err != nil {
		diag.Warnf(e.stdio.Err, "cannot list sbx sandboxes: %v", err)
		return
	}
	if len(names) == 0 {
		return
	}
	listed := backends.ClassifyKept(names, e.home.StateRoot(), currentSbxName(e))
	fmt.Fprintln(e.stdio.Out)
	tw := tabwriter.NewWriter(e.stdio.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SBX SANDBOX\tSTATUS\tDETAIL")
	stale := 0
	for _, l := range listed {
		if l.Status == backends.KeptStale {
			stale++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", l.Name, l.Status, l.Reason)
	}
	tw.Flush()
	if stale > 0 {
		fmt.Fprintf(e.stdio.Out, "%d stale: `agent-sandbox prune` lists them, `agent-sandbox prune --yes` removes them (sbx rm -f NAME)\n", stale)
	}
}
