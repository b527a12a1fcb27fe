package grant

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// resolver makes absolute paths canonical with the semantics of Canonical
// (filepath.EvalSymlinks on the longest prefix it resolves, the rest
// appended unchanged) in one pass over the components: each prefix is
// looked up once (lstat, and readlink for a symlink), and a batch of
// paths sharing prefixes (the credential paths under one home) shares the
// lookups. The old way asked EvalSymlinks again for every shorter prefix
// of a path that does not exist, from the root each time.
//
// A resolver is a snapshot: it remembers what it saw for the paths of one
// batch. Everything it answers is checked again where it matters (the
// view opens every source refusing symlinks).
type resolver struct {
	seen map[string]node
	dirs map[string]*dirState
}

// node is what lstat said about one path.
type node struct {
	missing bool   // lstat failed: absent, a non-directory on the way, no permission
	link    bool   // a symlink
	target  string // its readlink, when link
	dir     bool
	socket  bool // a Unix socket
}

// maxLinks bounds the symlinks followed for one path, as
// filepath.EvalSymlinks does.
const maxLinks = 255

func newResolver() *resolver { return &resolver{seen: map[string]node{}} }

// A directory asked about listAfter times (a thousand grants in one
// directory) is read whole, once, instead of one lstat per entry, unless
// it holds more than listMax entries (/nix/store).
const (
	listAfter = 64
	listMax   = 8192
)

// dirState is what the resolver knows of one directory's entries.
type dirState struct {
	asked  int  // lookups of its entries so far
	found  bool // one of them existed: the directory can be searched
	listed bool // its entries are all in seen: one that is not is missing
	tried  bool // it was read (or found too big) once
}

func (r *resolver) lstat(p string) node {
	if n, ok := r.seen[p]; ok {
		return n
	}
	dir := filepath.Dir(p)
	d := r.dir(dir)
	if d.listed {
		n := node{missing: true}
		r.seen[p] = n
		return n
	}
	d.asked++
	if d.asked >= listAfter && d.found && !d.tried {
		d.tried = true
		if r.list(dir) {
			d.listed = true
			if n, ok := r.seen[p]; ok {
				return n
			}
			n := node{missing: true}
			r.seen[p] = n
			return n
		}
	}
	n := lstatNode(p)
	if !n.missing {
		d.found = true
	}
	r.seen[p] = n
	return n
}

// lstatNode is the node of p from lstat (and readlink).
func lstatNode(p string) node {
	var n node
	fi, err := os.Lstat(p)
	switch {
	case err != nil:
		n.missing = true
	case fi.Mode()&fs.ModeSymlink != 0:
		n = linkNode(p)
	default:
		n.dir = fi.IsDir()
		n.socket = fi.Mode()&fs.ModeSocket != 0
	}
	return n
}

// linkNode is the node of the symlink p.
func linkNode(p string) node {
	t, err := os.Readlink(p)
	if err != nil {
		return node{missing: true}
	}
	return node{link: true, target: t}
}

func (r *resolver) dir(path string) *dirState {
	if r.dirs == nil {
		r.dirs = map[string]*dirState{}
	}
	d := r.dirs[path]
	if d == nil {
		d = &dirState{}
		r.dirs[path] = d
	}
	return d
}

// list reads the directory dir and records a node for each of its
// entries from the type its listing gives (as lstat would: a symlink,
// read with readlink, a directory, a socket, anything else). It reports
// false, recording nothing, when dir cannot be read or holds more than
// listMax entries.
func (r *resolver) list(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	ents, err := f.ReadDir(listMax + 1)
	if (err != nil && err != io.EOF) || len(ents) > listMax {
		return false
	}
	if more, err := f.ReadDir(1); len(more) > 0 || (err != nil && err != io.EOF) {
		return false
	}
	for _, e := range ents {
		p := joinName(dir, e.Name())
		if _, ok := r.seen[p]; ok {
			continue
		}
		var n node
		switch t := e.Type(); {
		case t&fs.ModeSymlink != 0:
			n = linkNode(p)
		default:
			n.dir = t.IsDir()
			n.socket = t&fs.ModeSocket != 0
		}
		r.seen[p] = n
	}
	return true
}

// canonical is Canonical for an absolute p.
func (r *resolver) canonical(p string) string {
	p = filepath.Clean(p)
	if !filepath.IsAbs(p) {
		return canonical(p)
	}
	links := 0
	cur := "/"
	comps := splitPath(p)
	for i, name := range comps {
		next := joinName(cur, name)
		n := r.lstat(next)
		if n.missing {
			return filepath.Join(append([]string{cur}, comps[i:]...)...)
		}
		if n.link {
			// The link counts as existing only when its target resolves
			// entirely (EvalSymlinks fails on a dangling link, and the
			// longest prefix it resolves ends before the link).
			t, ok := r.full(cur, n.target, &links)
			if !ok {
				return filepath.Join(append([]string{cur}, comps[i:]...)...)
			}
			cur = t
			continue
		}
		cur = next
	}
	return cur
}

// full resolves the link target t (relative to the canonical directory
// dir) entirely, as filepath.EvalSymlinks does: ".." removes the last
// component of what is resolved so far, and anything after a component
// that is not a directory (even "/" or "..") fails. ok is false when a
// component is missing or there are too many links.
func (r *resolver) full(dir, t string, links *int) (string, bool) {
	*links++
	if *links > maxLinks {
		return "", false
	}
	cur, isDir := dir, true
	if filepath.IsAbs(t) {
		cur = "/"
	}
	segs := strings.Split(t, "/")
	for i, name := range segs {
		if i > 0 && !isDir {
			return "", false // "not a directory"
		}
		switch name {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := joinName(cur, name)
		n := r.lstat(next)
		switch {
		case n.missing:
			return "", false
		case n.link:
			rt, ok := r.full(cur, n.target, links)
			if !ok {
				return "", false
			}
			cur, isDir = rt, r.lstat(rt).dir
		default:
			cur, isDir = next, n.dir
		}
	}
	return cur, true
}

// splitPath lists the components of the clean absolute path p.
func splitPath(p string) []string {
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

func joinName(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}
