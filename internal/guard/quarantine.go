package guard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
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
// directory when that is on the same filesystem, else beside itself with
// a suffix no tool reads (.agent-sandbox-quarantined-<time>). It returns
// where it went.
func (g *Guard) moveAside(path string) (string, error) {
	if d, err := g.runDirectory(); err == nil {
		dst := filepath.Join(d, path)
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err == nil {
			if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
				if err := renameNoFollow(path, dst); err == nil {
					return dst, nil
				}
			}
		}
	}
	dst := fmt.Sprintf("%s.agent-sandbox-quarantined-%d", path, time.Now().UnixNano())
	if err := renameNoFollow(path, dst); err != nil {
		return "", err
	}
	return dst, nil
}
