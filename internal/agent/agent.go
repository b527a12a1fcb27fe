// Package agent finds and loads agent folders.
//
// An agent folder holds agent.toml (what to run and what it needs) and
// optionally sandbox/nono.json and sandbox/sbx.json (the backend opt-ins).
// This package owns the folder format, the agent id rule, the lookup order of
// agent names, and the built-in folders embedded in the binary.
package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/agent-sandbox/agent-sandbox/internal/optfile"
	"github.com/agent-sandbox/agent-sandbox/internal/sandboxfile"
	"github.com/agent-sandbox/agent-sandbox/internal/suggest"
)

// Source says where a folder was found.
type Source string

// Where a folder can come from, in lookup order.
const (
	FromPath      Source = "path argument"
	FromEnvPath   Source = "AGENT_SANDBOX_PATH"
	FromUserConf  Source = "user config"
	FromSystem    Source = "system config"
	FromBuiltin   Source = "built-in"
	builtinPrefix        = "builtin:"
)

// Folder is a loaded agent folder.
type Folder struct {
	// ID is the folder's name.
	ID string
	// Dir is the folder's absolute path, or "builtin:<id>" for a built-in.
	Dir    string
	Source Source
	Config *Config
	// Nono and Sbx are the folder files; nil when absent.
	Nono *sandboxfile.File
	Sbx  *sandboxfile.File
}

// Builtin reports whether the folder is embedded in the binary (and so has no
// directory on disk to grant or mount).
func (f *Folder) Builtin() bool { return f.Source == FromBuiltin }

// Warnings collects the folder files' warnings.
func (f *Folder) Warnings() []string {
	var w []string
	if f.Nono != nil {
		w = append(w, f.Nono.Warnings...)
	}
	if f.Sbx != nil {
		w = append(w, f.Sbx.Warnings...)
	}
	return w
}

// Compiled on first use: the sandbox init, which is this binary too,
// never needs it.
var idRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`) })

// CheckID enforces the agent id rule: the folder name, made of [a-z0-9._-],
// starting with a letter or digit, at most 64 characters.
func CheckID(id string) error {
	if len(id) > 64 || !idRe().MatchString(id) {
		return fmt.Errorf("agent id %q: an agent folder's name must be 1-64 characters of a-z, 0-9, '.', '_' and '-', starting with a letter or digit", id)
	}
	return nil
}

// LoadDir loads the agent folder at dir.
func LoadDir(dir string, src Source) (*Folder, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	id := filepath.Base(abs)
	if err := CheckID(id); err != nil {
		return nil, fmt.Errorf("%s: %w", abs, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("agent folder %s: %w", abs, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("agent folder %s: not a directory", abs)
	}
	return load(diskReader(abs), abs, id, src)
}

// reader reads a file of an agent folder by its slash-separated relative
// path. ok is false only when the file is absent; a file that exists but
// cannot be read is an error (never "absent": a policy file that cannot be
// read must not make the run unsandboxed or open).
type reader func(rel string) (data []byte, ok bool, err error)

// diskReader reads the files of the folder at dir (see package optfile).
func diskReader(dir string) reader {
	return func(rel string) ([]byte, bool, error) { return optfile.ReadIn(dir, rel) }
}

// fsReader reads the files of an embedded folder.
func fsReader(fsys fs.FS) reader {
	return func(rel string) ([]byte, bool, error) {
		b, err := fs.ReadFile(fsys, rel)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, nil
		}
		return b, err == nil, err
	}
}

func load(read reader, dir, id string, src Source) (*Folder, error) {
	tomlPath := filepath.Join(dir, "agent.toml")
	b, ok, err := read("agent.toml")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s: missing; every agent folder needs an agent.toml naming its command", tomlPath)
	}
	cfg, err := ParseConfig(tomlPath, b)
	if err != nil {
		return nil, err
	}
	f := &Folder{ID: id, Dir: dir, Source: src, Config: cfg}
	for _, k := range []sandboxfile.Kind{sandboxfile.Nono, sandboxfile.Sbx} {
		p := filepath.Join(dir, k.RelPath())
		b, ok, err := read(filepath.ToSlash(k.RelPath()))
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		sf, err := sandboxfile.Parse(p, k, b)
		if err != nil {
			return nil, err
		}
		if k == sandboxfile.Nono {
			f.Nono = sf
		} else {
			f.Sbx = sf
		}
	}
	return f, nil
}

// Lookup is the environment of a name lookup.
type Lookup struct {
	// Path is AGENT_SANDBOX_PATH: colon-separated directories of agent folders.
	Path string
	// UserDir is $XDG_CONFIG_HOME/agent-sandbox/agents.
	UserDir string
	// SystemDir is /etc/agent-sandbox/agents.
	SystemDir string
	// Workdir is the run's working directory: folders inside it are never
	// found by name, because the agent can write there.
	Workdir string
}

// Paths lists the directories searched for a name, in order.
func (l Lookup) Paths() []string {
	var out []string
	for _, d := range l.Dirs() {
		out = append(out, d.Dir)
	}
	return out
}

// Dirs lists the directories searched for a name, in order, with their sources.
func (l Lookup) Dirs() []struct {
	Dir    string
	Source Source
} {
	var out []struct {
		Dir    string
		Source Source
	}
	for _, d := range filepath.SplitList(l.Path) {
		if d != "" {
			out = append(out, struct {
				Dir    string
				Source Source
			}{d, FromEnvPath})
		}
	}
	for _, d := range []struct {
		Dir    string
		Source Source
	}{{l.UserDir, FromUserConf}, {l.SystemDir, FromSystem}} {
		if d.Dir != "" {
			out = append(out, d)
		}
	}
	return out
}

// Find resolves an AGENT argument: a path to a folder when it contains "/",
// otherwise a name looked up in l's directories and then the built-ins.
// The second result is a warning, or "".
func Find(arg string, l Lookup) (*Folder, string, error) {
	if strings.Contains(arg, "/") {
		f, err := LoadDir(arg, FromPath)
		if err != nil {
			return nil, "", err
		}
		warn := ""
		if l.Workdir != "" && within(f.Dir, l.Workdir) {
			warn = fmt.Sprintf("agent folder %s is inside the working directory, where the sandboxed agent can write: it can change its own policy for the next run", f.Dir)
		}
		return f, warn, nil
	}
	if err := CheckID(arg); err != nil {
		return nil, "", err
	}
	for _, d := range l.Dirs() {
		if !filepath.IsAbs(d.Dir) {
			return nil, "", fmt.Errorf("%s entry %q is relative: agent folders are looked up only in absolute directories, so that the working directory is never searched", d.Source, d.Dir)
		}
		// A lookup directory or folder that exists but cannot be used is an
		// error, never a fall-through to the next directory or a built-in
		// (which could be a weaker policy than the one the user wrote).
		if ok, err := optfile.Dir(d.Dir); err != nil {
			return nil, "", fmt.Errorf("%s directory: %w", d.Source, err)
		} else if !ok {
			continue
		}
		cand := filepath.Join(d.Dir, arg)
		if ok, err := optfile.Dir(cand); err != nil {
			return nil, "", fmt.Errorf("agent %q (found through %s): %w", arg, d.Source, err)
		} else if !ok {
			continue
		}
		real, err := filepath.EvalSymlinks(cand)
		if err != nil {
			return nil, "", err
		}
		if l.Workdir != "" && within(real, l.Workdir) {
			return nil, "", fmt.Errorf("agent folder %s (found through %s) is inside the working directory %s, where the agent can write; it is not trusted by name (move it out of the working directory, or run from another directory with --workdir)", real, d.Source, l.Workdir)
		}
		f, err := LoadDir(cand, d.Source)
		if err != nil {
			return nil, "", err
		}
		f.ID = arg
		return f, "", nil
	}
	f, err := LoadBuiltin(arg)
	if err == nil {
		return f, "", nil
	}
	if !errors.Is(err, ErrNoBuiltin) {
		return nil, "", err // a built-in that does not load is a bug, not "not found"
	}
	var searched []string
	names := BuiltinNames()
	for _, d := range l.Dirs() {
		searched = append(searched, d.Dir)
		if entries, err := os.ReadDir(d.Dir); err == nil {
			for _, e := range entries {
				names = append(names, e.Name())
			}
		}
	}
	return nil, "", &NotFoundError{Name: arg, msg: fmt.Sprintf("agent %q not found%s in %s or the built-in agents (%s); pass a path to an agent folder to run one from elsewhere", arg, suggest.Phrase(arg, names), strings.Join(searched, ", "), strings.Join(BuiltinNames(), ", "))}
}

// NotFoundError is Find's error for a name no lookup directory or
// built-in has.
type NotFoundError struct {
	Name string
	msg  string
}

func (e *NotFoundError) Error() string { return e.msg }

func within(p, base string) bool {
	base = filepath.Clean(base)
	if real, err := filepath.EvalSymlinks(base); err == nil {
		base = real
	}
	return p == base || strings.HasPrefix(p, base+string(filepath.Separator))
}

// All lists every agent visible by name: the first folder found for each
// name, in lookup order, then the built-ins not shadowed. Folders that fail to
// load are returned with their error.
func All(l Lookup) []Listed {
	seen := map[string]bool{}
	var out []Listed
	for _, d := range l.Dirs() {
		ok, err := optfile.Dir(d.Dir)
		var entries []os.DirEntry
		if ok {
			entries, err = os.ReadDir(d.Dir)
		}
		if err != nil {
			// Find refuses every name while this directory is unusable.
			out = append(out, Listed{Name: d.Dir, Dir: d.Dir, Source: d.Source, Err: fmt.Errorf("%s directory: %w", d.Source, err)})
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if seen[name] || CheckID(name) != nil {
				continue
			}
			// Every name a lookup would stop at is listed, including one
			// that is not a usable folder (Find's error says why).
			seen[name] = true
			f, _, err := Find(name, l)
			out = append(out, Listed{Name: name, Dir: filepath.Join(d.Dir, name), Source: d.Source, Folder: f, Err: err})
		}
	}
	for _, name := range BuiltinNames() {
		if seen[name] {
			continue
		}
		f, err := LoadBuiltin(name)
		out = append(out, Listed{Name: name, Dir: builtinPrefix + name, Source: FromBuiltin, Folder: f, Err: err})
	}
	return out
}

// Listed is one row of All.
type Listed struct {
	Name   string
	Dir    string
	Source Source
	Folder *Folder
	Err    error
}
