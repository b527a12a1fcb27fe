package guard

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runDirectory returns the run's quarantine subdirectory, making it on
// first use: QuarantineDir/<time>-<agent>-<pid>, mode 0700.
func (g *Guard) runDirectory() (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.runDir != "" {
		return g.runDir, nil
	}
	if g.opts.QuarantineDir == "" {
		return "", errors.New("no quarantine directory")
	}
	name := fmt.Sprintf("%s-%s-%d", g.started.Format("2006-01-02T15-04-05"), g.opts.Agent, os.Getpid())
	d := filepath.Join(g.opts.QuarantineDir, name)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", err
	}
	g.runDir = d
	return d, nil
}

// maxCopies bounds the versions of one path a run keeps.
const maxCopies = 16

// keep writes content (a version of path: label is "changed" or "before")
// into the run's quarantine directory, at path's own path below it, and
// returns where. A nil content (too large to have been read) is not kept.
func (g *Guard) keep(path, label string, content []byte) (string, error) {
	if content == nil {
		return "", errTooLarge
	}
	d, err := g.runDirectory()
	if err != nil {
		return "", err
	}
	dst := filepath.Join(d, path) + "." + label
	for i := 2; ; i++ {
		if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
			break
		}
		if i > maxCopies {
			// An agent rewriting the file in a loop: the latest version
			// replaces the last slot, so the quarantine stays bounded.
			dst = filepath.Join(d, path) + "." + label + ".latest"
			break
		}
		dst = filepath.Join(d, path) + "." + label + "." + strconv.Itoa(i)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(dst, content, 0o600); err != nil {
		return "", err
	}
	return dst, nil
}

// moveAside renames path out of the way: into the run's quarantine
// directory when that is on the same filesystem (on another one a file
// or symlink is copied there and removed), else beside itself with a
// suffix no tool reads (.agent-sandbox-quarantined-<time>), and beside
// the ledger's directory that holds it, never inside it (where the next
// audit would find it as a new entry and move it again). It returns
// where it went.
func (g *Guard) moveAside(path string) (string, error) {
	if d, err := g.runDirectory(); err == nil {
		dst := filepath.Join(d, path)
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err == nil {
			if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
				err := renameNoFollow(path, dst)
				if err == nil {
					return dst, nil
				}
				if errors.Is(err, syscall.EXDEV) && copyAside(path, dst) == nil {
					return dst, nil
				}
			}
		}
	}
	dst := fmt.Sprintf("%s.agent-sandbox-quarantined-%d", g.outside(path), time.Now().UnixNano())
	if err := renameNoFollow(path, dst); err != nil {
		return "", err
	}
	return dst, nil
}

// outside is the name path is moved aside under when the quarantine
// cannot take it: beside the outermost ledger directory that holds it
// (.git/hooks/pre-commit becomes .git/hooks-pre-commit), or path itself.
func (g *Guard) outside(path string) string {
	top := path
	for {
		up := filepath.Dir(top)
		st, ok := g.byPath[up]
		if !ok || up == top || !st.e.Dir && !st.base.dir {
			break
		}
		top = up
	}
	if top == path {
		return path
	}
	rel, _ := filepath.Rel(top, path)
	return top + "-" + strings.ReplaceAll(rel, string(filepath.Separator), "-")
}

// copyAside copies the file or symlink at path (never followed) to dst
// and removes path: a move across filesystems.
func copyAside(path, dst string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		t, err := os.Readlink(path)
		if err != nil {
			return err
		}
		if err := os.Symlink(t, dst); err != nil {
			return err
		}
	case fi.Mode().IsRegular():
		f, err := openRead(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if !f.Is(fi) {
			return errors.New("replaced while moved")
		}
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		_, werr := io.Copy(out, f)
		if cerr := out.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			_ = os.Remove(dst)
			return werr
		}
	default:
		return errors.New("neither a file nor a symlink")
	}
	if err := removeFile(path); err != nil {
		_ = os.Remove(dst)
		return err
	}
	return nil
}
