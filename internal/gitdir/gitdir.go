// Package gitdir finds the git directory a working tree links to, without
// running git.
//
// A linked worktree or a submodule checkout has a .git *file* holding
// "gitdir: <path>"; the real git directory lives outside the working tree, so
// the sandbox must grant it or every git command fails. Because the agent can
// write that file, it is trusted only when it points at a real linked git
// directory: one named .git/worktrees/<name> or .git/modules/<name>..., that
// holds HEAD. A worktree also needs its common dir (the main repository's
// .git), named by the "commondir" file. Git itself is never run, so no
// repository configuration (hooks, fsmonitor) can execute on the host.
package gitdir

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Linked describes the git directories outside the working tree.
type Linked struct {
	// GitDir is the linked git directory, absolute and canonical.
	GitDir string
	// CommonDir is the main repository's git directory for a worktree; ""
	// for a submodule.
	CommonDir string
}

// Dirs returns the directories to grant, GitDir first.
func (l *Linked) Dirs() []string {
	if l == nil {
		return nil
	}
	if l.CommonDir == "" || l.CommonDir == l.GitDir {
		return []string{l.GitDir}
	}
	return []string{l.GitDir, l.CommonDir}
}

// Find inspects workdir/.git. It returns nil, nil when .git is absent or a
// directory (nothing outside the workdir to grant). An error means the .git
// file exists but does not point at a linked git directory; callers warn and
// grant nothing.
func Find(workdir string) (*Linked, error) {
	dotgit := filepath.Join(workdir, ".git")
	st, err := os.Lstat(dotgit)
	if err != nil || st.IsDir() {
		return nil, nil
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file; not granting anything for it", dotgit)
	}
	b, err := readSmall(dotgit)
	if err != nil {
		return nil, err
	}
	line := strings.TrimSpace(string(b))
	target, ok := strings.CutPrefix(line, "gitdir:")
	if !ok || strings.Contains(line, "\n") {
		return nil, fmt.Errorf("%s does not hold a single \"gitdir: <path>\" line; not granting anything for it", dotgit)
	}
	target = strings.TrimSpace(target)
	if !filepath.IsAbs(target) {
		target = filepath.Join(workdir, target)
	}
	gd, err := filepath.EvalSymlinks(target)
	if err != nil {
		return nil, fmt.Errorf("%s points at %s, which does not exist; not granting it", dotgit, target)
	}
	if !looksLinked(gd) {
		return nil, fmt.Errorf("%s points at %s, which is not a linked worktree or submodule git directory (.git/worktrees/<name> or .git/modules/<name>); not granting it", dotgit, gd)
	}
	if _, err := os.Stat(filepath.Join(gd, "HEAD")); err != nil {
		return nil, fmt.Errorf("%s points at %s, which holds no HEAD; not granting it", dotgit, gd)
	}
	if err := pointsBack(gd, workdir); err != nil {
		return nil, fmt.Errorf("%s points at %s, %v; not granting it", dotgit, gd, err)
	}
	l := &Linked{GitDir: gd}
	if c, err := readSmall(filepath.Join(gd, "commondir")); err == nil {
		cd := strings.TrimSpace(string(c))
		if !filepath.IsAbs(cd) {
			cd = filepath.Join(gd, cd)
		}
		real, err := filepath.EvalSymlinks(cd)
		if err != nil {
			return nil, fmt.Errorf("%s: commondir %s does not exist; not granting it", gd, cd)
		}
		// A worktree's git dir is exactly <commondir>/worktrees/<name>, and
		// the common dir is a real repository (HEAD and objects/).
		if filepath.Dir(gd) != filepath.Join(real, "worktrees") {
			return nil, fmt.Errorf("%s is not <commondir>/worktrees/<name> for commondir %s; not granting it", gd, real)
		}
		for _, need := range []string{"HEAD", "objects"} {
			if _, err := os.Stat(filepath.Join(real, need)); err != nil {
				return nil, fmt.Errorf("%s: commondir %s has no %s, so it is not a git repository; not granting it", gd, real, need)
			}
		}
		l.CommonDir = real
	}
	return l, nil
}

// pointsBack checks that the git directory belongs to this working tree: a
// worktree's "gitdir" file names workdir/.git, a submodule's config has a
// core.worktree that resolves to workdir. This stops a planted .git file from
// borrowing another repository's git directory.
func pointsBack(gd, workdir string) error {
	want, _ := filepath.EvalSymlinks(workdir)
	if b, err := readSmall(filepath.Join(gd, "gitdir")); err == nil {
		back := strings.TrimSpace(string(b))
		if !filepath.IsAbs(back) {
			back = filepath.Join(gd, back)
		}
		if real, err := filepath.EvalSymlinks(filepath.Dir(back)); err == nil && real == want {
			return nil
		}
		return fmt.Errorf("whose gitdir file names %s, not this working tree", back)
	}
	cfg, err := readSmall(filepath.Join(gd, "config"))
	if err != nil {
		return fmt.Errorf("which has neither a gitdir file nor a config naming this working tree")
	}
	for _, line := range strings.Split(string(cfg), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || strings.TrimSpace(k) != "worktree" {
			continue
		}
		wt := strings.Trim(strings.TrimSpace(v), `"`)
		if !filepath.IsAbs(wt) {
			wt = filepath.Join(gd, wt)
		}
		if real, err := filepath.EvalSymlinks(wt); err == nil && real == want {
			return nil
		}
		return fmt.Errorf("whose core.worktree %s is not this working tree", wt)
	}
	return fmt.Errorf("whose config names no core.worktree")
}

// looksLinked reports whether dir is <something>.git/worktrees/<name> or
// <something>.git/modules/<name>[/modules/<name>...].
func looksLinked(dir string) bool {
	parts := strings.Split(filepath.ToSlash(dir), "/")
	for i := len(parts) - 2; i >= 1; i-- {
		kind := parts[i]
		if kind != "worktrees" && kind != "modules" {
			continue
		}
		if strings.HasSuffix(parts[i-1], ".git") || parts[i-1] == ".git" {
			return parts[len(parts)-1] != ""
		}
	}
	return false
}

func readSmall(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 4096)
	n, err := f.Read(b)
	if err != nil && n == 0 {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return b[:n], nil
}

// Top returns the top of the working tree that holds workdir when workdir
// is a subdirectory of one (the nearest ancestor with a .git directory or
// file, as git finds it), or "" when workdir has a .git itself or no
// ancestor has one. It stops below stop (the user's home: a repository
// there, a dotfiles checkout, is not the project's) and at the root.
func Top(workdir, stop string) string {
	if _, err := os.Lstat(filepath.Join(workdir, ".git")); err == nil {
		return ""
	}
	for d := filepath.Dir(workdir); ; d = filepath.Dir(d) {
		if d == stop || d == "/" || d == "." {
			return ""
		}
		st, err := os.Lstat(filepath.Join(d, ".git"))
		if err == nil && (st.IsDir() || st.Mode().IsRegular()) {
			return d
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}
