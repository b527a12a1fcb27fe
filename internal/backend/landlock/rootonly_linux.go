package landlock

import (
	"io/fs"
	"path/filepath"
	"sort"
	"sync"

	"github.com/agent-sandbox/agent-sandbox/internal/launch"
)

// maxRootOnlyWalk bounds the entries rootOnly visits.
const maxRootOnlyWalk = 50000

// rootOnly lists what below dir an ordinary user could not read: files
// not readable by others (mode o-r: /etc/mysql/debian.cnf, Kubernetes'
// admin.conf, a private key) and directories others cannot enter or
// list (/etc/letsencrypt/live), skipping what lies below one found and
// the paths of skip (masked already). For a root caller, whose agent is
// uid 0 inside the view and would read them all, they are masked like
// etcSecrets. Symlinks are left alone (their targets are judged where
// they lie). Past maxRootOnlyWalk entries the walk stops.
func rootOnly(dir string, skip []string) []string {
	skipped := map[string]bool{}
	for _, s := range skip {
		skipped[s] = true
	}
	var out []string
	n := 0
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if n++; n > maxRootOnlyWalk {
			return filepath.SkipAll
		}
		if err != nil || p == dir {
			return nil
		}
		if skipped[p] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		perm := fi.Mode().Perm()
		switch {
		case fi.IsDir() && perm&0o005 != 0o005:
			out = append(out, p)
			return filepath.SkipDir
		case fi.Mode().IsRegular() && perm&0o004 == 0:
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// etcRootOnly is rootOnly of /etc, computed once per process and in the
// background from the moment a root caller's view is known to come
// ([startEtcRootOnly]), so that the walk overlaps the run's planning.
var etcRootOnly struct {
	once sync.Once
	done chan struct{}
	list []string
}

// startEtcRootOnly starts the walk of /etc in the background (once).
func startEtcRootOnly() {
	etcRootOnly.once.Do(func() {
		etcRootOnly.done = make(chan struct{})
		launch.Background(func() {
			etcRootOnly.list = rootOnly("/etc", etcSecrets)
			close(etcRootOnly.done)
		})
	})
}

// etcRootOnlyList is rootOnly("/etc", etcSecrets), waiting for the walk
// [startEtcRootOnly] started (starting it when nothing did).
func etcRootOnlyList() []string {
	startEtcRootOnly()
	<-etcRootOnly.done
	return etcRootOnly.list
}
