package main

import (
	"os"
	"os/exec"

	"github.com/agent-sandbox/agent-sandbox/doctor"
	"github.com/agent-sandbox/agent-sandbox/internal/cli"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
)

// runDoctor is `agent-sandbox doctor [--json] [--folders-only] [AGENT...]`:
// the checks of package doctor, one line each (or a JSON array); exit 1 when
// any check fails. It needs no $HOME with --folders-only, so it runs before
// Main resolves the home directory.
func runDoctor(stdio launch.Stdio, d cli.Doctor) int {
	results, summary := doctor.RunWithSummary(doctor.Options{
		Agents:      d.Agents,
		FoldersOnly: d.FoldersOnly,
		Getenv:      os.Getenv,
		LookPath:    exec.LookPath,
	})
	write := doctor.WriteText
	if d.JSON {
		write = doctor.WriteJSON
	} else if err := doctor.WriteSummary(stdio.Out, summary); err != nil {
		// The first look leads the text form; the checks follow.
		return fail(stdio.Err, err)
	}
	if err := write(stdio.Out, results); err != nil {
		return fail(stdio.Err, err)
	}
	if doctor.Failed(results) {
		return 1
	}
	return 0
}
