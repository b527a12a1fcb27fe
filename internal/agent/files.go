package agent

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/sandboxfile"
)

// File is one file of an agent folder.
type File struct {
	// Rel is its path inside the folder ("agent.toml", "sandbox/nono.json").
	Rel string
	// Data is its content.
	Data []byte
}

// Files returns the folder's files, in the order agent.toml, then the
// sandbox files present: from the binary for a built-in, else from disk.
func (f *Folder) Files() ([]File, error) {
	read := diskReader(f.Dir)
	if f.Builtin() {
		sub, err := fs.Sub(BuiltinFS(), strings.TrimPrefix(f.Dir, builtinPrefix))
		if err != nil {
			return nil, err
		}
		read = fsReader(sub)
	}
	// The reader the folder was loaded with: a name that exists but
	// cannot be read is an error here too (package optfile), never
	// skipped.
	var out []File
	for _, rel := range []string{"agent.toml", sandboxfile.Nono.RelPath(), sandboxfile.Sbx.RelPath()} {
		b, ok, err := read(filepath.ToSlash(rel))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(f.Dir, rel), err)
		}
		if !ok {
			if rel == "agent.toml" {
				return nil, fmt.Errorf("%s: %w", filepath.Join(f.Dir, rel), fs.ErrNotExist)
			}
			continue
		}
		out = append(out, File{Rel: filepath.ToSlash(rel), Data: b})
	}
	return out, nil
}

// CopyTo writes the folder's files to dir, a new agent folder (its name
// is the copy's agent id). It refuses a dir that exists, so that nothing
// of the user's is overwritten.
func (f *Folder) CopyTo(dir string) error {
	if err := CheckID(filepath.Base(dir)); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	if _, err := os.Lstat(dir); err == nil {
		return fmt.Errorf("%s exists already: remove it or name another directory; nothing was written", dir)
	}
	files, err := f.Files()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".copy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, file := range files {
		p := filepath.Join(tmp, filepath.FromSlash(file.Rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, file.Data, 0o644); err != nil {
			return err
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	// All files or none: the folder appears complete.
	return os.Rename(tmp, dir)
}
