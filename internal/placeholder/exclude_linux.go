//go:build linux

package placeholder

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agent-sandbox/agent-sandbox/internal/gitdir"
	"github.com/agent-sandbox/agent-sandbox/internal/safefs"
)

// excludeMarker precedes each line agent-sandbox adds to a repository's
// info/exclude.
const excludeMarker = "# agent-sandbox: a placeholder of a protected file, for this run only (remove the next line if agent-sandbox was killed)"

// excludePlaceholders adds the placeholder files created in the workdir
// to its repository's info/exclude (when that lies in a writable grant),
// so that git inside does not list them and an agent's `git add -A` does
// not commit them; removePlaceholders takes the lines out again.
func (s *Set) exclude(files []string) error {
	if len(files) == 0 {
		return nil
	}
	top := s.ledger.Top
	if top == "" {
		top = s.workdir
	}
	ex := excludeFile(top)
	inside := false
	for _, e := range s.ledger.Entries {
		if e.Root != "" && strings.HasPrefix(ex, e.Root+"/") {
			inside = true
		}
	}
	if ex == "" || !inside {
		return nil
	}
	if st, err := os.Lstat(ex); err == nil && !st.Mode().IsRegular() {
		return nil // not a plain file: leave it alone
	}
	// The git dir is the agent's to write (between runs too): no
	// component of the way to info/exclude may be a symlink, or the
	// lines would land wherever it points.
	if err := safefs.Mkdir(filepath.Dir(ex)); err != nil {
		return fmt.Errorf("creating %s: %v", filepath.Dir(ex), err)
	}
	f, err := safefs.Open(ex, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return fmt.Errorf("opening %s: %v", ex, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil // replaced by something else since: leave it alone
	}
	// The records first, in one write, then the lines, in one: a run
	// killed in between leaves records whose lines are not there (the
	// clean-up then finds nothing to take out), never lines without a
	// record.
	var recs, lines []byte
	for _, p := range files {
		pattern := "/" + strings.TrimPrefix(p, top+"/")
		b, _ := json.Marshal(record{Path: ex, Exclude: pattern})
		recs = append(append(recs, b...), '\n')
		lines = fmt.Appendf(lines, "%s\n%s\n", excludeMarker, pattern)
	}
	if _, err := s.reg.Write(recs); err != nil {
		return fmt.Errorf("recording %s: %v", ex, err)
	}
	if _, err := f.Write(lines); err != nil {
		return fmt.Errorf("writing %s: %v", ex, err)
	}
	return nil
}

// maxExclude bounds the info/exclude file unexclude reads.
const maxExclude = 8 << 20

// excludeFile is the info/exclude git reads for the working tree workdir
// (in the common dir of a linked worktree), or "".
func excludeFile(workdir string) string {
	dg := filepath.Join(workdir, ".git")
	if st, err := os.Lstat(dg); err == nil && st.IsDir() {
		return filepath.Join(dg, "info", "exclude")
	}
	l, err := gitdir.Find(workdir)
	if err != nil || l == nil {
		return ""
	}
	if l.CommonDir != "" {
		return filepath.Join(l.CommonDir, "info", "exclude")
	}
	return filepath.Join(l.GitDir, "info", "exclude")
}

// unexclude removes the marker and pattern pairs recorded for the exclude
// file ex. A file that is no longer a regular file (the agent's to
// replace: a FIFO would block the read for ever) or has grown past
// maxExclude is left alone.
func unexclude(ex string, patterns map[string]bool) {
	f, err := safefs.Open(ex, os.O_RDWR|syscall.O_NONBLOCK, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() > maxExclude {
		return
	}
	b, err := io.ReadAll(io.LimitReader(f, maxExclude+1))
	if err != nil || len(b) > maxExclude {
		return
	}
	lines := strings.SplitAfter(string(b), "\n")
	var out strings.Builder
	for i := 0; i < len(lines); i++ {
		if strings.TrimSuffix(lines[i], "\n") == excludeMarker && i+1 < len(lines) && patterns[strings.TrimSuffix(lines[i+1], "\n")] {
			i++
			continue
		}
		out.WriteString(lines[i])
	}
	if out.String() != string(b) {
		if f.Truncate(0) == nil {
			_, _ = f.WriteAt([]byte(out.String()), 0)
		}
	}
}
