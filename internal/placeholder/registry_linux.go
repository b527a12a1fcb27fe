//go:build linux

package placeholder

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/safefs"
)

// Registry is what every run of the view recorded in a state root's
// protect/ (the registries of all workdirs): the placeholders made now.
// A run of any engine in the same workdir at the same time reads it, so
// that a placeholder another run made or removed meanwhile is not taken
// for a change to a protected path (guard.Options.Placeholders).
type Registry struct {
	// StateRoot is agent-sandbox's state directory.
	StateRoot string
}

// records are the recorded placeholders (not the exclude lines).
func (r Registry) records() []record {
	if r.StateRoot == "" {
		return nil
	}
	regs, _ := filepath.Glob(filepath.Join(r.StateRoot, "protect", "*.placeholders"))
	var out []record
	for _, p := range regs {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var rec record
			if json.Unmarshal(sc.Bytes(), &rec) == nil && filepath.IsAbs(rec.Path) && rec.Exclude == "" {
				out = append(out, rec)
			}
		}
		f.Close()
	}
	return out
}

// Is reports whether path holds, now, a placeholder a run recorded, as it
// was made (the very inode, empty or with its placeholder content).
func (r Registry) Is(path string) bool {
	for _, rec := range r.records() {
		if rec.Path == path && (stillAsMade(rec) || rec.Pending && shapedAsMade(rec)) {
			return true
		}
	}
	return false
}

// shapedAsMade reports whether rec's path holds what a placeholder is made
// as, whatever its inode: a placeholder being made, whose record is
// pending (its content may not be written yet: an empty file counts).
func shapedAsMade(rec record) bool {
	fd, err := safefs.OpenFd(rec.Path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if asMade(fd, rec.Dir, rec.Content) {
		return true
	}
	var fst unix.Stat_t
	return !rec.Dir && unix.Fstat(fd, &fst) == nil && fst.Mode&unix.S_IFMT == unix.S_IFREG && fst.Size == 0 &&
		fst.Nlink == 1 && fst.Uid == uint32(euid())
}

// Paths lists the placeholders recorded now that are still as made.
func (r Registry) Paths() []string {
	var out []string
	for _, rec := range r.records() {
		if !rec.Pending && stillAsMade(rec) {
			out = append(out, rec.Path)
		}
	}
	return out
}
