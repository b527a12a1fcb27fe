package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/cli"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/pathresolve"
)

// resolveJSON is the --json output of `agent-sandbox resolve`. Arrays are
// never null.
type resolveJSON struct {
	Path    string        `json:"path"`
	Chain   []stepJSON    `json:"chain"`
	Files   []string      `json:"files"`
	Dirs    []string      `json:"dirs"`
	Missing []missingJSON `json:"missing"`
}

type stepJSON struct {
	Kind string `json:"kind"`
	From string `json:"from"`
	To   string `json:"to"`
}

type missingJSON struct {
	Name     string `json:"name"`
	NeededBy string `json:"needed_by"`
	Reason   string `json:"reason"`
}

// runResolve is `agent-sandbox resolve [--json] COMMAND`: what pathresolve
// finds for COMMAND on this PATH. Exit 0 when everything was found, 1 when
// something COMMAND needs is missing, 125 when COMMAND itself cannot be
// resolved.
func runResolve(stdio launch.Stdio, r cli.Resolve) int {
	res, err := pathresolve.Resolve(r.Command, pathresolve.Options{})
	if err != nil {
		return fail(stdio.Err, errors.New("resolve: "+strings.TrimPrefix(err.Error(), "pathresolve: ")))
	}
	out := resolveJSON{Path: res.Path, Chain: []stepJSON{}, Files: []string{}, Dirs: []string{}, Missing: []missingJSON{}}
	for _, s := range res.Chain {
		out.Chain = append(out.Chain, stepJSON{Kind: s.Kind, From: s.From, To: s.To})
	}
	out.Files = append(out.Files, res.Files...)
	out.Dirs = append(out.Dirs, res.Dirs...)
	for _, m := range res.Missing {
		out.Missing = append(out.Missing, missingJSON{Name: m.Name, NeededBy: m.NeededBy, Reason: m.Reason})
	}
	if r.JSON {
		enc := json.NewEncoder(stdio.Out)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return fail(stdio.Err, err)
		}
	} else {
		var b strings.Builder
		fmt.Fprintf(&b, "path: %s\n", out.Path)
		b.WriteString("chain:\n")
		for _, s := range out.Chain {
			fmt.Fprintf(&b, "  %-8s %s -> %s\n", s.Kind, s.From, s.To)
		}
		b.WriteString("files:\n")
		for _, f := range out.Files {
			fmt.Fprintf(&b, "  %s\n", f)
		}
		b.WriteString("dirs:\n")
		for _, d := range out.Dirs {
			fmt.Fprintf(&b, "  %s\n", d)
		}
		if len(out.Missing) == 0 {
			b.WriteString("missing: none\n")
		} else {
			b.WriteString("missing:\n")
			for _, m := range out.Missing {
				fmt.Fprintf(&b, "  %s (needed by %s): %s\n", m.Name, m.NeededBy, m.Reason)
			}
		}
		if _, err := fmt.Fprint(stdio.Out, b.String()); err != nil {
			return fail(stdio.Err, err)
		}
	}
	if len(out.Missing) > 0 {
		return 1
	}
	return 0
}
