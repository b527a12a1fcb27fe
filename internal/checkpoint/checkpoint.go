// Package checkpoint keeps a way back from what an agent did to its
// workdir: before each agent run (and after it) the state of the workdir's
// files is recorded in a store of agent-sandbox's own, under the state
// root that no grant reaches ($XDG_STATE_HOME/agent-sandbox/checkpoints/
// <workdir key>/), never in the project's own .git/objects (which the
// agent can write). Diff compares two records, Restore puts a workdir back
// as a record has it.
//
// The store is content-addressed: a file's bytes are kept once, as a blob
// named by its sha256 (objects/), and each checkpoint is a manifest
// (manifests/<id>.json.gz) listing every entry with its type, mode,
// owner, size, modification time, blob or symlink target; directories are
// entries of their own, so empty directories are kept. Special files
// (FIFOs, sockets, devices) are named and skipped. A later checkpoint that
// changed little is a delta of the one before (manifests/<id>.delta.gz,
// delta.go), checked against its digest when read. The head cache (the
// last checkpoint's entries with each file's ctime, inode and device)
// lets a later checkpoint read only the files that changed and write its
// delta without reading a manifest, and a checkpoint of a tree unchanged
// since the last one is that one (nothing written).
//
// Everything here reads and writes content the agent controls without
// running any of it and without following a symlink: no git is run (the
// ignore rules are parsed here, from the tree as the checkpoint found it),
// the tree is walked with openat(O_NOFOLLOW) from a descriptor of the
// workdir, and Restore writes through workdir-anchored descriptors (a
// directory the agent replaced by a symlink is removed, never written
// through).
//
// A run (cmd/agent-sandbox) calls Begin just before the backend's Execute,
// so before this run's placeholders exist (other live runs' placeholders,
// from the state root's protect/<key>.placeholders, are left out), and
// Active.End once Execute has returned and nothing of the agent runs. Begin
// holds the workdir's live-run lock (checkpoints/<workdir key>.lock) shared
// for the whole run; undo takes it exclusively and refuses while a run
// holds it.
package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// Format is the version of the manifests this build reads and writes.
const Format = 1

// StoreFormat is the version of the store's layout this build writes:
// 2 has deltas (delta.go), which a build that reads only 1 would take
// for missing checkpoints, and whose blobs its prune would remove. This
// build reads a store of layout 1 and marks it 2 when it opens it, so
// that an older build refuses it, whole, rather than lose part of it.
const StoreFormat = 2

// formatLine is the store's format file: its first line.
var formatLine = fmt.Sprintf("agent-sandbox checkpoint store %d", StoreFormat)

// formatLine1 is the first line of a store of layout 1.
const formatLine1 = "agent-sandbox checkpoint store 1"

// Entry types.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
)

// Entry is one path of a checkpoint, relative to the workdir ("a/b").
type Entry struct {
	Path string `json:"path"`
	Type string `json:"type"`
	// Mode is the permission bits with setuid, setgid and sticky (07777).
	Mode uint32 `json:"mode"`
	UID  uint32 `json:"uid"`
	GID  uint32 `json:"gid"`
	Size int64  `json:"size,omitempty"`
	// MTime is the modification time in nanoseconds since the epoch.
	MTime int64 `json:"mtime"`
	// Hash is a file's sha256 (its blob's name).
	Hash string `json:"hash,omitempty"`
	// Target is a symlink's target, as read (never followed).
	Target string `json:"target,omitempty"`
	// Repo marks a directory holding a repository of its own (a nested
	// repository or a submodule: a .git inside it).
	Repo bool `json:"repo,omitempty"`
}

// Skip is a path a checkpoint left out, and why. Restore leaves it, and
// everything below it, as it finds it.
type Skip struct {
	Path string `json:"path"`
	Why  string `json:"why"`
}

// Manifest is one checkpoint.
type Manifest struct {
	Format  int       `json:"format"`
	ID      string    `json:"id"`
	Workdir string    `json:"workdir"`
	Time    time.Time `json:"time"`
	// Rules are the ignore patterns the checkpoint applied (the tree's
	// .gitignore and .git/info/exclude as it found them, and the
	// defaults): a later walk compared with it applies the same ones.
	Rules   []string `json:"rules"`
	Entries []Entry  `json:"entries"`
	Skipped []Skip   `json:"skipped,omitempty"`
	// Bytes is the total size of the files recorded.
	Bytes int64 `json:"bytes"`
	// Digest is the sha256 of the entries and skips: equal digests mean
	// equal trees.
	Digest string `json:"digest"`
	// Note is one line about how the checkpoint was taken (a workdir on
	// a filesystem whose stat a cache cannot trust).
	Note string `json:"note,omitempty"`

	newSkips bool
}

// Run is the record of one agent run (or one undo) in a workdir.
type Run struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"` // "run" or "undo"
	Command string `json:"command"`
	// Before and After are the checkpoints taken before the agent started
	// and after it was gone ("" when none could be taken).
	Before string    `json:"before"`
	After  string    `json:"after,omitempty"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end,omitempty"`
	Exit   int       `json:"exit"`
	// Summary is a one-line summary of the change (Before to After).
	Summary string `json:"summary,omitempty"`
	// Undid is the run an undo put back.
	Undid string `json:"undid,omitempty"`
}

// Settings bound the store; the zero value of a field is its default.
type Settings struct {
	// MaxBytes bounds the files one checkpoint records (a workdir
	// above it is not checkpointed).
	MaxBytes int64
	// IgnoredFileMax is the largest ignored file that is kept.
	IgnoredFileMax int64
	// KeepAge is how long a run's checkpoints are kept.
	KeepAge time.Duration
	// StoreMax bounds the store of one workdir: the oldest runs are
	// pruned beyond it.
	StoreMax int64
}

// Defaults.
const (
	DefaultMaxBytes       = 2 << 30
	DefaultIgnoredFileMax = 1 << 20
	DefaultKeepAge        = 14 * 24 * time.Hour
	DefaultStoreMax       = 4 << 30
)

func (s Settings) withDefaults() Settings {
	if s.MaxBytes <= 0 {
		s.MaxBytes = DefaultMaxBytes
	}
	if s.IgnoredFileMax <= 0 {
		s.IgnoredFileMax = DefaultIgnoredFileMax
	}
	if s.KeepAge <= 0 {
		s.KeepAge = DefaultKeepAge
	}
	if s.StoreMax <= 0 {
		s.StoreMax = DefaultStoreMax
	}
	return s
}

// Store is the checkpoint store of one workdir.
type Store struct {
	// Dir is the store's directory.
	Dir string
	// Workdir is the canonical workdir it records.
	Workdir string
	// StateRoot is agent-sandbox's state root (for the placeholder
	// registry).
	StateRoot string
	Settings  Settings
	// wrote counts the blobs this process wrote.
	wrote int
	// listed counts the directory listings taken from the head cache.
	listed atomic.Int64
	// racyAfter, when set, replaces the walk's start as the time from
	// which a file's stat is too recent to be trusted by the cache (tests).
	racyAfter time.Time
}

// StoreDir is the store directory of workdir under stateRoot.
func StoreDir(stateRoot, workdir string) string {
	sum := sha256.Sum256([]byte(workdir))
	return filepath.Join(stateRoot, "checkpoints", hex.EncodeToString(sum[:12]))
}

// Open returns the store of workdir (created when missing). It refuses a
// store of another format, naming it, and changes nothing in it.
func Open(stateRoot, workdir string, set Settings) (*Store, error) {
	s := &Store{Dir: StoreDir(stateRoot, workdir), Workdir: workdir, StateRoot: stateRoot, Settings: set.withDefaults()}
	repairModes(stateRoot, s.Dir, false)
	if err := os.MkdirAll(filepath.Join(stateRoot, "checkpoints"), 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint store: %v", err)
	}
	for _, d := range []string{s.Dir, s.path("objects"), s.path("manifests"), s.path("runs")} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("checkpoint store: creating %s: %v", d, err)
		}
	}
	b, err := os.ReadFile(s.path("format"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := writeFileAtomic(s.path("format"), []byte(formatLine+"\n"+"workdir "+workdir+"\n")); err != nil {
			return nil, fmt.Errorf("checkpoint store: %v", err)
		}
	case err != nil:
		return nil, fmt.Errorf("checkpoint store %s: %v", s.Dir, err)
	default:
		first, rest, _ := strings.Cut(string(b), "\n")
		if first == formatLine1 {
			if err := writeFileAtomic(s.path("format"), []byte(formatLine+"\n"+rest)); err != nil {
				return nil, fmt.Errorf("checkpoint store %s: marking it of layout %d: %v", s.Dir, StoreFormat, err)
			}
			first = formatLine
		}
		if first != formatLine {
			return nil, fmt.Errorf("checkpoint store %s was written by another version of agent-sandbox (%q, this one reads %q): left as it is; move it aside to start a new store", s.Dir, first, formatLine)
		}
		if w, ok := strings.CutPrefix(strings.TrimSpace(rest), "workdir "); ok && w != workdir {
			return nil, fmt.Errorf("checkpoint store %s records %s, not %s: left as it is; move it aside to start a new store", s.Dir, w, workdir)
		}
	}
	return s, nil
}

func (s *Store) path(elem ...string) string {
	return filepath.Join(append([]string{s.Dir}, elem...)...)
}

func (s *Store) objectPath(hash string) string {
	return s.path("objects", hash[:2], hash[2:])
}

// saveManifest writes m whole.
func (s *Store) saveManifest(m *Manifest) error {
	return writeGzJSON(s.path("manifests"), s.manifestPath(m.ID), m)
}

// Manifest reads the checkpoint id (a delta is made whole).
func (s *Store) Manifest(id string) (*Manifest, error) {
	return s.manifest(id, 0)
}

func (s *Store) manifest(id string, depth int) (*Manifest, error) {
	p := s.manifestPath(id)
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		if _, derr := os.Lstat(s.deltaPath(id)); derr == nil {
			return s.resolveDelta(id, depth)
		}
		return nil, fmt.Errorf("checkpoint %s is not in the store (pruned?): %s is missing", id, p)
	}
	var m Manifest
	if err := readGzJSON(p, &m); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("checkpoint %s: %v", id, err)
		}
		return nil, err
	}
	if m.Format != Format {
		return nil, fmt.Errorf("checkpoint %s was written by another version of agent-sandbox (format %d, this one reads %d): left as it is", p, m.Format, Format)
	}
	return &m, nil
}

// SaveRun writes (or rewrites) the run record r.
func (s *Store) SaveRun(r *Run) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(s.path("runs", r.ID+".json"), append(b, '\n'))
}

// Runs lists the store's run records, oldest first. A record that
// cannot be read is reported in bad (one line each) and left as it is.
func (s *Store) Runs() (runs []*Run, bad []string, err error) {
	ents, err := os.ReadDir(s.path("runs"))
	if err != nil {
		return nil, nil, fmt.Errorf("checkpoint store: %v", err)
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		p := s.path("runs", e.Name())
		b, err := os.ReadFile(p)
		var r Run
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err != nil || r.ID+".json" != e.Name() {
			bad = append(bad, fmt.Sprintf("run record %s is corrupt (%v): left as it is", p, err))
			continue
		}
		runs = append(runs, &r)
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].ID < runs[j].ID })
	return runs, bad, nil
}

// FindRun is the run named id (a whole id or a unique prefix), or the
// latest run when id is "".
func (s *Store) FindRun(id string) (*Run, error) {
	runs, _, err := s.Runs()
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("no runs recorded for %s (`agent-sandbox runs` lists them)", s.Workdir)
	}
	if id == "" {
		return runs[len(runs)-1], nil
	}
	var found *Run
	for _, r := range runs {
		if r.ID == id {
			return r, nil
		}
		if strings.HasPrefix(r.ID, id) {
			if found != nil {
				return nil, fmt.Errorf("run %q is ambiguous (%s, %s, ...): give more of its id", id, found.ID, r.ID)
			}
			found = r
		}
	}
	if found == nil {
		return nil, fmt.Errorf("no run %q recorded for %s (`agent-sandbox runs` lists them)", id, s.Workdir)
	}
	return found, nil
}

// NewID is a new run or checkpoint id: sortable by time.
func NewID(t time.Time) string {
	var b [3]byte
	if f, err := os.Open("/dev/urandom"); err == nil {
		_, _ = f.Read(b[:])
		f.Close()
	}
	return t.UTC().Format("20060102-150405.000") + "-" + hex.EncodeToString(b[:])
}

func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// Quote is a path as a message shows one the agent may have chosen (as
// the guard's scan shows them): as it is when it holds only printable
// characters that cannot be taken for the message's own words, quoted
// (control characters escaped) otherwise.
func Quote(p string) string {
	for _, r := range p {
		if !unicode.IsPrint(r) || r == ' ' || r == '"' || r == '\'' || r == '\\' || r == ',' || r == ';' || r == utf8.RuneError {
			return strconv.Quote(p)
		}
	}
	return p
}
