package protect

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Guard says how a run keeps a ledger entry.
type Guard string

// The guards.
const (
	// ReadOnly entries the namespace view binds read-only (a missing one
	// is created empty for the run first, so that the agent cannot
	// create it either) and binds again when the host replaces one
	// during the run. Every engine audits them while the agent runs and
	// after it ends.
	ReadOnly Guard = "read-only"
	// Audited entries are files the agent must write (its own config):
	// the audit compares their code-running keys with what they were
	// before the run and restores them, keeping the agent's version
	// aside.
	Audited Guard = "audited"
)

// Format says how the audit reads a file.
type Format string

// The formats.
const (
	// FormatOpaque files are compared whole.
	FormatOpaque Format = ""
	// FormatGit files are git configuration, read with git's grammar
	// (internal/gitconfig): only their settings that run code or
	// redirect git count.
	FormatGit Format = "gitconfig"
	// FormatJSON files (comments allowed) count only their Keys.
	FormatJSON Format = "json"
	// FormatTOML files count only their Keys.
	FormatTOML Format = "toml"
)

// Entry is one path of the ledger.
type Entry struct {
	// Path is absolute and clean.
	Path string `json:"path"`
	// Name is what allow_edit and --allow-edit call it (one of Names), or
	// "agent config" for the agent's own code-running files.
	Name string `json:"name"`
	// Dir says whether it is (or, missing, is created as) a directory.
	Dir bool `json:"dir"`
	// Why says who runs code from it.
	Why string `json:"why"`
	// Guard is how the run keeps it.
	Guard Guard `json:"guard"`
	// Root is the writable grant that holds it: the agent could write
	// it but for its guard.
	Root string `json:"root"`
	// Missing says it did not exist when the plan was made.
	Missing bool `json:"missing"`
	// Format is how the audit reads it; Keys are, for JSON and TOML,
	// the dotted key paths that run code ("*" matches any key or array
	// index), and Commands, when not empty, the prefix that marks a
	// value of those keys as a command (pi's "!"): other values of them
	// may change.
	Format   Format   `json:"format,omitempty"`
	Keys     []string `json:"keys,omitempty"`
	Commands string   `json:"commands,omitempty"`
	// Link, when not empty, says the entry is a symlink the user made on
	// the way to another entry, pointing at Link: it is kept as it is
	// (never followed; see followLinks).
	Link string `json:"link,omitempty"`
}

// Ledger is every path of a run that makes the user's tools, or the
// agent's next start outside the sandbox, run code: computed once from
// the plan, and read by the view (its read-only mounts and placeholders),
// the watch while the agent runs and the audit after it.
type Ledger struct {
	Entries []Entry `json:"entries"`
	// AllowEdit are the names the user let the agent edit (left out).
	AllowEdit []string `json:"allow_edit"`
	// Top is the top of the working tree whose .git the run's git uses:
	// the workdir, or the repository it is a subdirectory of.
	Top string `json:"top"`
	// Problem, when not empty, is why the namespace view cannot keep the
	// read-only entries read-only (a symlink on the way to one, a file
	// with other hard links): the view refuses the run with it. Engines
	// that bind nothing ignore it.
	Problem string `json:"problem,omitempty"`
}

// ReadOnly returns the entries the view keeps read-only.
func (l Ledger) ReadOnly() []Entry {
	var out []Entry
	for _, e := range l.Entries {
		if e.Guard == ReadOnly {
			out = append(out, e)
		}
	}
	return out
}

// KeyFile is a file of the agent's own config that the agent rewrites
// (agent.toml's code_keys): its code-running keys are audited.
type KeyFile struct {
	// Path is absolute.
	Path string
	// Keys and Commands are as in Entry.
	Keys     []string
	Commands string
}

// Input is what Build reads.
type Input struct {
	// Workdir is the run's working directory (absolute, canonical).
	Workdir string
	// RepoTop is the top of the working tree when the workdir is a
	// subdirectory of a repository ("" when it is the top, or in none):
	// its .git is the run's.
	RepoTop string
	// GitDir and CommonDir are the workdir's linked git directories (a
	// worktree's or submodule's git dir, and a worktree's main .git),
	// "" for none.
	GitDir, CommonDir string
	// AllowEdit are the names the user let the agent edit.
	AllowEdit []string
	// Writable are the paths the agent can write (the workdir included).
	Writable []string
	// Home is the user's home directory ("~/" in git configuration).
	Home string
	// UserGitConfig are the user's and the system's git configuration
	// files, in git's order: their core.hooksPath (relative: inside the
	// project) and include.path name paths the agent may reach.
	UserGitConfig []string
	// AgentCode are the agent's code_paths (absolute): kept read-only.
	AgentCode []string
	// AgentKeys are the agent's code_keys files: audited.
	AgentKeys []KeyFile
}

// ledgerBuilder collects a run's entries: add keeps an entry once, only
// where a writable path holds it and its name is not allowed.
type ledgerBuilder struct {
	in      Input
	l       Ledger
	allowed map[string]bool
	seen    map[string]bool
}

// add adds e unless its name is in AllowEdit, its path is already in, or
// nothing the agent can write holds it; it sets Root and Missing.
func (b *ledgerBuilder) add(e Entry) {
	e.Path = filepath.Clean(e.Path)
	if b.allowed[e.Name] || b.seen[e.Path] {
		return
	}
	e.Root = grantRoot(e.Path, b.in.Writable)
	if e.Root == "" && e.Guard == Audited {
		// An audited file is often granted writable by name
		// (~/.claude.json): the agent writes it; its keys are
		// audited all the same.
		for _, w := range b.in.Writable {
			if w == e.Path {
				e.Root = w
			}
		}
	}
	if e.Root == "" {
		return // nothing the agent can write holds it
	}
	if _, err := os.Lstat(e.Path); errors.Is(err, os.ErrNotExist) {
		e.Missing = true
	}
	b.seen[e.Path] = true
	b.l.Entries = append(b.l.Entries, e)
}

// Build computes the ledger of a run. It reads the workdir's .git, the
// git configuration files (with git's grammar) and stats every entry; it
// writes nothing. Entries no writable path holds are left out (the agent
// cannot write them), and so are the names in AllowEdit.
func Build(in Input) Ledger {
	b := &ledgerBuilder{in: in, l: Ledger{AllowEdit: Normalize(in.AllowEdit)}, allowed: map[string]bool{}, seen: map[string]bool{}}
	if b.l.AllowEdit == nil {
		b.l.AllowEdit = []string{}
	}
	for _, a := range b.l.AllowEdit {
		b.allowed[a] = true
	}
	g := gitLedger{in: in, add: b.add, top: in.Workdir}
	if in.RepoTop != "" {
		g.top = in.RepoTop
	}
	b.l.Top = g.top
	dotgit := filepath.Join(g.top, ".git")
	b.topGit(&g, dotgit)
	for _, p := range project {
		b.add(Entry{Path: filepath.Join(in.Workdir, p.name), Name: p.name, Dir: p.dir, Why: p.why, Guard: ReadOnly, Format: p.fmt, Keys: p.keys})
	}
	b.linkedGit(&g)
	b.otherRepos(&g, dotgit)
	g.userConfig()
	b.agentCode()
	b.commands()
	b.finish()
	return b.l
}

// topGit adds the working tree's .git: a directory's metadata, or a
// gitfile.
func (b *ledgerBuilder) topGit(g *gitLedger, dotgit string) {
	if st, err := os.Lstat(dotgit); err == nil {
		if st.IsDir() {
			g.gitDir(dotgit, true)
		} else {
			b.add(Entry{Path: dotgit, Name: GitFile, Why: "names the git directory your git commands use", Guard: ReadOnly})
		}
	}
}

// linkedGit adds the workdir's linked git directories.
func (b *ledgerBuilder) linkedGit(g *gitLedger) {
	switch {
	case b.in.CommonDir != "":
		// A worktree's own git dir holds config.worktree; hooks and
		// config come from the common dir.
		if b.in.GitDir != "" && b.in.GitDir != b.in.CommonDir {
			g.worktreeDir(b.in.GitDir)
		}
		g.gitDir(b.in.CommonDir, true)
	case b.in.GitDir != "":
		g.gitDir(b.in.GitDir, true)
	}
}

// otherRepos adds a repository at the top of another writable grant
// (--write DIR): it is the user's too, and its git metadata is kept the
// same way.
func (b *ledgerBuilder) otherRepos(g *gitLedger, dotgit string) {
	in := b.in
	for _, w := range in.Writable {
		od := filepath.Join(w, ".git")
		if w == in.Workdir || w == g.top || od == dotgit || od == in.GitDir || od == in.CommonDir {
			continue
		}
		st, err := os.Lstat(od)
		switch {
		case err != nil:
		case st.IsDir():
			other := gitLedger{in: in, add: b.add, top: w, read: g.read}
			other.gitDir(od, true)
			g.read = other.read
		case st.Mode().IsRegular():
			b.add(Entry{Path: od, Name: GitFile, Why: "names the git directory your git commands in " + w + " use", Guard: ReadOnly})
		}
	}
}

// agentCode adds the agent folder's code_paths and code_keys files.
func (b *ledgerBuilder) agentCode() {
	for _, p := range b.in.AgentCode {
		b.add(Entry{Path: p, Name: "agent config", Dir: !isFileName(p), Why: "the agent loads code from it at its next start, inside the sandbox or not", Guard: ReadOnly})
	}
	for _, k := range b.in.AgentKeys {
		b.add(Entry{Path: k.Path, Name: "agent config", Why: "the agent runs commands its code-running keys name at its next start", Guard: Audited, Format: formatOf(k.Path), Keys: k.Keys, Commands: k.Commands})
	}
}

// commands adds what the code-running settings found so far (and the
// user's git configuration) run by path: that is code too.
func (b *ledgerBuilder) commands() {
	in := b.in
	commandEntries(b.l.Entries, in.Workdir, in.Home, b.add)
	var user []Entry
	for _, p := range in.UserGitConfig {
		user = append(user, Entry{Path: p, Name: GitConfig, Format: FormatGit})
	}
	commandEntries(user, in.Workdir, in.Home, b.add)
}

// finish follows the entries' links and checks the read-only entries;
// what fails is the ledger's Problem.
func (b *ledgerBuilder) finish() {
	entries, err := followLinks(b.l.Entries, b.in.Writable)
	if err == nil {
		b.l.Entries = entries
		err = check(b.l.Entries)
	}
	if err != nil {
		b.l.Problem = err.Error()
	}
}

// isFileName says whether a code path that may not exist yet names a
// file: its name, without a leading dot, has an extension.
func isFileName(p string) bool {
	return filepath.Ext(strings.TrimPrefix(filepath.Base(p), ".")) != ""
}

// formatOf is the Format of an agent config file, by its extension.
func formatOf(p string) Format {
	switch filepath.Ext(p) {
	case ".toml":
		return FormatTOML
	case ".json", ".jsonc":
		return FormatJSON
	}
	return FormatOpaque
}

// grantRoot is the longest of roots that path lies strictly below, or ""
// (a path granted writable by name is the user's to write).
func grantRoot(path string, roots []string) string {
	root := ""
	for _, r := range roots {
		if path == r {
			return ""
		}
		if strings.HasPrefix(path, r+"/") && len(r) > len(root) {
			root = r
		}
	}
	return root
}

// ErrSymlink marks a protected path that is, or lies below, a symlink.
var ErrSymlink = errors.New("is a symlink")

// check looks at each read-only entry below its root: every component
// from the root to the path must be a directory (or, for the path itself,
// a file or directory of the expected kind) or missing, never a symlink,
// which the agent could repoint or write through, and a file must have no
// other hard links.
func check(entries []Entry) error {
	for _, e := range entries {
		if e.Guard != ReadOnly || e.Link != "" {
			continue
		}
		parts := strings.Split(strings.TrimPrefix(e.Path, e.Root+"/"), "/")
		cur := e.Root
		for i, part := range parts {
			cur = filepath.Join(cur, part)
			st, err := os.Lstat(cur)
			if errors.Is(err, os.ErrNotExist) {
				break
			}
			if err != nil {
				return fmt.Errorf("protected path %s: %v", e.Path, err)
			}
			last := i == len(parts)-1
			switch {
			case st.Mode()&os.ModeSymlink != 0:
				target, _ := os.Readlink(cur)
				return fmt.Errorf("%s %w (to %s): agent-sandbox keeps %s read-only so that the agent cannot plant code your tools run later, and cannot protect a path through a link (the agent could repoint it or write where it leads); replace the link with what it points to, or %s", cur, ErrSymlink, target, e.Path, e.lift())
			case !last && !st.IsDir():
				return fmt.Errorf("protected path %s: %s is not a directory; remove it or %s", e.Path, cur, e.lift())
			case last && !st.IsDir() && !st.Mode().IsRegular():
				return fmt.Errorf("protected path %s is neither a file nor a directory (%v); remove it or %s", e.Path, st.Mode().Type(), e.lift())
			case last:
				if err := noHardLinks(cur, st, e); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// lift says how the user lets the agent edit e.
func (e Entry) lift() string {
	if e.Name == "agent config" {
		return "remove it from the agent folder's code_paths"
	}
	return fmt.Sprintf("allow the agent to edit it with --allow-edit %s (or allow_edit in agent.toml)", e.Name)
}

// noHardLinks refuses a protected file (or a file directly in a protected
// directory) that has other hard links: the agent would write it through
// the other name.
func noHardLinks(path string, st os.FileInfo, e Entry) error {
	check := func(p string, fi os.FileInfo) error {
		if fi.Mode().IsRegular() && linkCount(fi) > 1 {
			return fmt.Errorf("protected path %s has %d hard links: the agent could change it through another name; remove the other links, or %s", p, linkCount(fi), e.lift())
		}
		return nil
	}
	if !st.IsDir() {
		return check(path, st)
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil
	}
	for i, d := range ents {
		if i >= maxNested || !d.Type().IsRegular() {
			continue
		}
		if fi, err := d.Info(); err == nil {
			if err := check(filepath.Join(path, d.Name()), fi); err != nil {
				return err
			}
		}
	}
	return nil
}

func linkCount(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// Dirs are the directories that hold the mount point of a read-only
// entry in the view: its directory and every directory up to its root
// (each holds a pinned directory's mount point). Sorted, unique.
func (l Ledger) Dirs() []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range l.ReadOnly() {
		for d := filepath.Dir(e.Path); ; d = filepath.Dir(d) {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
			if d == e.Root || len(d) <= len(e.Root) {
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// Pins are the directories between each read-only entry's root and the
// entry (the root excluded): each is bound onto itself in the view, so
// that it can be neither removed nor renamed away (a .git renamed aside
// and rebuilt would carry new hooks). Parents come before children.
func (l Ledger) Pins() []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range l.ReadOnly() {
		parts := strings.Split(strings.TrimPrefix(e.Path, e.Root+"/"), "/")
		cur := e.Root
		for _, part := range parts[:len(parts)-1] {
			cur = filepath.Join(cur, part)
			if !seen[cur] {
				seen[cur] = true
				out = append(out, cur)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return strings.Count(out[i], "/") < strings.Count(out[j], "/") })
	return out
}
