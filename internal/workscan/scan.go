package workscan

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	"github.com/agent-sandbox/agent-sandbox/internal/protect"
)

// Bounds of the scan for what was planted during a run.
const (
	scanMaxEntries = 500000
	scanMaxTime    = 5 * time.Second
)

// Scan walks the working directory after a run for what no ledger can
// predict: git directories anywhere below it (a .git directory or file,
// with their submodules and worktrees) whose config, commondir, hooks or
// .git file were created or changed since started; the protected project
// names (.vscode, .envrc, .claude, ...) in subdirectories, where only the
// top of the workdir is kept read-only; and the names other tools run code
// from that no run keeps read-only (protect.Reported) at any depth. Nothing
// is skipped: node_modules is walked like the rest (a repository planted
// there and registered in the project's index runs its fsmonitor on the
// user's next git status), and a directory the scan cannot read is
// reported, not passed over. skip are paths the ledger's audit speaks for,
// and the run's own placeholders; before is what changed at the top just
// before the run (RecentBefore), not reported while still as it was. The
// scan is bounded (scanMaxEntries, scanMaxTime) and stops when interrupted
// is closed; either way it says what it did not check. t, when not nil, is
// the tree read during the run (Prewalk), or the one the previous run left
// when the run ended before that reading did (Prewalk.Finish): the
// directories unchanged since are not read again. prev, when not nil, is
// the tree the previous run left: a directory below the workdir that it
// does not record at that path (another inode, or none) and whose ctime
// moved during the run was made or moved there during the run, and
// everything the scan looks at below it counts as created, whatever its
// own ctime (a file planted where the scan does not look, inside a .git,
// in one run, and moved into sight in the next, keeps its ctime). It
// returns the tree as it found it, for the next run (complete only when
// the scan was).
func Scan(workdir string, started time.Time, skip map[string]bool, before Before, interrupted <-chan struct{}, t, prev *Tree) ([]Finding, *Tree) {
	b := newBudget(interrupted)
	t = t.precheck(interrupted)
	w := &scanWalk{
		workdir: workdir, since: scanSince(started), skip: skip, before: before,
		b: b, t: t, prev: prev,
		next: &Tree{Dirs: make(map[string]treeDir, t.size())},
	}
	w.walk(workdir, false)
	out := w.summary()
	w.next.complete = w.stopped == ""
	return out, w.next
}

// scanWalk is one scan's walk of the workdir (see Scan): what it was
// given, and what it found so far.
type scanWalk struct {
	workdir    string
	since      time.Time
	skip       map[string]bool
	before     map[string]fingerprint
	b          *budget
	t, prev    *Tree
	next       *Tree
	stopped    string
	out        []Finding
	tools      []string
	others     []string
	unreadable []string
}

// planted returns the paths the scan reports: neither one the ledger's
// audit speaks for (skip), nor one still as it was just before the run.
func (w *scanWalk) planted(paths []string) []string {
	var out []string
	for _, p := range paths {
		if w.skip[p] {
			continue
		}
		if was, ok := w.before[p]; ok {
			if now, ok := fingerprintOf(p); ok && now == was {
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

// walk scans dir and every directory below it; moved: dir lies below a
// directory made or moved there during the run. It returns false when
// the scan stopped (budget spent, interrupted).
func (w *scanWalk) walk(dir string, moved bool) bool {
	ents, err := w.t.list(dir, w.next, nil)
	if err != nil {
		// The workdir itself too (an agent that takes its read bit
		// away hides everything below it from the scan, not from
		// git); not a directory that is gone (a placeholder the run
		// removed: nothing lies below it).
		if !errors.Is(err, fs.ErrNotExist) {
			w.unreadable = append(w.unreadable, fmt.Sprintf("%s (%v)", diag.QuoteName(dir), errText(err)))
		}
		if len(ents) == 0 {
			return true
		}
	}
	moved = moved || w.madeDuringRun(dir)
	since := w.since
	if moved {
		since = time.Time{}
	}
	for _, d := range ents {
		if w.stopped = w.b.spend(); w.stopped != "" {
			return false
		}
		path := filepath.Join(dir, d.Name())
		if !w.entry(dir, path, d, since) {
			continue
		}
		if d.IsDir() && !w.walk(path, moved) {
			return false
		}
	}
	return true
}

// madeDuringRun reports whether dir, below the workdir, was made or
// moved to its path during the run: its ctime moved during the run and
// the previous run's tree does not record it at that path (another
// inode, or none).
func (w *scanWalk) madeDuringRun(dir string) bool {
	if dir == w.workdir || w.prev == nil {
		return false
	}
	td, ok := w.next.Dirs[dir]
	if !ok || td.Ctime.Before(w.since) {
		return false
	}
	pd, had := w.prev.Dirs[dir]
	return !had || pd.Ino != td.Ino
}

// entry records what the entry d of dir, at path, shows was planted
// since: git metadata, a protected project name below the top, a name
// other tools run code from. It returns false when the walk does not
// enter it (a .git: its metadata is checked here).
func (w *scanWalk) entry(dir, path string, d treeEnt, since time.Time) bool {
	name := d.Name()
	git, top, reported := nameKind(name)
	switch {
	case git:
		if changed := w.planted(gitChanged(path, d, since)); len(changed) > 0 {
			w.out = append(w.out, Finding{Path: path, Text: fmt.Sprintf("the agent created or changed git metadata that git runs on the host: %s; your next git command in %s runs what it planted: inspect it (or remove that .git) before running git there", quoteAll(changed), diag.QuoteName(dir))})
		}
		if name == ".git" {
			return false // a .GIT is walked too: on a filesystem that tells case apart it is no git dir
		}
	case top && dir != w.workdir:
		w.tools = append(w.tools, w.planted(changedTree(path, d.IsDir(), since))...)
	case reported:
		w.others = append(w.others, w.planted(changedTree(path, d.IsDir(), since))...)
	}
	return true
}

// summary returns the walk's findings, with one for each kind of file
// planted in bulk, for what could not be read, and for a scan that
// stopped.
func (w *scanWalk) summary() []Finding {
	out := w.out
	if len(w.tools) > 0 {
		out = append(out, Finding{Path: "(tools)", Text: fmt.Sprintf("the agent created or changed files your tools run code from, in subdirectories of the project (only its top is kept read-only): %s; inspect them before opening those folders or entering them with direnv", quoteAll(w.tools))})
	}
	if len(w.others) > 0 {
		out = append(out, Finding{Path: "(reported)", Text: fmt.Sprintf("the agent created or changed files other tools run code from, which the sandbox does not keep read-only: %s; inspect them before you run the tool they belong to (another agent, your editor, a git hook manager, mise, a dev container) in this project outside the sandbox", quoteAll(w.others))})
	}
	if unreadable := w.unreadable; len(unreadable) > 0 {
		if len(unreadable) > 20 {
			unreadable = append(unreadable[:20], fmt.Sprintf("and %d more", len(unreadable)-20))
		}
		out = append(out, Finding{Path: "(unreadable)", Unchecked: true, Text: fmt.Sprintf("the scan of %s for git metadata and tool files planted during the run could not read %s: what lies there was not checked (git can still enter a directory it cannot list); inspect them, or make them readable, before running git or opening the project", diag.QuoteName(w.workdir), strings.Join(unreadable, ", "))})
	}
	if w.stopped != "" {
		out = append(out, Finding{Path: "(stopped)", Unchecked: true, Text: fmt.Sprintf("the scan of %s for git metadata and tool files planted during the run stopped after %d entries because %s: what lies beyond was not checked", diag.QuoteName(w.workdir), w.b.entries, w.stopped)})
	}
	return out
}

func errText(err error) string {
	var pe *fs.PathError
	if e, ok := err.(*fs.PathError); ok {
		pe = e
		return pe.Err.Error()
	}
	return err.Error()
}

// quoteAll joins paths for a message, each diag.QuoteName'd.
func quoteAll(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = diag.QuoteName(p)
	}
	return strings.Join(q, ", ")
}

// scanSince is the time from which the scan after a run counts a status
// change as the agent's. It lies before started by more than the coarse
// clock the kernel stamps ctimes with lags behind (a tick: 1 to 10 ms), so
// that nothing the agent changes is missed; what changed in that margin
// before the run is told apart by RecentBefore.
func scanSince(started time.Time) time.Time {
	return started.Add(-10 * time.Millisecond)
}

// RecentBefore fingerprints, as a run starts, what the scan after it would
// report at the top of the workdir already (a git command or an editor
// that wrote .git/config or .husky/ in the moment before the run): the
// workdir's own .git and the protect.Reported names at its top. Usually
// nothing there changed that recently, and it costs one directory read
// and a few stats. Deeper paths changed in that moment are still reported.
func RecentBefore(workdir string, started time.Time) Before {
	since := scanSince(started)
	ents, err := os.ReadDir(workdir)
	if err != nil {
		return nil
	}
	var paths []string
	for _, e := range ents {
		path := filepath.Join(workdir, e.Name())
		if e.Name() == ".git" {
			paths = append(paths, gitChanged(path, e, since)...)
		} else if protect.Reported(e.Name()) {
			paths = append(paths, changedTree(path, e.IsDir(), since)...)
		}
	}
	var out Before
	for _, p := range paths {
		if f, ok := fingerprintOf(p); ok {
			if out == nil {
				out = Before{}
			}
			out[p] = f
		}
	}
	return out
}

// fingerprint is what a path is, for git or a tool that runs it: its
// identity, type and permission bits, size, and a hash of its content (a
// file's bytes, a directory's sorted names, a symlink's target). Its ctime
// is left out: that is what made the path look changed.
type fingerprint struct {
	dev, ino uint64
	mode     fs.FileMode
	size     int64
	sum      [sha256.Size]byte
}

// maxFingerprint bounds the file content fingerprintOf reads; a larger
// file is not fingerprinted (and stays reported).
const maxFingerprint = 1 << 20

// fingerprintOf returns p's fingerprint, without following a symlink at
// p; ok is false when p cannot be read whole.
func fingerprintOf(p string) (f fingerprint, ok bool) {
	fi, err := os.Lstat(p)
	if err != nil {
		return f, false
	}
	dev, ino := DevIno(fi)
	f = fingerprint{dev: dev, ino: ino, mode: fi.Mode(), size: fi.Size()}
	h := sha256.New()
	switch {
	case fi.Mode().IsRegular():
		if fi.Size() > maxFingerprint {
			return f, false
		}
		file, err := OpenRead(p)
		if err != nil {
			return f, false
		}
		defer file.Close()
		// The content read must be the file statted.
		if !file.Is(fi) {
			return f, false
		}
		n, err := io.Copy(h, io.LimitReader(file, maxFingerprint+1))
		if err != nil || n != fi.Size() {
			return f, false
		}
	case fi.IsDir():
		ents, err := os.ReadDir(p)
		if err != nil {
			return f, false
		}
		for _, e := range ents { // sorted by name
			h.Write([]byte(e.Name()))
			h.Write([]byte{0})
		}
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return f, false
		}
		h.Write([]byte(target))
	default:
		return f, false
	}
	h.Sum(f.sum[:0])
	return f, true
}

// changedTree lists path, when changed since, and for a directory the
// entries below it (two levels) changed since.
func changedTree(path string, dir bool, since time.Time) []string {
	if !dir {
		if changedSince(path, since) {
			return []string{path}
		}
		return nil
	}
	var out []string
	var walk func(p string, depth int)
	walk = func(p string, depth int) {
		ents, err := os.ReadDir(p)
		if err != nil {
			return
		}
		for i, e := range ents {
			if i >= maxScanNested {
				break
			}
			q := filepath.Join(p, e.Name())
			if changedSince(q, since) {
				out = append(out, q)
			}
			if e.IsDir() && depth < 2 {
				walk(q, depth+1)
			}
		}
	}
	if changedSince(path, since) {
		out = append(out, path)
	}
	walk(path, 1)
	return out
}

// gitChanged lists what of the .git at path changed since: a gitfile
// itself, or what gitDirChanged lists of a git dir.
func gitChanged(path string, d fs.DirEntry, since time.Time) []string {
	if d.Type().IsRegular() {
		if changedSince(path, since) {
			return []string{path}
		}
	} else if d.IsDir() {
		return gitDirChanged(path, since, 0)
	}
	return nil
}

// gitDirChanged lists config, config.worktree, commondir, hooks/ and each
// hook of the git dir g (and of its submodules and worktrees) changed
// since.
func gitDirChanged(g string, since time.Time, depth int) []string {
	var out []string
	for _, name := range []string{"config", "config.worktree", "commondir", "hooks"} {
		if p := filepath.Join(g, name); changedSince(p, since) {
			out = append(out, p)
		}
	}
	if ents, err := os.ReadDir(filepath.Join(g, "hooks")); err == nil {
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".sample") {
				continue // git never runs these
			}
			if p := filepath.Join(g, "hooks", e.Name()); changedSince(p, since) {
				out = append(out, p)
			}
		}
	}
	if depth >= 4 {
		return out
	}
	for _, kind := range []string{"modules", "worktrees"} {
		ents, err := os.ReadDir(filepath.Join(g, kind))
		if err != nil {
			continue
		}
		for i, e := range ents {
			if i >= maxScanNested {
				break
			}
			if e.IsDir() {
				out = append(out, gitDirChanged(filepath.Join(g, kind, e.Name()), since, depth+1)...)
			}
		}
	}
	return out
}

// maxScanNested bounds the submodule and worktree entries scanned per
// git dir.
const maxScanNested = 256

// foldName is name with each letter in one case, as a filesystem that
// ignores case compares names (macOS's APFS by default, ext4's casefold
// directories): there a tool opening .envrc or .vscode opens a .ENVRC or a
// .vſcode (ſ folds to s), which the scan must look at as such. A name of
// lower-case ASCII is returned as it is.
func foldName(name string) string {
	i := 0
	for i < len(name) && name[i] < utf8.RuneSelf && (name[i] < 'A' || name[i] > 'Z') {
		i++
	}
	if i == len(name) {
		return name
	}
	var b strings.Builder
	b.Grow(len(name))
	for _, r := range name {
		m := r // the least rune of r's case-folding orbit, in lower case
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b.WriteRune(unicode.ToLower(m))
	}
	return b.String()
}

// nameKind says what the scan makes of an entry's name, compared without
// case (foldName): a git dir, a protected project name (projectTops), a
// name other tools run code from (protect.Reported). It runs for every
// entry read: a name of lower-case ASCII, the usual one, is taken as it
// is, another ASCII one lowered byte by byte, only the rest folded rune
// by rune.
func nameKind(name string) (git, top, reported bool) {
	f := name
	for i := 0; i < len(name); i++ {
		if c := name[i]; c >= utf8.RuneSelf {
			f = foldName(name)
			break
		} else if 'A' <= c && c <= 'Z' {
			if isASCII(name[i:]) {
				f = strings.ToLower(name)
			} else {
				f = foldName(name)
			}
			break
		}
	}
	return f == ".git", projectTops[f], protect.Reported(f)
}

// isASCII says whether s holds bytes below 0x80 only.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// changedSince reports whether p exists with a status change (ctime, which
// the agent cannot set back) at or after since.
func changedSince(p string, since time.Time) bool {
	fi, err := os.Lstat(p)
	if err != nil {
		return false
	}
	return !Ctime(fi).Before(since)
}
