package checkpoint

import (
	"fmt"
	"sort"
	"strings"
)

// Change kinds.
const (
	Created  = "created"
	Modified = "modified"
	Deleted  = "deleted"
	ModeOnly = "mode"
	Replaced = "replaced" // another type (a directory now a symlink)
)

// Change is one difference between two checkpoints.
type Change struct {
	Kind string
	Path string
	// Old and New are the entry before and after (nil when missing).
	Old, New *Entry
	// Inside counts the entries below a created or deleted directory
	// that the change stands for.
	Inside int
}

// String is the change as diff shows it: the kind, the path quoted as
// the guard's scan quotes one, and what changed.
func (c Change) String() string {
	p := Quote(c.Path)
	var note []string
	switch c.Kind {
	case ModeOnly:
		note = append(note, modeNote(c.Old, c.New)...)
	case Modified:
		note = append(note, modeNote(c.Old, c.New)...)
	case Replaced:
		note = append(note, c.Old.Type+" -> "+c.New.Type)
	}
	e := c.New
	if e == nil {
		e = c.Old
	}
	if e.Type == TypeDir {
		p += "/"
	}
	if e.Type == TypeSymlink {
		note = append(note, "symlink to "+Quote(e.Target))
	}
	if e.Repo {
		note = append(note, "nested repository")
	}
	if c.Inside > 0 {
		note = append(note, fmt.Sprintf("and %d entries inside", c.Inside))
	}
	s := fmt.Sprintf("%-9s %s", c.Kind, p)
	if len(note) > 0 {
		s += " (" + strings.Join(note, "; ") + ")"
	}
	return s
}

func modeNote(a, b *Entry) []string {
	var out []string
	if a.Mode != b.Mode {
		out = append(out, fmt.Sprintf("mode %04o -> %04o", a.Mode, b.Mode))
	}
	if a.UID != b.UID || a.GID != b.GID {
		out = append(out, fmt.Sprintf("owner %d:%d -> %d:%d", a.UID, a.GID, b.UID, b.GID))
	}
	return out
}

// under reports whether p is one of skips or below one.
func under(p string, skips []Skip) bool {
	for _, s := range skips {
		if p == s.Path || strings.HasPrefix(p, s.Path+"/") {
			return true
		}
	}
	return false
}

func index(m *Manifest) map[string]*Entry {
	out := make(map[string]*Entry, len(m.Entries))
	for i := range m.Entries {
		out[m.Entries[i].Path] = &m.Entries[i]
	}
	return out
}

// Diff lists what changed from a to b, in path order; a created or
// deleted directory stands for what it holds (Inside). Paths a left out
// (a.Skipped) are not compared; nor are modification times alone.
func Diff(a, b *Manifest) []Change {
	ai, bi := index(a), index(b)
	var out []Change
	var gone, made string // the created/deleted directory being folded
	for _, p := range unionPaths(a, b) {
		if under(p, a.Skipped) || under(p, b.Skipped) {
			continue
		}
		o, n := ai[p], bi[p]
		if gone != "" && strings.HasPrefix(p, gone+"/") && n == nil {
			out[len(out)-1].Inside++
			continue
		}
		if made != "" && strings.HasPrefix(p, made+"/") && o == nil {
			out[len(out)-1].Inside++
			continue
		}
		gone, made = "", ""
		switch {
		case o == nil:
			out = append(out, Change{Kind: Created, Path: p, New: n})
			if n.Type == TypeDir {
				made = p
			}
		case n == nil:
			out = append(out, Change{Kind: Deleted, Path: p, Old: o})
			if o.Type == TypeDir {
				gone = p
			}
		case o.Type != n.Type:
			out = append(out, Change{Kind: Replaced, Path: p, Old: o, New: n})
			if o.Type == TypeDir {
				gone = p
			}
			if n.Type == TypeDir {
				made = p
			}
		case o.Hash != n.Hash || o.Target != n.Target || o.Size != n.Size:
			out = append(out, Change{Kind: Modified, Path: p, Old: o, New: n})
		case o.Mode != n.Mode || o.UID != n.UID || o.GID != n.GID:
			out = append(out, Change{Kind: ModeOnly, Path: p, Old: o, New: n})
		}
	}
	return out
}

func unionPaths(a, b *Manifest) []string {
	seen := make(map[string]bool, len(a.Entries))
	var out []string
	for _, m := range []*Manifest{a, b} {
		for _, e := range m.Entries {
			if !seen[e.Path] {
				seen[e.Path] = true
				out = append(out, e.Path)
			}
		}
	}
	sortPaths(out)
	return out
}

// sortPaths sorts paths depth-first, a directory just before what it
// holds ("a", "a/b", "a-b"): the walk's order.
func sortPaths(ps []string) {
	sort.Slice(ps, func(i, j int) bool {
		return strings.ReplaceAll(ps[i], "/", "\x00") < strings.ReplaceAll(ps[j], "/", "\x00")
	})
}

// Summary is a one-line summary of changes ("2 created, 1 modified").
func Summary(cs []Change) string {
	if len(cs) == 0 {
		return "no change"
	}
	n := map[string]int{}
	for _, c := range cs {
		n[c.Kind] += 1 + c.Inside
	}
	var parts []string
	for _, k := range []string{Created, Modified, Deleted, Replaced, ModeOnly} {
		if n[k] > 0 {
			word := k
			if k == ModeOnly {
				word = "mode changed"
			}
			parts = append(parts, fmt.Sprintf("%d %s", n[k], word))
		}
	}
	return strings.Join(parts, ", ")
}
