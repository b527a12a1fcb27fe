package doctor

import (
	"fmt"
	"io"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/plan"
)

// Summary is doctor's first look (issue 39 item 12): one screen that leads
// the text form, the per-check lines below it. JSON output has no summary
// (its array of results is a stable interface).
type Summary struct {
	// Host is the engine line: Landlock, user namespaces, nono and sbx,
	// each by the first words of its check.
	Host string
	// Fail and Warn count the results.
	Fail, Warn int
	// Agents are one line per agent whose plain run was planned: the
	// engine, network, writable count, keys and protected count.
	Agents []string
	// Credentials is the line of the keys without a value, or "".
	Credentials string
}

// agentLook is an agent's first look, from its posture check.
type agentLook struct {
	id    string
	facts plan.Facts
}

func (r *run) summary() Summary {
	var s Summary
	var host []string
	for _, res := range r.results {
		switch res.Status {
		case Fail:
			s.Fail++
		case Warn:
			s.Warn++
		}
		switch res.Check {
		case "landlock", "user namespaces", "nono", "sbx":
			first, _, _ := strings.Cut(res.Detail, ":")
			if i := strings.Index(first, " ("); i > 0 {
				first = first[:i]
			}
			host = append(host, res.Check+" "+first)
		}
	}
	s.Host = strings.Join(host, "; ")
	width := 0
	for _, l := range r.looks {
		width = max(width, len(l.id))
	}
	for _, l := range r.looks {
		s.Agents = append(s.Agents, fmt.Sprintf("%-*s  %s", width, l.id, l.facts.Line()))
	}
	for _, m := range r.missingOrder {
		if s.Credentials != "" {
			s.Credentials += "; "
		}
		env, _, _ := strings.Cut(m, " ")
		s.Credentials += fmt.Sprintf("%s (%s)", env, strings.Join(r.missingCreds[m], ", "))
	}
	if s.Credentials != "" {
		s.Credentials = "no value for " + s.Credentials
	}
	return s
}

// WriteSummary writes the first look, then the line that introduces the
// per-check lines (WriteText).
func WriteSummary(w io.Writer, s Summary) error {
	var b strings.Builder
	if s.Host != "" {
		fmt.Fprintf(&b, "engine:       %s\n", s.Host)
	}
	fmt.Fprintf(&b, "verdict:      %d failed, %d %s (below)\n", s.Fail, s.Warn, plural(s.Warn, "warning", "warnings"))
	for i, a := range s.Agents {
		label := ""
		if i == 0 {
			label = "agents:"
		}
		fmt.Fprintf(&b, "%-12s  %s\n", label, a)
	}
	if s.Credentials != "" {
		fmt.Fprintf(&b, "credentials:  %s\n", s.Credentials)
	}
	b.WriteString("--- in detail\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
