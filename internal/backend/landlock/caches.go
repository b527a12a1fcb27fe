package landlock

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
	"github.com/agent-sandbox/agent-sandbox/internal/uniq"
)

// The toolchains' caches (spec.Cache) are the agent's own per project: a
// poisoned file the agent writes into one (Go does not verify a module
// it extracted before, a build cache entry is trusted by its key) stays
// in the project it was written in, and the user's other projects start
// from the host's cache again. In the view each is a writable overlay
// layer over the host's cache; in the weaker sandbox, which has no
// mounts, it is a copy of the host's (reflinks where the filesystem can,
// never hard links: Landlock does not govern chmod, so a linked file
// could be made writable and the host's cache poisoned through it), or
// for Go's module cache one Go fills itself from the host's download
// cache, read-only.

// projectKey names the working directory among an agent's cache layers.
func projectKey(workdir string) string {
	h := sha256.Sum256([]byte(filepath.Clean(workdir)))
	return hex.EncodeToString(h[:8])
}

// cacheLayer is the agent's own writable layer of the cache name for the
// project s runs in, kept between its runs there:
// <state>/caches/<project>/<name>, holding upper/ and work/ (the view), or
// copy/ (the weaker sandbox).
func cacheLayer(s spec.Spec, name string) string {
	return filepath.Join(s.StateDir, "caches", projectKey(s.Workdir), name)
}

// cargoHome is the weaker sandbox's private CARGO_HOME for the project s
// runs in: cargo has no variable for its registry alone, so the registry
// and git caches are copied into a home of their own (holding nothing
// else of the host's ~/.cargo: its config and credentials stay out).
func cargoHome(s spec.Spec) string {
	return filepath.Join(s.StateDir, "caches", projectKey(s.Workdir), "cargo-home")
}

// isCargo says whether c is one of cargo's caches.
func isCargo(c spec.Cache) bool { return strings.HasPrefix(c.Name, "cargo-") }

// weakerCaches gives each of s's caches the weaker sandbox's own copy
// (spec.Cache.Copy), and Go's module cache its read-only source.
func weakerCaches(s spec.Spec) []spec.Cache {
	out := make([]spec.Cache, 0, len(s.Caches))
	for _, c := range s.Caches {
		switch {
		case isCargo(c):
			c.Copy = filepath.Join(cargoHome(s), filepath.Base(c.Path))
		case c.Name == "go-mod":
			c.Copy = filepath.Join(cacheLayer(s, c.Name), "copy")
			c.Source = filepath.Join(c.Path, "cache", "download")
		default:
			c.Copy = filepath.Join(cacheLayer(s, c.Name), "copy")
		}
		out = append(out, c)
	}
	return out
}

// cacheEnv are the variables that point each tool at its cache: the
// host's path (the view layers it there) or the weaker sandbox's copy.
// goproxy is the host's GOPROXY ("" for Go's default).
func cacheEnv(caches []spec.Cache, goproxy string) []string {
	var env []string
	cargo := false
	for _, c := range caches {
		where := c.Path
		if c.Copy != "" {
			where = c.Copy
		}
		if c.Env != "" {
			env = append(env, c.Env+"="+where)
		}
		if c.Copy != "" && isCargo(c) && !cargo {
			cargo = true
			env = append(env, "CARGO_HOME="+filepath.Dir(c.Copy))
		}
		if c.Source != "" && c.Name == "go-mod" {
			// Go reads the host's download cache as a module proxy and
			// extracts what the build needs into the run's own module
			// cache, checking each module against go.sum; what the
			// download cache lacks comes from the host's proxy.
			if goproxy == "" || goproxy == "off" {
				goproxy = "https://proxy.golang.org,direct"
			}
			env = append(env, "GOPROXY=file://"+c.Source+","+goproxy)
		}
		if c.Name == "npm" {
			// npm asks the registry before it trusts its cache; with
			// the host's cache layered in, it goes to the network only
			// for what the cache lacks (and so works offline).
			env = append(env, "npm_config_prefer_offline=true")
		}
	}
	return env
}

// weakerCacheGrants adds the weaker sandbox's cache grants to the
// policy's read-write and read-only lists: each copy (cargo's whole
// private home, where cargo also keeps its lock), and Go's download cache
// read-only where it exists.
func weakerCacheGrants(caches []spec.Cache, rw, ro []string) ([]string, []string) {
	for _, c := range caches {
		switch {
		case c.Copy == "":
		case isCargo(c):
			rw = append(rw, filepath.Dir(c.Copy))
		default:
			rw = append(rw, c.Copy)
		}
		if c.Source != "" && dirExists(c.Source) {
			ro = append(ro, c.Source)
		}
	}
	return uniq.Ordered(rw), uniq.Ordered(ro)
}

// seedCaches readies the weaker sandbox's caches of s before the agent
// starts: each copy brought up to date from the host's cache (seedCache),
// Go's module cache created empty (Go fills it). A copy that could not be
// completed is a warning (the agent's cache is the poorer for it); one
// that cannot be created refuses the run. verbose notes what was copied.
func seedCaches(s spec.Spec, stderr io.Writer, verbose bool) error {
	for _, c := range s.Caches {
		if c.Copy == "" {
			continue
		}
		if c.Source != "" {
			if err := os.MkdirAll(c.Copy, 0o700); err != nil {
				return fmt.Errorf("creating the run's cache %s: %v", c.Copy, err)
			}
			continue
		}
		// The lock lies beside the cache's directory, which the agent
		// cannot write (only the copy inside it).
		lock := filepath.Join(filepath.Dir(cacheLayer(s, c.Name)), c.Name+".seed.lock")
		st, err := seedCacheLocked(lock, c.Path, c.Copy)
		if err != nil {
			if !dirExists(c.Copy) {
				return fmt.Errorf("creating the run's copy of the cache %s: %v", c.Path, err)
			}
			diag.Warnf(stderr, "the run's copy of the cache %s is incomplete: %v", c.Path, err)
		}
		if verbose {
			diag.Notef(stderr, "cache %s: %d files copied (%d reflinked, %d bytes), %d up to date, %d skipped, in %s", c.Path, st.Files, st.Reflinked, st.Bytes, st.Same, st.Skipped, c.Copy)
		}
	}
	return nil
}

// cacheComment is the --dry-run line of cache c.
func cacheComment(s spec.Spec, c spec.Cache) string {
	switch {
	case c.Source != "":
		return fmt.Sprintf("cache %s: the run's own %s, per project, which Go fills from your download cache %s (read-only, as GOPROXY=file://; each module checked against go.sum); yours never written", c.Path, c.Copy, c.Source)
	case c.Copy != "":
		return fmt.Sprintf("cache %s: the run's own copy %s, per project, brought up to date from yours before each run (reflinks where the filesystem can, else copies; never hard links); yours never written", c.Path, c.Copy)
	}
	return fmt.Sprintf("cache %s: a private, writable layer over yours, per project (the agent's writes kept in %s, yours never written)", c.Path, cacheLayer(s, c.Name))
}
