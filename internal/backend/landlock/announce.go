package landlock

import (
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"

	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
)

// maxAnnounced bounds the refusals announced one line each; past it one
// line says the rest are listed when the run ends.
const maxAnnounced = 5

// announcer tells the user of a refused destination when it is refused
// (broker.Config.Refused: the broker's refusals and the direct attempts
// the view's init reports), not only in the line at the end of the run:
// an agent that retries a refused host can otherwise spend minutes before
// anything says why.
//
// Where the agent's stdout is not a terminal, or is one in canonical mode
// (a one-shot run such as `claude -p`, a shell's command), the
// announcement is one warning line on stderr, the first time each
// destination is refused. Where the terminal is in non-canonical mode (a
// full-screen program: a TUI, an editor), a line would be written into its
// screen; the announcement is then the terminal's title (the previous
// title is pushed, and popped when the run ends), and the line at the end
// of the run lists every refusal after the program gave the screen back.
type announcer struct {
	w     io.Writer
	agent string
	// term is the agent's terminal (its stdout), or nil.
	term *os.File
	// noTitle: TERM=dumb, or no TERM, where an escape sequence is not
	// understood.
	noTitle bool

	mu     sync.Mutex
	lines  int
	titled bool
}

func newAnnouncer(w io.Writer, agent string) *announcer {
	return &announcer{w: w, agent: agent}
}

// setTerminal records the agent's stdout when it is a terminal.
func (a *announcer) setTerminal(stdout any) {
	if f, ok := stdout.(*os.File); ok && launch.IsTerminal(f) {
		a.term = f
		t := os.Getenv("TERM")
		a.noTitle = t == "" || t == "dumb"
	}
}

// refused announces dest, refused for reason (broker.Config.Refused).
func (a *announcer) refused(dest, reason string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.term != nil && fullScreen(a.term) {
		if a.noTitle {
			return
		}
		if !a.titled {
			// XTWINOPS: push the window and icon title.
			_, _ = io.WriteString(a.term, "\x1b[22;0t")
			a.titled = true
		}
		_, _ = fmt.Fprintf(a.term, "\x1b]0;%s\x07", Title(dest, a.agent))
		return
	}
	a.lines++
	switch {
	case a.lines <= maxAnnounced:
		diag.Warnf(a.w, "%s", Announcement(dest, reason, a.agent))
	case a.lines == maxAnnounced+1:
		diag.Warnf(a.w, "the sandbox refused further destinations; the line at the end of the run lists them all (agent-sandbox log %s: every attempt)", a.agent)
	}
}

// end restores the terminal's title when refused set it.
func (a *announcer) end() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.titled {
		_, _ = io.WriteString(a.term, "\x1b[23;0t")
		a.titled = false
	}
}

// Announcement is the line (without the "agent-sandbox: warning: "
// prefix) that announces the first refusal of dest.
func Announcement(dest, reason, agent string) string {
	fix := ""
	if strings.Contains(reason, "not in the allow list") || strings.HasPrefix(reason, "port ") && strings.Contains(reason, "not allowed") {
		fix = fmt.Sprintf("; `agent-sandbox allow %s` allows it in this session, --allow-host %s in the next run", dest, dest)
	}
	if strings.Contains(reason, "which nothing forwards") {
		if _, port, err := net.SplitHostPort(dest); err == nil {
			fix = fmt.Sprintf("; `agent-sandbox allow localhost:%s` forwards it in this session", port)
		}
	}
	return fmt.Sprintf("the sandbox refused a connection to %s: %s%s (the agent may retry it; details: agent-sandbox log %s)", dest, reason, fix, agent)
}

// Title is the terminal title that announces a refusal during a
// full-screen program.
func Title(dest, agent string) string {
	return sanitizeTitle(fmt.Sprintf("agent-sandbox: refused %s (listed when %s exits)", dest, agent))
}

// sanitizeTitle keeps printable ASCII only, so that nothing a client
// named ends the escape sequence.
func sanitizeTitle(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, s)
}
