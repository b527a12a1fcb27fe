package main

import (
	"fmt"
	"runtime"
	"strings"
	"text/tabwriter"

	"github.com/agent-sandbox/agent-sandbox/internal/agent"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
)

// listAgents is `agent-sandbox agents`: every agent visible by name, where it
// came from, and the posture a plain run would get; then, when sbx is on
// PATH, the agent-sandbox-* sandboxes with their status (current, stale or
// unknown; see sbx.Classify). It exits 1 when a folder cannot be loaded.
func listAgents(e env) int {
	_, nonoErr := e.lookPath("nono")
	host := posture.Host{GOOS: runtime.GOOS, NonoFound: nonoErr == nil}
	tw := tabwriter.NewWriter(e.stdio.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tSOURCE\tPOSTURE\tFOLDER")
	status := 0
	// The working-directory rule applies to runs (agent.Find), not to the
	// listing: list every folder, wherever this command is typed.
	for _, l := range agent.All(e.lookup("")) {
		desc := ""
		if l.Err != nil {
			desc, status = "error: "+l.Err.Error(), 1
		} else {
			desc = describePosture(l.Folder, host)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", l.Name, l.Source, desc, l.Dir)
	}
	tw.Flush()
	listSbxSandboxes(e)
	return status
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
