package grant

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// oldCanonical and oldCheck are Canonical and Checker.Check as they were
// before the credential paths were resolved once per Home in one batch:
// the reference the new ones must match byte for byte.
func oldCanonical(p string) string {
	p = filepath.Clean(p)
	rest := ""
	cur := p
	for i := 0; i < 255; i++ {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			break
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
	return p
}

// oldFixed memoises oldCanonical for the paths oldCheck compares against,
// as the old canonicalCached did (per path, for the whole process).
var oldFixed = map[string]string{}

func oldCached(p string) string {
	if c, ok := oldFixed[p]; ok {
		return c
	}
	c := oldCanonical(p)
	oldFixed[p] = c
	return c
}

func oldCheck(c Checker, p string, writable bool) error {
	home := oldCached(c.Home.Dir)
	switch {
	case p == "/":
		return errors.New("grants the whole filesystem; grant only the paths the agent needs")
	case Within(home, p):
		if p == home {
			return fmt.Errorf("grants your whole home directory %s; grant only the paths the agent needs", home)
		}
		return fmt.Errorf("is a parent of your home directory %s; grant only the paths the agent needs", home)
	}
	for _, root := range c.Home.NonoStateRoots() {
		root = oldCached(root)
		if Within(p, root) {
			return fmt.Errorf("lies inside nono's protected state root %s", root)
		}
		if Within(root, p) {
			return fmt.Errorf("contains nono's protected state root %s; grant a narrower path", root)
		}
	}
	for _, cred := range c.Home.CredentialPaths() {
		cred = oldCached(cred)
		if Within(p, cred) {
			return fmt.Errorf("lies inside the credential path %s, which is never granted", cred)
		}
		if Within(cred, p) {
			return fmt.Errorf("contains the credential path %s, which is never granted; grant a narrower path", cred)
		}
	}
	if writable {
		for _, pp := range c.Home.PersistencePaths() {
			pp = oldCached(pp)
			if Within(p, pp) {
				return fmt.Errorf("lies inside %s, from where the host runs code later (at login, in a shell, an editor or git): it may be granted read-only, never writable", pp)
			}
			if Within(pp, p) {
				return fmt.Errorf("contains %s, from where the host runs code later (at login, in a shell, an editor or git): grant a narrower path, or this one read-only", pp)
			}
		}
		for _, prot := range c.Protected {
			prot = oldCached(prot)
			if Overlaps(p, prot) {
				return fmt.Errorf("would let the agent write %s, where agent-sandbox keeps policy or state; the agent must not widen its own next run", prot)
			}
		}
	}
	return nil
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// equivHome builds a home full of the layouts that make canonical forms
// differ from the paths as written: credential paths that are symlinks
// (into the home, out of it, dangling, looping), files where directories
// are expected, a symlinked ~/.config, and a home reached through a
// symlink.
func equivHome(t *testing.T, viaLink bool) (Home, string) {
	t.Helper()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	real := filepath.Join(root, "real-home")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{real, outside + "/ssh", outside + "/config/gcloud", real + "/.local/state", real + "/projects/x", real + "/dotfiles"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(outside+"/ssh", real+"/.ssh"))                   // out of the home
	must(os.Symlink(outside+"/config", real+"/.config"))             // ~/.config elsewhere
	must(os.Symlink(real+"/missing", real+"/.aws"))                  // dangling
	must(os.Symlink(real+"/.kube", real+"/.kube"))                   // loop
	must(os.WriteFile(real+"/.docker", nil, 0o644))                  // a file
	must(os.Symlink("dotfiles", real+"/.gnupg"))                     // relative, inside
	must(os.Symlink("../real-home/.local/state", real+"/.nono"))     // relative with ..
	must(os.Symlink(real+"/.docker", real+"/.netrc"))                // to a file
	must(os.Symlink(real+"/projects", real+"/.password-store"))      // to a granted tree
	must(os.WriteFile(real+"/dotfiles/bashrc", nil, 0o644))          // a dotfile
	must(os.Symlink(real+"/dotfiles/bashrc", real+"/.bashrc"))       // linked dotfile
	must(os.Symlink(outside+"/config/gcloud", real+"/.gcloud"))      // shares a target
	must(os.MkdirAll(real+"/.local/share/keyrings/login", 0o700))    // deep, existing
	must(os.Symlink(real+"/.local/state/gone", real+"/.local/nono")) // dangling, deep
	dir := real
	if viaLink {
		dir = filepath.Join(root, "home-link")
		must(os.Symlink(real, dir))
	}
	env := map[string]string{"HOME": dir}
	h, err := HomeFromEnv(func(k string) string { return env[k] }, "linux")
	if err != nil {
		t.Fatal(err)
	}
	return h, root
}

// TestCheckMatchesOld: on a table of paths (every credential path, below and
// above them, through symlinks, missing, files used as directories), the
// batched, per-Home Check and Canonical give exactly the old verdicts and
// forms, read-only and writable.
func TestCheckMatchesOld(t *testing.T) {
	for _, viaLink := range []bool{false, true} {
		h, root := equivHome(t, viaLink)
		c := Checker{Home: h, Protected: []string{h.ConfigRoot(), h.StateRoot(), SystemConfigDir}}
		paths := []string{"/", root, h.Dir, filepath.Dir(h.Dir), root + "/real-home", root + "/outside",
			root + "/outside/ssh/id_rsa", root + "/outside/config", root + "/outside/config/gcloud/x",
			h.Dir + "/projects/x", h.Dir + "/projects/x/deep/not/yet", h.Dir + "/.docker/x", h.Dir + "/.netrc/x",
			h.Dir + "/.kube/config", h.Dir + "/.aws/credentials", h.Dir + "/.config/agent-sandbox/agents",
			h.Dir + "/.local/state/agent-sandbox", h.Dir + "/.local/state/nono/x", h.Dir + "/dotfiles",
			h.Dir + "/dotfiles/bashrc", "/usr/share", "/nonexistent/a/b", "/etc/agent-sandbox/agents/x"}
		for _, p := range append(h.CredentialPaths(), h.NonoStateRoots()...) {
			paths = append(paths, p, p+"/inside", p+"/a/b/c", filepath.Dir(p))
		}
		for _, p := range paths {
			if got, want := Canonical(p), oldCanonical(p); got != want {
				t.Errorf("Canonical(%s) = %s, old %s", p, got, want)
			}
			for _, w := range []bool{false, true} {
				for _, q := range []string{p, oldCanonical(p)} {
					got, want := errString(c.Check(q, w)), errString(oldCheck(c, q, w))
					if got != want {
						t.Errorf("Check(%s, writable=%v):\n got  %s\n want %s", q, w, got, want)
					}
				}
				got, gerr := c.Resolve(p, w)
				abs, _ := h.Expand(p)
				canon := oldCanonical(abs)
				werr := oldCheck(c, canon, w)
				want := canon
				if werr != nil {
					want = ""
				}
				if got != want || (gerr == nil) != (werr == nil) || (werr != nil && !strings.Contains(gerr.Error(), werr.Error())) {
					t.Errorf("Resolve(%s, %v) = %q, %v; old %q, %v", p, w, got, gerr, want, werr)
				}
			}
		}
	}
}

// BenchmarkCheck is one grant's check once the per-Home paths are known
// (what each of a run's grants costs).
func BenchmarkCheck(b *testing.B) {
	h := Home{Dir: b.TempDir(), GOOS: "linux"}
	c := Checker{Home: h, Protected: h.Protected()}
	_ = c.Check("/usr/share", true)
	b.ResetTimer()
	for range b.N {
		_ = c.Check("/usr/share/doc", false)
	}
}

// BenchmarkFixedPaths is the once-per-run cost: the canonical home, nono
// roots and credential paths of a fresh Home (the old code resolved every
// credential path from the root on its own).
func BenchmarkFixedPaths(b *testing.B) {
	dir := b.TempDir()
	for i := range b.N {
		h := Home{Dir: dir, GOOS: "linux", XDGConfig: fmt.Sprint(i)}
		_ = h.fixed()
		fixedByHome.Delete(h)
	}
}

// BenchmarkFixedPathsOld is BenchmarkFixedPaths the old way.
func BenchmarkFixedPathsOld(b *testing.B) {
	h := Home{Dir: b.TempDir(), GOOS: "linux"}
	for range b.N {
		_ = oldCanonical(h.Dir)
		for _, p := range append(h.NonoStateRoots(), h.CredentialPaths()...) {
			_ = oldCanonical(p)
		}
	}
}

// BenchmarkCheckOld is BenchmarkCheck the old way (the credential list
// rebuilt and looked up in the per-path cache for every grant).
func BenchmarkCheckOld(b *testing.B) {
	h := Home{Dir: b.TempDir(), GOOS: "linux"}
	c := Checker{Home: h, Protected: h.Protected()}
	_ = oldCheck(c, "/usr/share", true)
	b.ResetTimer()
	for range b.N {
		_ = oldCheck(c, "/usr/share/doc", false)
	}
}
