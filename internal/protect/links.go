package protect

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A protected name may be a symlink the user made (a `.claude` kept with
// shared configuration elsewhere, a `.mcp.json` pointing at a read-only
// file, an `.envrc` pointing at another file of the project). The link
// lives in the writable grant: the agent could replace it with a
// directory or file of its own, which the user's tools would then read.
// So the link itself becomes an entry (Entry.Link: kept as it is, a bind
// of the link onto itself in the view, restored by the guard elsewhere),
// and what the entry names is protected where the link leads: there too
// when that lies in a writable grant, nothing more when no writable grant
// holds it (the agent cannot write it). A cycle of links refuses the run.

// maxLinks is how many symlinks a resolution follows, as the kernel does
// (ELOOP past 40).
const maxLinks = 40

// errLoop marks a resolution that met too many symlinks.
var errLoop = errors.New("too many levels of symbolic links")

// followLinks replaces each read-only entry whose path passes through a
// symlink by every link on the way that a writable grant holds (an entry
// each: the agent could repoint any of them) and, when the path resolves
// into a writable grant, the entry at the resolved path. writable are the
// run's writable grants.
func followLinks(entries []Entry, writable []string) ([]Entry, error) {
	var out []Entry
	seen := map[string]bool{}
	for _, e := range entries {
		seen[e.Path] = true
	}
	links := map[string]bool{}
	for _, e := range entries {
		if e.Guard != ReadOnly || e.Link != "" {
			out = append(out, e)
			continue
		}
		first := ""
		rp, err := resolveVisit(e.Path, func(link, target string) {
			if first == "" {
				first = link
			}
			root := grantRoot(link, writable)
			if root == "" || links[link] {
				return // no writable grant holds it: the agent cannot repoint it
			}
			links[link] = true
			out = append(out, Entry{
				Path: link, Name: e.Name, Root: root, Guard: ReadOnly, Link: target,
				Why: fmt.Sprintf("a symlink (to %s) on the way to %s: %s", target, e.Path, e.Why),
			})
		})
		if first == "" && err == nil {
			out = append(out, e) // no symlink on its way
			continue
		}
		if errors.Is(err, errLoop) {
			return nil, fmt.Errorf("protected path %s: %s is a cycle of symlinks (%s), or a chain of more than %d: agent-sandbox keeps %s read-only so that the agent cannot plant code your tools run later, and cannot tell where it leads; fix or remove the link, or %s", e.Path, first, chain(first), maxLinks, e.Path, e.lift())
		}
		if err != nil {
			return nil, fmt.Errorf("protected path %s: following the symlinks on its way: %v; fix or remove the link, or %s", e.Path, err, e.lift())
		}
		root := grantRoot(rp, writable)
		if root == "" || seen[rp] {
			continue // no writable grant holds it (or it is an entry already)
		}
		seen[rp] = true
		r := e
		r.Path, r.Root, r.Missing = rp, root, false
		r.Why = fmt.Sprintf("%s leads here: %s", e.Path, e.Why)
		if _, err := os.Lstat(rp); errors.Is(err, fs.ErrNotExist) {
			r.Missing = true
		}
		out = append(out, r)
	}
	return out, nil
}

// resolveVisit returns where the absolute path p leads, following every
// symlink on the way (the last component's too), as open(2) with O_CREAT
// would: a missing component ends the resolution, the rest appended. It
// calls visit with each symlink it follows (its path, no symlink in it,
// and its target).
func resolveVisit(p string, visit func(link, target string)) (string, error) {
	cur := "/"
	comps := strings.Split(strings.TrimPrefix(filepath.Clean(p), "/"), "/")
	n := 0
	for len(comps) > 0 {
		name := comps[0]
		comps = comps[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		st, err := os.Lstat(next)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				// Missing (or below a file, which check reports): what
				// follows is not looked up.
				return filepath.Join(append([]string{next}, comps...)...), nil
			}
			return "", err
		}
		if st.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if n++; n > maxLinks {
			return "", errLoop
		}
		t, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		visit(next, t)
		if filepath.IsAbs(t) {
			cur = "/"
		}
		comps = append(strings.Split(t, "/"), comps...)
	}
	return cur, nil
}

// chain shows the links followed from link, at most a few, for a
// refusal: "a -> b -> a".
func chain(link string) string {
	out := []string{link}
	cur := link
	for i := 0; i < 4; i++ {
		t, err := os.Readlink(cur)
		if err != nil {
			break
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(cur), t)
		}
		out = append(out, t)
		cur = t
	}
	s := strings.Join(out, " -> ")
	if _, err := os.Readlink(cur); err == nil {
		s += " -> ..."
	}
	return s
}
