//go:build linux

package landlock

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// cacheLayers readies the writable layer of each of s's caches: the
// agent's own (cacheLayer), held with an exclusive lock for the run; when
// a concurrent run of the same agent holds it (an overlay's layers must
// not be shared by two mounts), a fresh one for this run, removed after it.
// It returns the layers by name and their release.
func cacheLayers(s spec.Spec) (map[string]string, func(), error) {
	layers := map[string]string{}
	var locks []*os.File
	var temps []string
	release := func() {
		for _, l := range locks {
			l.Close()
		}
		for _, t := range temps {
			removeTree(t)
		}
	}
	for _, c := range s.Caches {
		layer := cacheLayer(s, c.Name)
		if err := os.MkdirAll(layer, 0o700); err != nil {
			release()
			return nil, nil, fmt.Errorf("creating the cache layer %s: %v", layer, err)
		}
		lock, err := os.OpenFile(layer+".lock", os.O_RDWR|os.O_CREATE, 0o600)
		if err == nil && unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
			lock.Close()
			lock = nil
			layer, err = os.MkdirTemp(filepath.Dir(layer), c.Name+".run-")
			temps = append(temps, layer)
		}
		if err != nil {
			release()
			return nil, nil, fmt.Errorf("the cache layer of %s: %v", c.Path, err)
		}
		if lock != nil {
			locks = append(locks, lock)
		}
		for _, d := range []string{"upper", "work"} {
			if err := os.MkdirAll(filepath.Join(layer, d), 0o700); err != nil {
				release()
				return nil, nil, fmt.Errorf("creating the cache layer %s: %v", layer, err)
			}
		}
		layers[c.Name] = layer
	}
	return layers, release, nil
}

// removeTree removes a cache layer of one run: what the agent wrote there
// may hold read-only directories (Go's module cache) and an overlay's
// work directory may hold a directory it made unreadable, so every
// directory is made writable first.
func removeTree(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() && d.Type()&fs.ModeSymlink == 0 {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}
