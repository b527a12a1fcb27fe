package launch

import (
	"fmt"
	"io"
	"os"
)

// BannerLine is the line printed on stderr before a sandboxed agent starts
// (backend is "landlock" or "sbx"): "🔒 Sandbox Active (backend)" on a
// terminal, without the emoji when TERM is dumb, and nothing when stderr
// is not a terminal (a script's log gets no decoration).
func BannerLine(backend string, terminal bool, term string) string {
	switch {
	case !terminal:
		return ""
	case term == "dumb":
		return "Sandbox Active (" + backend + ")"
	}
	return "\U0001F512 Sandbox Active (" + backend + ")"
}

// Banner prints BannerLine for w and the environment's TERM.
func Banner(w io.Writer, backend string) {
	if line := BannerLine(backend, IsTerminal(w), os.Getenv("TERM")); line != "" {
		fmt.Fprintln(w, line)
	}
}
