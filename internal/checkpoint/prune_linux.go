//go:build linux

package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Prune removes the runs older than Settings.KeepAge, then the oldest
// runs while the store is over Settings.StoreMax (the latest run is
// always kept), with the checkpoints and file contents no remaining run
// needs. It returns one line per run pruned.
func (s *Store) Prune(now time.Time) []string {
	runs, _, err := s.Runs()
	if err != nil || len(runs) == 0 {
		return nil
	}
	var out []string
	drop := map[string]bool{}
	for _, r := range runs[:len(runs)-1] {
		if now.Sub(r.Start) > s.Settings.KeepAge {
			drop[r.ID] = true
		}
	}
	var size int64
	if s.wrote > 0 {
		size = s.size()
	}
	for _, r := range runs[:len(runs)-1] {
		if size <= s.Settings.StoreMax {
			break
		}
		if !drop[r.ID] {
			drop[r.ID] = true
			size = -1 // recomputed below
		}
		if size == -1 {
			s.removeRuns(runs, drop)
			size = s.size()
		}
	}
	if len(drop) == 0 {
		return nil
	}
	for _, r := range runs {
		if drop[r.ID] {
			why := "older than " + s.Settings.KeepAge.String()
			if now.Sub(r.Start) <= s.Settings.KeepAge {
				why = fmt.Sprintf("the store of %s is over %d bytes", s.Workdir, s.Settings.StoreMax)
			}
			out = append(out, fmt.Sprintf("pruned run %s (%s, %s) and its checkpoints: %s", r.ID, r.Command, r.Start.Format(time.RFC3339), why))
		}
	}
	s.removeRuns(runs, drop)
	return out
}

// removeRuns deletes the records in drop, the manifests no other record
// (nor the head) names, and the blobs no remaining manifest names.
func (s *Store) removeRuns(runs []*Run, drop map[string]bool) {
	keep := map[string]bool{}
	if h, err := s.head(); err == nil {
		keep[h.ID] = true
	}
	for _, r := range runs {
		if drop[r.ID] {
			continue
		}
		keep[r.Before], keep[r.After] = true, true
	}
	if !s.unchain(keep) {
		return // a delta that cannot be read or rewritten: remove nothing
	}
	for _, r := range runs {
		if drop[r.ID] {
			os.Remove(s.path("runs", r.ID+".json"))
		}
	}
	ents, _ := os.ReadDir(s.path("manifests"))
	blobs := map[string]bool{}
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json.gz")
		if !ok {
			if id, ok = strings.CutSuffix(e.Name(), ".delta.gz"); !ok {
				continue
			}
		}
		if !keep[id] {
			os.Remove(s.path("manifests", e.Name()))
			continue
		}
		m, err := s.Manifest(id)
		if err != nil {
			return // a manifest that cannot be read: keep every blob
		}
		for _, en := range m.Entries {
			if en.Hash != "" {
				blobs[en.Hash] = true
			}
		}
	}
	removed := false
	dirs, _ := os.ReadDir(s.path("objects"))
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		files, _ := os.ReadDir(s.path("objects", d.Name()))
		for _, f := range files {
			if !blobs[d.Name()+f.Name()] {
				os.Remove(s.path("objects", d.Name(), f.Name()))
				removed = true
			}
		}
	}
	if removed {
		// The stat cache may name removed blobs: the next checkpoint
		// reads every file again.
		os.Remove(s.path("headcache"))
	}
}

// unchain writes whole each kept checkpoint stored as a delta of one
// that is not kept, so that what a pruned run alone needed goes with it;
// false when one cannot be read or written.
func (s *Store) unchain(keep map[string]bool) bool {
	var whole []*Manifest
	for id := range keep {
		if id == "" {
			continue
		}
		if _, err := os.Lstat(s.deltaPath(id)); err != nil {
			continue
		}
		d, err := s.readDelta(id)
		if err != nil {
			return false
		}
		if keep[d.Base] {
			continue
		}
		m, err := s.Manifest(id)
		if err != nil {
			return false
		}
		whole = append(whole, m)
	}
	for _, m := range whole {
		if s.saveManifest(m) != nil {
			return false
		}
		os.Remove(s.deltaPath(m.ID))
	}
	return true
}

// size is the bytes the store's blobs and manifests take.
func (s *Store) size() int64 {
	var n int64
	_ = filepath.WalkDir(s.Dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
