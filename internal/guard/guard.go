// Package guard is the host side of a run's protection: it holds the
// ledger's paths (internal/protect) to what they were before the agent
// started, while the agent runs and after it ends, whatever the engine.
//
// Begin snapshots every entry of the ledger before the agent starts. While
// the agent runs (Linux: inotify), a read-only entry the host replaces is
// handed to the engine to be bound read-only again (Options.Reprotect, the
// namespace view's; nil for engines that bind nothing), and every change
// is audited at once. End audits everything once more and then has
// internal/workscan scan the working directory for what no ledger can
// predict (a .git planted in a subdirectory, tool files at any depth),
// over the tree it read during the run (Watch starts that reading).
//
// The audit compares what runs code, not bytes: a git configuration's
// settings other than the harmless ones git writes in ordinary work, the
// code-running keys of a JSON or TOML settings file, a hook. A change to
// one of those is undone (restored as before the run) and the changed
// version kept in the quarantine directory; a change to a file that is
// code as a whole but that the user edits too (.envrc) is reported with a
// copy of the version from before; a path that must stay missing (a
// commondir) is moved aside. Every finding names the file, what changed
// (values quoted: the agent chose them) and where the copy is.
package guard

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	"github.com/agent-sandbox/agent-sandbox/internal/protect"
	"github.com/agent-sandbox/agent-sandbox/internal/quiesce"
	"github.com/agent-sandbox/agent-sandbox/internal/workscan"
)

// noFollow opens a path that was a regular file when statted: not through
// a symlink swapped in since, and without blocking on a FIFO.
const noFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// readFile, openRead, ctime and devIno are the workdir scan's (one
// reading of a file that never follows a link at its end, one stat
// helper for both packages).
type readFile = workscan.ReadFile

var (
	openRead = workscan.OpenRead
	ctime    = workscan.Ctime
	devIno   = workscan.DevIno
)

// Options configure a Guard.
type Options struct {
	// Ledger is the run's.
	Ledger protect.Ledger
	// Workdir is scanned after the run.
	Workdir string
	// QuarantineDir is where the changed versions of files and the
	// versions from before the run are kept (outside every grant); a
	// subdirectory per run is made there when something is kept.
	QuarantineDir string
	// Agent names the run's subdirectory of QuarantineDir.
	Agent string
	// TreeFile keeps the workdir's tree between runs, for the scan
	// (outside every grant); "" for none.
	TreeFile string
	// RunDir holds the markers of the runs going on in the workdir
	// (outside every grant; marker.go): a marker left by an
	// agent-sandbox that no longer runs is a run the next start audits
	// (Recover). "" for none.
	RunDir string
	// Placeholders, when not nil, are the placeholders runs of the view
	// made (internal/placeholder's Registry): one found at an entry's
	// path counts as the entry missing, so that a run beside another
	// one in the same workdir, of any engine, does not take the other's
	// placeholders, made or removed during it, for changes.
	Placeholders Placeholders
}

// Placeholders are the placeholders of protected paths that runs made and
// still hold as made.
type Placeholders interface {
	// Is reports whether path is one, now.
	Is(path string) bool
	// Paths lists them, now.
	Paths() []string
}

// Reprotect binds the read-only entry, or the pinned directory, at path
// again after the host replaced or removed it (creating a placeholder
// first when an entry is gone): the namespace view's, given to Watch.
type Reprotect func(path string) error

// Guard holds a run's ledger.
type Guard struct {
	opts    Options
	started time.Time
	// before is what changed at the workdir's top just before the run,
	// as it was then (the scan does not report it while unchanged).
	before workscan.Before
	states []*state
	byPath map[string]*state

	mu       sync.Mutex
	findings map[string]*Finding
	order    []string
	runDir   string // the quarantine subdirectory, once made
	windows  []time.Duration

	w *watcher
	// tw watches the workdir's directories for the scan after the run
	// (nil for none), through w's instance.
	tw *workscan.Watch
	// shared says the sandbox holds the watch's instance (Share).
	shared bool
	// pre reads the workdir's tree while the agent runs, for the scan
	// after it (started by Watch).
	pre *workscan.Prewalk
	// bound says that the engine keeps the read-only entries read-only
	// (the namespace view: Watch got a Reprotect): a change to one then
	// comes from the host, unless the host replaced it first (the agent
	// can write the new file until it is bound again). Without it the
	// agent could write any of them at any time.
	bound     bool
	reprotect Reprotect
	// notDir are the paths on the way from an entry's writable root to
	// it that were not directories before the run (the user's own
	// symlinks): the final audit leaves them alone (repairWay).
	notDir map[string]bool
}

// Kind is what a finding says was done.
type Kind int

// The kinds of finding.
const (
	// KindRestored: the run's change was undone, put back as before
	// the run (what the run left moved aside or kept in the quarantine).
	KindRestored Kind = iota + 1
	// KindNamed: a change the user could have made too (.envrc,
	// .vscode) was named for review, not undone.
	KindNamed
	// KindPlanted: the scan after the run found files planted where
	// git or a tool runs code from them (internal/workscan).
	KindPlanted
	// KindUnchecked: something could not be checked (unreadable, the
	// scan stopped): what lies there is unknown.
	KindUnchecked
	// KindDanger: a change could not be undone, or an entry could not
	// be protected again; the text says what to do.
	KindDanger
	// KindNotFinal: the audit after the run is not final, a process of
	// the run may still run and undo what it restored.
	KindNotFinal
)

// String names the kind (for messages and tests).
func (k Kind) String() string {
	switch k {
	case KindRestored:
		return "restored"
	case KindNamed:
		return "named"
	case KindPlanted:
		return "planted"
	case KindUnchecked:
		return "unchecked"
	case KindDanger:
		return "danger"
	case KindNotFinal:
		return "not final"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// scanKind is the kind of a finding of the workdir's scan.
func scanKind(f workscan.Finding) Kind {
	if f.Unchecked {
		return KindUnchecked
	}
	return KindPlanted
}

// state is one ledger entry with what the guard knows of it.
type state struct {
	e    protect.Entry
	base snapshot
	// baseKeys are its code-running settings before the run (codeKeys);
	// baseOK says they could be read.
	baseKeys map[string]string
	baseOK   bool
	// windows counts the times the host replaced or removed it while the
	// agent ran: each left the new file writable until it was bound
	// again.
	windows int
	// accepted is the latest content whose code-running settings were
	// found as before the run (the host's own harmless changes kept):
	// what a restore writes back.
	accepted []byte
	// lock says that its lock file (git's "<name>.lock", created,
	// written and renamed over it) exists now; refused counts the lock
	// files removed without that rename: a change the read-only bind
	// refused (see [Guard.refusedLocks]).
	lock    bool
	refused int
}

// Finding is one thing the guard found and did.
type Finding struct {
	// Path is the ledger entry (or, from the scan, the path found).
	Path string
	// Kind is what was done: the decision the text words, for a
	// program (and the tests) to act on rather than the words.
	Kind Kind
	// Text says what changed and what was done, without the warning
	// prefix.
	Text string
	// Count is how many times it was found during the run.
	Count int
}

// Begin snapshots the ledger's entries as they are now: before the agent
// starts (after the engine made its placeholders), and, on Linux, starts
// watching them (their events queue until Watch).
func Begin(o Options) (*Guard, error) {
	g := &Guard{opts: o, started: time.Now(), byPath: map[string]*state{}, findings: map[string]*Finding{}}
	for _, e := range o.Ledger.Entries {
		st := &state{e: e, base: g.placeholderAsMissing(e, takeEntry(e))}
		if e.Format != protect.FormatOpaque {
			if !st.base.exists {
				st.baseKeys, st.baseOK = map[string]string{}, true
			} else if st.base.content != nil {
				st.baseKeys, st.baseOK = protect.CodeKeys(e, st.base.content)
			}
		}
		st.accepted = st.base.content
		g.states = append(g.states, st)
		g.byPath[e.Path] = st
	}
	g.before = workscan.RecentBefore(o.Workdir, g.started)
	g.notDir = g.waysNotDirs()
	if err := g.writeMarker(); err != nil {
		return nil, errMarker(err)
	}
	w, err := newWatcher(g)
	if err != nil {
		g.removeMarker()
		return nil, err
	}
	g.w = w
	return g, nil
}

// Watch starts acting on the changes to the ledger's entries, once the
// agent's sandbox is up. r is the engine's Reprotect, nil for an engine
// that binds nothing (then any entry may be the agent's doing); masks are
// further paths the engine hides (credential files, /etc secrets) that r
// puts back the same way when the host replaces one. It returns at once.
func (g *Guard) Watch(r Reprotect, masks ...string) {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.bound, g.reprotect = r != nil, r
	g.mu.Unlock()
	if g.w != nil && r != nil {
		g.w.addMasks(masks)
	}
	walk := g.opts.Workdir != "" && g.pre == nil
	if walk && g.w != nil && g.shared {
		// Only where the instance's destruction is the sandbox's
		// (Share): destroying a thousand watches costs this process
		// about 5 ms more than the scan spares.
		g.tw = workscan.NewWatch(g.w.inotifyFd(), g.opts.Workdir) // before the events are read
	}
	if g.w != nil {
		g.w.start()
	}
	if walk {
		g.pre = workscan.StartPrewalk(g.opts.Workdir, g.opts.TreeFile, g.tw)
	}
}

// End stops the watch, audits every entry once more, restoring what must
// not have changed, calls release (the engine's clean-up of its
// placeholders, which returns those still as made: never reported; nil
// for none), and scans the workdir (the scan stops early when interrupted
// is closed). It prints every finding to stderr and returns them.
//
// gone is the quiesce step's proof that nothing of the run runs any more
// (only internal/quiesce makes one): the audit is final only then. Without
// it, End still audits and restores, but says loudly that a process of the
// run may undo what it restored, and keeps the run's marker so that the
// next start in the workdir audits again.
func (g *Guard) End(stderr io.Writer, gone quiesce.Gone, interrupted <-chan struct{}, release func() []string) []Finding {
	if g == nil {
		if release != nil {
			release()
		}
		return nil
	}
	switch {
	case gone.Unsupported():
		diag.Warnf(stderr, "%s", gone.Problem())
	case !gone.Proven():
		g.note(g.opts.Workdir, KindNotFinal, fmt.Sprintf("DANGER: the audit after this run is not final: %s. What it restored may be undone by a process of the run that still runs: stop it, then start agent-sandbox in %s again, whose start audits this run once more", gone.Problem(), g.opts.Workdir))
	}
	if r := gone.Remote(); r != "" {
		diag.Warnf(stderr, "the agent ran in %s, which is kept between runs and is not stopped by agent-sandbox: a process the agent left there can still change the workdir after this audit (stop it to be sure)", r)
	}
	// The watch's last events are read (the tree's watch among them:
	// no watch the reading of the tree places after that counts).
	if g.w != nil {
		g.w.stop()
	}
	// The reading of the tree, if still going, stops now: the scan
	// starts from the previous run's tree instead (workscan.Prewalk.Finish).
	g.pre.Stop()
	if g.opts.Workdir != "" {
		paths := make([]string, 0, len(g.states))
		for _, st := range g.states {
			paths = append(paths, st.e.Path)
		}
		ownerAccess(g.opts.Workdir, paths)
	}
	if q := g.opts.QuarantineDir; q != "" {
		// The state root (the quarantine's parent) and what the
		// audit and the placeholders' release write there.
		root := filepath.Dir(q)
		ownerAccessDirs(root, q, filepath.Join(root, "protect"), filepath.Join(root, "protect", "stash"), g.opts.RunDir, filepath.Dir(g.opts.RunDir), filepath.Dir(g.opts.TreeFile))
	}
	g.finalAudit()
	var placeholders []string
	if release != nil {
		placeholders = release()
	}
	skip := map[string]bool{}
	for _, st := range g.states {
		skip[st.e.Path] = true
	}
	for _, p := range placeholders {
		skip[p] = true
	}
	if g.opts.Placeholders != nil {
		// Another run's, made during this one.
		for _, p := range g.opts.Placeholders.Paths() {
			skip[p] = true
		}
	}
	during := g.pre.Finish(interrupted)
	findings, next := workscan.Scan(g.opts.Workdir, g.started, skip, g.before, interrupted, during, g.pre.Previous())
	for _, f := range findings {
		g.note(f.Path, scanKind(f), f.Text)
	}
	if next.Complete() {
		workscan.SaveTree(g.opts.TreeFile, g.pre.Previous(), next)
	}
	if ws := g.Windows(); len(ws) > 0 {
		sorted := append([]time.Duration(nil), ws...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
		diag.Notef(stderr, "the host replaced protected files %d time(s) during the run; each was read-only again in the sandbox within %v (median), %v at most", len(ws), sorted[len(sorted)/2].Round(time.Microsecond), sorted[len(sorted)-1].Round(time.Microsecond))
	}
	for _, text := range g.refusedLocks() {
		diag.Notef(stderr, "%s", text)
	}
	out := g.Findings()
	for _, f := range out {
		text := f.Text
		if f.Count > 1 {
			text += fmt.Sprintf(" (found %d times during the run)", f.Count)
		}
		diag.Warnf(stderr, "%s", text)
	}
	if gone.Proven() || gone.Unsupported() {
		// The audit is final (or cannot be more final on this
		// system): nothing of the run can undo it.
		g.removeMarker()
	}
	return out
}

// Share hands the guard's watch (its inotify instance) to keep, which
// holds a reference until it exits (the namespace view's init): the
// instance's destruction, which waits for the kernel's SRCU grace period,
// then happens in that process's exit rather than on this one's way out.
// Called before Watch, it lets Watch follow the workdir's directories too
// (workscan.Watch), whose watches go with the instance.
func (g *Guard) Share(keep func(*os.File) error) error {
	if g == nil || g.w == nil || keep == nil {
		return nil
	}
	err := g.w.share(keep)
	g.shared = err == nil
	return err
}

// Findings returns what the guard found so far, in the order found.
func (g *Guard) Findings() []Finding {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]Finding, 0, len(g.order))
	for _, p := range g.order {
		out = append(out, *g.findings[p])
	}
	return out
}

// Windows are, for each time the host replaced a read-only entry while
// the agent ran, how long the new file stayed writable inside: from the
// watch seeing the replacement to Reprotect's return.
func (g *Guard) Windows() []time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]time.Duration(nil), g.windows...)
}

// restoreLink puts back a symlink entry (Entry.Link) the agent removed,
// repointed or replaced: what is there now is moved to the quarantine and
// the link made again as it was. (In the view the link is a mount point
// the agent cannot touch; the host's own change lands here too, and is
// kept in the quarantine.)
func (g *Guard) restoreLink(st *state, cur snapshot) {
	e := st.e
	what := describeChange(st.base, cur)
	text := fmt.Sprintf("%s, a symlink to %s, changed during the run (%s): put back as it was (%s)", e.Path, e.Link, what, e.Why)
	if cur.exists {
		kept, err := g.moveAside(e.Path)
		if err != nil {
			g.note(e.Path, KindDanger, fmt.Sprintf("DANGER: %s, a symlink to %s, changed during the run (%s) and could not be moved aside (%v): inspect it before you use it (%s)", e.Path, e.Link, what, err, e.Why))
			return
		}
		text += "; what was there is kept at " + kept
	}
	if err := os.Symlink(e.Link, e.Path); err != nil {
		g.note(e.Path, KindDanger, fmt.Sprintf("DANGER: %s, a symlink to %s, changed during the run (%s) and could not be made again (%v): make it again yourself (%s)", e.Path, e.Link, what, err, e.Why))
		return
	}
	g.note(e.Path, KindRestored, text)
}

// refusedLocks are the notes on the read-only entries a tool inside tried
// to replace in vain (lockEvent): that the refusal was the sandbox's, and
// what to run to see why and to allow it.
func (g *Guard) refusedLocks() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, st := range g.states {
		if st.refused == 0 {
			continue
		}
		name := st.e.Path
		if rel, err := filepath.Rel(g.opts.Workdir, st.e.Path); err == nil && g.opts.Workdir != "" && !strings.HasPrefix(rel, "..") {
			name = rel
		}
		count := "a change"
		if st.refused > 1 {
			count = fmt.Sprintf("%d changes", st.refused)
		}
		out = append(out, fmt.Sprintf("the sandbox refused %s to %s (the \"Device or resource busy\" or \"Read-only file system\" inside came from the sandbox): it stays read-only because %s; `agent-sandbox why --write %s` explains, and `--allow-edit %s` lets the agent change it",
			count, shellWord(name), whyLower(st.e.Why), shellWord(name), st.e.Name))
	}
	return out
}

// whyLower is an entry's Why as the end of a sentence.
func whyLower(why string) string {
	if why == "" {
		return "your tools run code from it"
	}
	r, n := utf8.DecodeRuneInString(why)
	return string(unicode.ToLower(r)) + why[n:]
}

// shellWord is a path as a shell word: as it is when it holds only
// ordinary characters, else single-quoted.
func shellWord(p string) string {
	for _, r := range p {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("/._-+,:@%", r)) {
			return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
		}
	}
	return p
}

// note records a finding for path (the latest kind and text win; the count
// grows).
func (g *Guard) note(path string, kind Kind, text string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f, ok := g.findings[path]
	if !ok {
		f = &Finding{Path: path}
		g.findings[path] = f
		g.order = append(g.order, path)
	}
	f.Kind, f.Text = kind, text
	f.Count++
}

// audit compares one entry with its snapshot from before the run and
// acts on a change: final is the audit after the run (the agent is gone:
// a file is replaced by rename), else the agent may still run (a file is
// rewritten in place, so that no new directory entry, and so no new
// writable window, appears).
func (g *Guard) audit(st *state, final bool) {
	cur := takeSince(st.e, st.base)
	if cur.same(st.base) {
		return
	}
	if cur = g.placeholderAsMissing(st.e, cur); cur.same(st.base) {
		return
	}
	e := st.e
	if g.unreadable(st, cur, final) {
		return
	}
	switch {
	case cur.err != nil:
		g.note(e.Path, KindUnchecked, fmt.Sprintf("%s could not be checked after the run (%v): inspect it (%s)", e.Path, cur.err, e.Why))
	case e.Link != "":
		g.restoreLink(st, cur)
	case e.Guard == protect.Audited && cur.exists && (cur.other || st.base.exists && cur.dir != st.base.dir || !st.base.exists && cur.dir):
		// The agent writes an audited file, never replaces it with a
		// symlink (its tool follows it), a FIFO (the next read blocks) or
		// a directory: put back as before, whatever it points at.
		g.restoreWhole(st, cur, describeChange(st.base, cur), final)
	case e.Format != protect.FormatOpaque && !cur.dir && !cur.other && cur.content == nil && cur.exists:
		g.restoreOversize(st, cur, final)
	case e.Format != protect.FormatOpaque && !cur.dir && !cur.other:
		g.auditKeys(st, cur, final)
	default:
		g.auditWhole(st, cur, final)
	}
}

// placeholderAsMissing is s, the snapshot of e, or a missing path when s
// is a placeholder a run of the view made (Options.Placeholders): empty,
// "{}" or "." and recorded as made.
func (g *Guard) placeholderAsMissing(e protect.Entry, s snapshot) snapshot {
	if g.opts.Placeholders == nil || !s.exists || s.err != nil || s.other {
		return s
	}
	if s.dir && len(s.entries) > 0 || !s.dir && (s.content == nil || len(s.content) > 3) {
		return s
	}
	if g.opts.Placeholders.Is(e.Path) {
		return snapshot{}
	}
	return s
}

// unreadable acts on an entry made unreadable (mode 000), which what
// runs it later may read all the same (root; after a chmod): it is moved
// aside unread (a rename needs no read permission) and put back as
// before. It says whether cur was that.
func (g *Guard) unreadable(st *state, cur snapshot, final bool) bool {
	e := st.e
	hostOnly := g.bound && st.windows == 0 && e.Guard == protect.ReadOnly // read-only in the view all along
	if cur.err == nil || !errors.Is(cur.err, fs.ErrPermission) || hostOnly || !final && e.Guard != protect.Audited {
		return false
	}
	cur.err, cur.dir, cur.other = nil, false, true
	g.restoreWhole(st, cur, "made unreadable", final)
	return true
}

// auditKeys acts on a change to a file read in its format: only a change
// to its code-running settings counts; it is undone.
func (g *Guard) auditKeys(st *state, cur snapshot, final bool) {
	e := st.e
	if !cur.exists {
		return // nothing runs from a file that is gone
	}
	var curKeys map[string]string
	ok := false
	if cur.content != nil {
		curKeys, ok = protect.CodeKeys(e, cur.content)
	}
	if ok && st.baseOK && equalKeys(st.baseKeys, curKeys) {
		g.mu.Lock()
		st.accepted = cur.content
		g.mu.Unlock()
		return
	}
	if !ok && !final {
		// Not readable in its format while the agent runs: maybe caught
		// between two writes. The audit after the run decides.
		return
	}
	changes := keysChanges(st, cur, curKeys, ok)
	kept, err := g.keep(e.Path, "changed", cur.content)
	if err != nil {
		g.note(e.Path, KindDanger, fmt.Sprintf("DANGER: the run changed settings of %s that run code (%s), and keeping a copy of it failed (%v): it was left as it is; inspect it before you use the tool it belongs to", e.Path, strings.Join(changes, "; "), err))
		return
	}
	restored, err := g.restoredKeys(st, cur, curKeys, ok)
	if err == nil {
		err = putBackKeys(st, cur, restored, final)
	}
	if err != nil {
		g.note(e.Path, KindDanger, fmt.Sprintf("DANGER: the run changed settings of %s that run code (%s), and restoring them failed (%v): the changed file is kept at %s; restore it before you use the tool it belongs to", e.Path, strings.Join(changes, "; "), err, kept))
		return
	}
	g.note(e.Path, KindRestored, g.keysRestoredText(st, changes, kept))
}

// keysChanges says what changed in a file read in its format: its
// code-running keys, or why they cannot be compared (ok: cur's keys
// could be read).
func keysChanges(st *state, cur snapshot, curKeys map[string]string, ok bool) []string {
	e := st.e
	switch {
	case cur.content == nil:
		return []string{"the file grew too large to read"}
	case !ok:
		return []string{fmt.Sprintf("it is no longer valid %s", formatName(e.Format))}
	case !st.baseOK:
		return []string{fmt.Sprintf("it was not valid %s before the run", formatName(e.Format))}
	default:
		return diffKeys(st.baseKeys, curKeys)
	}
}

// restoredKeys decides what a file whose code-running keys changed is
// put back as: nothing (it did not exist), the agent's version with only
// the changed keys put back (JSON, a few keys, and the result reads as
// before), or its last accepted content.
func (g *Guard) restoredKeys(st *state, cur snapshot, curKeys map[string]string, ok bool) ([]byte, error) {
	e := st.e
	g.mu.Lock()
	accepted := st.accepted
	g.mu.Unlock()
	var restored []byte
	var err error
	switch {
	case !st.base.exists:
		restored = nil
	case accepted == nil:
		err = errTooLarge
	case e.Format == protect.FormatJSON && ok && st.baseOK && len(changedKeys(st.baseKeys, curKeys)) <= maxPatched:
		// Only the changed keys are put back (the agent's other edits
		// kept), and the result must read as before the run, the way the
		// agent's tool reads it (a duplicate name: the last wins), or the
		// whole file is.
		restored, err = restoreJSON(st.base.content, cur.content, changedKeys(st.baseKeys, curKeys))
		if rk, rok := protect.CodeKeys(e, restored); err != nil || !rok || !equalKeys(rk, st.baseKeys) {
			restored, err = accepted, nil
		}
	default:
		restored = accepted
	}
	return restored, err
}

// putBackKeys removes a file that did not exist before the run, or
// writes restored back over it.
func putBackKeys(st *state, cur snapshot, restored []byte, final bool) error {
	if !st.base.exists {
		return removeFile(st.e.Path)
	}
	return writeBack(st.e.Path, restored, cur.mode, final)
}

// keysRestoredText is the finding for a file whose code-running keys
// were put back.
func (g *Guard) keysRestoredText(st *state, changes []string, kept string) string {
	e := st.e
	what := "restored as before the run"
	if !st.base.exists {
		what = "removed (it did not exist before the run)"
	}
	text := fmt.Sprintf("the run changed settings of %s that run code (%s; %s): %s; the changed version is kept at %s", e.Path, strings.Join(changes, "; "), e.Why, what, kept)
	g.mu.Lock()
	windows := st.windows
	g.mu.Unlock()
	if windows > 0 {
		text += "; the host replaced this file during the run, and a change made on the host while the agent runs cannot be told from the agent's: if you made this change yourself, apply it again once the run is over"
	}
	return text
}

// maxPatched bounds the code-running keys restoreJSON puts back one by
// one (each a pass over the document); a change to more restores the
// whole file.
const maxPatched = 32

// restoreOversize acts on a file read in its format that grew past what a
// snapshot reads (maxContent): its settings cannot be compared, so it is
// moved aside whole and its last accepted content written back.
func (g *Guard) restoreOversize(st *state, cur snapshot, final bool) {
	e := st.e
	g.mu.Lock()
	accepted := st.accepted
	g.mu.Unlock()
	aside, err := g.moveAside(e.Path)
	if err == nil && st.base.exists && accepted != nil {
		err = writeBack(e.Path, accepted, cur.mode, true)
	}
	if err != nil {
		g.note(e.Path, KindDanger, fmt.Sprintf("DANGER: %s grew past %d bytes during the run, too large to compare its settings that run code, and could not be put back (%v): inspect it before you use the tool it belongs to (%s)", e.Path, limitOf(e), err, e.Why))
		return
	}
	what := "restored as before the run"
	if !st.base.exists {
		what = "removed (it did not exist before the run)"
	}
	g.note(e.Path, KindRestored, fmt.Sprintf("%s grew past %d bytes during the run, too large to compare its settings that run code (%s): moved aside to %s and %s", e.Path, limitOf(e), e.Why, aside, what))
}

// auditWhole acts on a change to a file or directory compared whole.
func (g *Guard) auditWhole(st *state, cur snapshot, final bool) {
	e := st.e
	if g.bound && st.windows == 0 {
		// Read-only in the view the whole run: the host changed it.
		return
	}
	what := describeChange(st.base, cur)
	if restoresWhole(e) {
		g.restoreWhole(st, cur, what, final)
		return
	}
	// The user edits these too (.envrc, .vscode): the agent's change
	// cannot be told from theirs, so it is named, with the version from
	// before the run kept for comparison.
	why := "the sandbox could not keep it read-only"
	if g.bound {
		why = fmt.Sprintf("it was replaced on the host %d time(s) during the run, and each time the agent could write the new file until it was read-only again", st.windows)
	}
	text := fmt.Sprintf("%s changed during the run (%s) and %s: review it before you use it (%s)", e.Path, what, why, e.Why)
	if st.base.exists && !st.base.dir && st.base.content != nil {
		if kept, err := g.keep(e.Path, "before", st.base.content); err == nil {
			text += "; its version from before the run is kept at " + kept
		}
	}
	g.note(e.Path, KindNamed, text)
}

// restoresWhole says whether a change to e is undone rather than
// reported: what runs code by itself and is not the user's to edit while
// an agent runs (a gitfile, a commondir, hooks and what they link to).
func restoresWhole(e protect.Entry) bool {
	return e.Name == protect.GitFile || e.Name == protect.GitHooks || e.Name == protect.GitConfig && e.Format == protect.FormatOpaque ||
		e.Name == "agent config" && e.Guard == protect.ReadOnly && e.Format == protect.FormatOpaque
}

// finalAudit audits every entry once the agent is gone: first the
// directories on the way to entries that the run replaced by a symlink or
// a file are put back (repairWay), and the entries below them written
// back as before the run; then every other entry is audited.
func (g *Guard) finalAudit() {
	var repaired []string
	for _, st := range g.states {
		repaired = append(repaired, g.repairWay(st)...)
	}
	for _, st := range g.states {
		below := false
		for _, d := range repaired {
			below = below || within(st.e.Path, d)
		}
		if below {
			g.putBack(st)
			continue
		}
		g.audit(st, true)
	}
}

// way lists the paths from e's writable root (excluded) to its parent
// directory (included); nil when e lies directly in it.
func way(e protect.Entry) []string {
	if e.Root == "" || !within(e.Path, e.Root) {
		return nil
	}
	rel, err := filepath.Rel(e.Root, filepath.Dir(e.Path))
	if err != nil || rel == "." {
		return nil
	}
	var out []string
	p := e.Root
	for _, c := range strings.Split(rel, string(filepath.Separator)) {
		p = filepath.Join(p, c)
		out = append(out, p)
	}
	return out
}

// waysNotDirs are the paths on the entries' ways that exist as something
// other than a directory now (Begin).
func (g *Guard) waysNotDirs() map[string]bool {
	out := map[string]bool{}
	seen := map[string]bool{}
	for _, st := range g.states {
		for _, p := range way(st.e) {
			if seen[p] {
				continue
			}
			seen[p] = true
			if fi, err := os.Lstat(p); err == nil && !fi.IsDir() {
				out[p] = true
			}
		}
	}
	return out
}

// repairWay puts back the directories on the way from the entry's
// writable root to it that the run replaced by a symlink or a file (the
// entry's tool follows a symlink there, into a directory the agent
// chose): each is moved aside and made again, empty. It returns them.
func (g *Guard) repairWay(st *state) []string {
	e := st.e
	var repaired []string
	for _, way := range way(e) {
		fi, err := os.Lstat(way)
		if err != nil || fi.IsDir() || g.notDir[way] {
			return repaired
		}
		aside, err := g.moveAside(way)
		if err == nil {
			err = os.Mkdir(way, 0o700)
		}
		if err != nil {
			g.note(way, KindDanger, fmt.Sprintf("DANGER: the run replaced %s, on the way to %s, by something that is not a directory (%s), and it could not be put back (%v): inspect it before you use the tool it belongs to (%s)", way, e.Path, fi.Mode().Type(), err, e.Why))
			return repaired
		}
		g.note(way, KindRestored, fmt.Sprintf("the run replaced the directory %s, on the way to %s, by a symlink or a file: moved aside to %s, and the directory made again with what it held before the run that runs code", way, e.Path, aside))
		repaired = append(repaired, way)
	}
	return repaired
}

// putBack writes an entry below a directory repairWay made again back as
// it was before the run.
func (g *Guard) putBack(st *state) {
	e := st.e
	if !st.base.exists {
		return
	}
	if err := os.MkdirAll(filepath.Dir(e.Path), 0o700); err != nil {
		g.note(e.Path, KindDanger, fmt.Sprintf("DANGER: %s could not be written back after the run replaced a directory on its way (%v): inspect it before you use the tool it belongs to", e.Path, err))
		return
	}
	if st.base.dir {
		if err := os.Mkdir(e.Path, 0o755); err == nil {
			g.restoreWhole(st, takeEntry(e), "the directory on its way was replaced", true)
		}
		return
	}
	if st.base.content == nil {
		g.note(e.Path, KindDanger, fmt.Sprintf("DANGER: %s could not be written back after the run replaced a directory on its way (%v): inspect it before you use the tool it belongs to", e.Path, errTooLarge))
		return
	}
	if err := writeBack(e.Path, st.base.content, st.base.mode, true); err != nil {
		g.note(e.Path, KindDanger, fmt.Sprintf("DANGER: %s could not be written back after the run replaced a directory on its way (%v): inspect it before you use the tool it belongs to", e.Path, err))
		return
	}
	g.note(e.Path, KindRestored, fmt.Sprintf("%s was written back as before the run, in the directory made again (%s)", e.Path, e.Why))
}

// within says whether p lies strictly below dir.
func within(p, dir string) bool {
	return strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// restoreWhole undoes a change to a file or directory: a file gets its
// content from before the run back; a directory's added or changed files
// are moved aside and its removed or changed files written back.
func (g *Guard) restoreWhole(st *state, cur snapshot, what string, final bool) {
	e := st.e
	var err error
	if !st.base.dir {
		err = g.restoreFile(st, cur, what, final)
	} else {
		err = g.restoreDir(st, cur, what)
	}
	if err != nil {
		g.note(e.Path, KindDanger, fmt.Sprintf("DANGER: %s changed during the run (%s; %s) and could not be restored (%v): inspect it before you use it", e.Path, what, e.Why, err))
	}
}

// restoreFile undoes a change to what was a file (or nothing) before the
// run, and notes what it did; an error: it could not.
func (g *Guard) restoreFile(st *state, cur snapshot, what string, final bool) error {
	switch {
	case !cur.exists:
		return g.writeBackRemoved(st)
	case cur.dir || cur.other || st.base.content == nil && st.base.exists:
		return g.replaceAside(st, what)
	default:
		return g.restoreChanged(st, cur, what, final)
	}
}

// writeBackRemoved writes back a file the run removed.
func (g *Guard) writeBackRemoved(st *state) error {
	e := st.e
	if st.base.content == nil {
		return errTooLarge
	}
	if err := writeBack(e.Path, st.base.content, st.base.mode, true); err != nil {
		return err
	}
	g.note(e.Path, KindRestored, fmt.Sprintf("%s was removed during the run (%s): written back as before the run", e.Path, e.Why))
	return nil
}

// replaceAside moves aside what took a file's place (a directory, a
// link, something else), or a changed file too large to keep, and writes
// back the file from before the run where there was one.
func (g *Guard) replaceAside(st *state, what string) error {
	e := st.e
	aside, err := g.moveAside(e.Path)
	if err != nil {
		return err
	}
	if st.base.exists && st.base.content != nil {
		if err := writeBack(e.Path, st.base.content, st.base.mode, true); err != nil {
			return err
		}
	}
	g.note(e.Path, KindRestored, fmt.Sprintf("%s changed during the run (%s; %s): moved aside to %s and restored as before the run", e.Path, what, e.Why, aside))
	return nil
}

// restoreChanged keeps a copy of a changed file and writes back its
// content from before the run, or removes it when it did not exist.
func (g *Guard) restoreChanged(st *state, cur snapshot, what string, final bool) error {
	e := st.e
	kept, err := g.keep(e.Path, "changed", cur.content)
	if err == nil {
		if st.base.exists {
			err = writeBack(e.Path, st.base.content, st.base.mode, final)
		} else {
			err = removeFile(e.Path)
		}
	}
	if err != nil {
		return err
	}
	g.note(e.Path, KindRestored, fmt.Sprintf("%s changed during the run (%s; %s): restored as before the run; the changed version is kept at %s", e.Path, what, e.Why, kept))
	return nil
}

// restoreDir undoes a change to what was a directory before the run:
// what took its place is moved aside and the directory made again, its
// added or changed entries are moved aside and its removed or changed
// files written back.
func (g *Guard) restoreDir(st *state, cur snapshot, what string) error {
	e := st.e
	if !cur.dir {
		aside, err := g.moveAside(e.Path)
		if err != nil {
			return err
		}
		if err := os.Mkdir(e.Path, 0o755); err != nil {
			return err
		}
		g.note(e.Path, KindRestored, fmt.Sprintf("%s was replaced during the run (%s; %s): moved aside to %s", e.Path, what, e.Why, aside))
		cur = takeEntry(e)
	}
	moved, err := g.restoreEntries(st, cur)
	if err != nil {
		return err
	}
	if len(moved) > 0 {
		g.note(e.Path, KindRestored, fmt.Sprintf("the run changed %s (%s): moved aside %s, and restored what was there before the run; inspect them, then delete them", e.Path, e.Why, strings.Join(moved, ", ")))
	}
	return nil
}

// restoreEntries moves aside each entry of a directory added or changed
// since the snapshot before the run, and writes back each file removed
// or changed; it returns what it moved aside, and where to.
func (g *Guard) restoreEntries(st *state, cur snapshot) ([]string, error) {
	var moved []string
	for _, name := range st.base.changedEntries(cur) {
		p := filepath.Join(st.e.Path, name)
		if _, now := cur.entries[name]; now {
			aside, err := g.moveAside(p)
			if err != nil {
				return nil, err
			}
			moved = append(moved, fmt.Sprintf("%s to %s", diag.QuoteName(p), aside))
		}
		if b, was := st.base.entries[name]; was && !b.dir && b.content != nil {
			if err := writeBack(p, b.content, b.mode, true); err != nil {
				return nil, err
			}
		}
	}
	return moved, nil
}

// describeChange says in a few words how cur differs from base.
func describeChange(base, cur snapshot) string {
	switch {
	case !base.exists:
		return "created"
	case !cur.exists:
		return "removed"
	case base.dir && cur.dir:
		names := base.changedEntries(cur)
		for i, n := range names {
			names[i] = diag.QuoteName(n)
		}
		if len(names) > 8 {
			names = append(names[:8], fmt.Sprintf("and %d more", len(names)-8))
		}
		return "entries added, changed or removed: " + strings.Join(names, ", ")
	case base.dir != cur.dir || cur.other:
		return "replaced by something else"
	}
	return "content changed"
}

func equalKeys(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// changedKeys are the keys whose values differ between a and b.
func changedKeys(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func formatName(f protect.Format) string {
	switch f {
	case protect.FormatGit:
		return "git configuration"
	case protect.FormatJSON:
		return "JSON"
	case protect.FormatTOML:
		return "TOML"
	}
	return string(f)
}
