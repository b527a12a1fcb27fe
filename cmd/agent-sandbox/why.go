package main

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/agent-sandbox/agent-sandbox/internal/agent"
	"github.com/agent-sandbox/agent-sandbox/internal/cli"
	"github.com/agent-sandbox/agent-sandbox/internal/plan"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/why"
)

// whyAccess is `agent-sandbox why`: the plan a plain run of the agent gets
// here (as runAgent builds it), asked about one path or host. Exit status:
// 0 allowed, 1 denied, 125 when the question or the agent is at fault.
func whyAccess(e env, w cli.Why) int {
	workdir, err := resolveWorkdir(w.Workdir)
	if err != nil {
		return fail(e.stdio.Err, err)
	}
	lookup := e.lookup(workdir)
	name := w.Agent
	if name == "" {
		name = "shell"
	}
	folder, _, err := agent.Find(name, lookup)
	if err != nil {
		return fail(e.stdio.Err, err)
	}
	_, nonoErr := e.lookPath("nono")
	pst, err := posture.Resolve(posture.Input{
		Agent: folder.ID, Flags: w.Posture, Nono: folder.Nono, Sbx: folder.Sbx,
		Host: posture.Host{GOOS: runtime.GOOS, NonoFound: nonoErr == nil},
	})
	if err != nil {
		return fail(e.stdio.Err, err)
	}
	p, err := plan.Build(plan.Input{
		Folder: folder, Posture: pst, Home: e.home, Workdir: workdir, Args: []string{},
		Getenv: e.getenv, LookPath: e.lookPath, Protected: lookup.Paths(), NixStore: plan.NixStore(),
	})
	if err != nil {
		return fail(e.stdio.Err, err)
	}
	in := why.Input{Plan: p, Folder: folder, Home: e.home, Protected: lookup.Paths(), Host: w.Host, Access: why.Read}
	switch {
	case w.Write:
		in.Access = why.Write
	case w.Exec:
		in.Access = why.Exec
	}
	var a why.Answer
	if w.Host != "" {
		a, err = why.Host(in)
	} else {
		in.Path = cliPaths([]string{w.Path})[0]
		a, err = why.Path(in)
	}
	if err != nil {
		return fail(e.stdio.Err, err)
	}
	if w.JSON {
		enc := json.NewEncoder(e.stdio.Out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(a); err != nil {
			return fail(e.stdio.Err, err)
		}
	} else {
		fmt.Fprint(e.stdio.Out, a.Text())
	}
	if !a.Allowed {
		return 1
	}
	return 0
}
