package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/agent"
	"github.com/agent-sandbox/agent-sandbox/internal/cli"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/plan"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
)

// runAgent is `agent-sandbox [run flags] AGENT [ARGS...]`.
func runAgent(e env, r cli.Run) int {
	workdir, err := resolveWorkdir(r.Workdir)
	if err != nil {
		return fail(e.stdio.Err, err)
	}
	lookup := e.lookup(workdir)
	folder, warn, err := agent.Find(r.Agent, lookup)
	if err != nil {
		return fail(e.stdio.Err, err)
	}
	_, nonoErr := e.lookPath("nono")
	pst, err := posture.Resolve(posture.Input{
		Agent: folder.ID,
		Flags: r.Posture,
		Nono:  folder.Nono,
		Sbx:   folder.Sbx,
		Host:  posture.Host{GOOS: runtime.GOOS, NonoFound: nonoErr == nil},
	})
	if err != nil {
		return fail(e.stdio.Err, err)
	}
	if warn != "" {
		pst.Warnings = append([]string{warn}, pst.Warnings...)
	}
	p, err := plan.Build(plan.Input{
		Folder: folder, Posture: pst, Home: e.home, Workdir: workdir, Args: r.Args,
		Getenv: e.getenv, LookPath: e.lookPath, Protected: lookup.Paths(),
		NixStore: plan.NixStore(), Verbose: r.Verbose, TTY: launch.IsTerminal(os.Stdout),
		AllowEdit: r.AllowEdit,
	})
	if err != nil {
		return fail(e.stdio.Err, err)
	}
	for _, w := range p.Warnings {
		fmt.Fprintln(e.stdio.Err, w)
	}
	if r.DryRun {
		write := p.WriteText
		if r.JSON {
			write = p.WriteJSON
		}
		if err := write(e.stdio.Out); err != nil {
			return fail(e.stdio.Err, err)
		}
		return 0
	}
	if r.Verbose {
		describe(e, p)
	}
	if p.Refusal != nil {
		return fail(e.stdio.Err, errors.New(*p.Refusal))
	}
	return p.Prepared.Execute(e.stdio)
}

// describe prints the posture for --verbose.
func describe(e env, p *plan.Plan) {
	backend := "none (unsandboxed)"
	if p.Backend != nil {
		backend = *p.Backend
	}
	fmt.Fprintf(e.stdio.Err, "agent-sandbox: %s from %s; backend %s (%s); network %s", p.Agent, p.AgentFolder, backend, p.Reason, p.Network.Mode)
	if len(p.Network.AllowDomains) > 0 {
		fmt.Fprintf(e.stdio.Err, " [%s]", strings.Join(p.Network.AllowDomains, " "))
	}
	fmt.Fprintln(e.stdio.Err)
	if p.Sandboxed {
		fmt.Fprintf(e.stdio.Err, "agent-sandbox: read-write %s; read-only %s\n", strings.Join(p.Filesystem.Allow, " "), strings.Join(p.Filesystem.Read, " "))
	}
}

// resolveWorkdir returns the canonical working directory.
func resolveWorkdir(flag string) (string, error) {
	dir := flag
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("cannot read the current directory: %v", err)
		}
		dir = wd
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("--workdir %s: %v", dir, errors.Unwrap(err))
	}
	st, err := os.Stat(real)
	if err != nil || !st.IsDir() {
		return "", fmt.Errorf("--workdir %s: not a directory", dir)
	}
	return real, nil
}
