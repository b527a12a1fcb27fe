package guard

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// maxContent bounds the bytes of a file a snapshot keeps (to compare and
// restore it); a larger file is compared by its hash alone.
const maxContent = 1 << 20

// maxHash bounds the bytes of a file a snapshot hashes: a larger one (an
// agent's 10 GB file at a ledger path would cost seconds per audit) is
// compared by its size, modification time and inode alone.
const maxHash = 64 << 20

// maxTree bounds the entries a snapshot of a directory records.
const maxTree = 512

// snapshot is what a path was at one moment: a missing path, a file (its
// content when small enough, always its hash), or a directory (its
// entries, one level, each a file or a nested directory's name).
type snapshot struct {
	exists bool
	dir    bool
	// other is a path that exists as neither a file nor a directory (a
	// symlink, a FIFO...).
	other bool
	mode  fs.FileMode
	sum   [sha256.Size]byte
	// content is the file's bytes when at most maxContent; nil otherwise.
	content []byte
	// entries are a directory's files by name (one level; subdirectories
	// have dir set), at most maxTree.
	entries map[string]snapshot
	// err says the path could not be read (permission, I/O): the audit
	// reports it rather than guess.
	err error
}

// take snapshots path without following a symlink at it.
func take(path string) snapshot {
	return takeDepth(path, 1)
}

func takeDepth(path string, depth int) snapshot {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return snapshot{}
	}
	if err != nil {
		return snapshot{exists: true, err: err}
	}
	s := snapshot{exists: true, mode: fi.Mode()}
	switch {
	case fi.Mode().IsRegular() && fi.Size() > maxHash:
		h := sha256.New()
		fmt.Fprintf(h, "large\x00%d\x00%d\x00%v", fi.Size(), fi.ModTime().UnixNano(), fi.Sys())
		h.Sum(s.sum[:0])
	case fi.Mode().IsRegular():
		f, err := os.OpenFile(path, os.O_RDONLY|noFollow, 0)
		if err != nil {
			s.err = err
			return s
		}
		defer f.Close()
		h := sha256.New()
		var buf bytes.Buffer
		w := io.Writer(h)
		if fi.Size() <= maxContent {
			w = io.MultiWriter(h, &buf)
		}
		if _, err := io.Copy(w, f); err != nil {
			s.err = err
			return s
		}
		h.Sum(s.sum[:0])
		if fi.Size() <= maxContent && buf.Len() <= maxContent {
			s.content = buf.Bytes()
			if s.content == nil {
				s.content = []byte{}
			}
		}
	case fi.IsDir():
		s.dir = true
		ents, err := os.ReadDir(path)
		if err != nil {
			s.err = err
			return s
		}
		s.entries = map[string]snapshot{}
		h := sha256.New()
		for i, e := range ents {
			if i >= maxTree {
				break
			}
			var sub snapshot
			if depth > 0 {
				sub = takeDepth(filepath.Join(path, e.Name()), depth-1)
			} else {
				sub = snapshot{exists: true, dir: e.IsDir(), mode: e.Type()}
			}
			s.entries[e.Name()] = sub
			h.Write([]byte(e.Name()))
			h.Write([]byte{0})
			h.Write(sub.sum[:])
		}
		h.Sum(s.sum[:0])
	default:
		s.other = true
		if t, err := os.Readlink(path); err == nil {
			s.sum = sha256.Sum256([]byte(t))
		}
	}
	return s
}

// same reports whether two snapshots show the same thing (kind, permission
// bits, content; a directory's entries, one level deep).
func (s snapshot) same(o snapshot) bool {
	return s.exists == o.exists && s.dir == o.dir && s.other == o.other && s.mode == o.mode && s.sum == o.sum && (s.err == nil) == (o.err == nil)
}

// changedEntries lists the names of a directory's entries that differ
// between s (before) and o (after), sorted: added, removed or changed.
func (s snapshot) changedEntries(o snapshot) []string {
	var out []string
	for name, a := range o.entries {
		if b, ok := s.entries[name]; !ok || !a.same(b) {
			out = append(out, name)
		}
	}
	for name := range s.entries {
		if _, ok := o.entries[name]; !ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
