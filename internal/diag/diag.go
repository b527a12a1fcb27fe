// Package diag prints agent-sandbox's diagnostics on stderr, in the one
// format every part of the program uses: "agent-sandbox: error: ...",
// "agent-sandbox: warning: ..." and, under --verbose, "agent-sandbox: ...".
package diag

import (
	"fmt"
	"io"
	"strings"
)

// Prefixes of the diagnostic lines.
const (
	Prefix        = "agent-sandbox: "
	ErrorPrefix   = Prefix + "error: "
	WarningPrefix = Prefix + "warning: "
)

// Errorf prints one error line on w.
func Errorf(w io.Writer, format string, a ...any) { line(w, ErrorPrefix, format, a...) }

// Warnf prints one warning line on w.
func Warnf(w io.Writer, format string, a ...any) { line(w, WarningPrefix, format, a...) }

// Notef prints one informational line on w (--verbose output).
func Notef(w io.Writer, format string, a ...any) { line(w, Prefix, format, a...) }

func line(w io.Writer, prefix, format string, a ...any) {
	fmt.Fprint(w, prefix+strings.TrimSuffix(fmt.Sprintf(format, a...), "\n")+"\n")
}
