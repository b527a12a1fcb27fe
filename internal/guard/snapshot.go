package guard

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"time"

	"github.com/agent-sandbox/agent-sandbox/internal/protect"
)

// maxContent bounds the bytes of a file a snapshot keeps (to compare and
// restore it); a larger file is compared by its hash alone.
const maxContent = 1 << 20

// maxKeyed bounds the bytes a snapshot keeps of a file the audit reads
// in its format (a settings file compared key by key): a long-used
// ~/.claude.json passes maxContent, and its settings must still be
// compared and put back.
const maxKeyed = 32 << 20

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
	// id is a regular file's identity when read (device, inode, size,
	// status change time), and settled says its ctime then lay further
	// back than racyMargin: takeSince takes the file as unchanged while
	// its identity is the same, without reading it again. Any change to a
	// file's content or mode sets its ctime to the kernel's clock, which
	// no process can set back; a file replaced has another inode, or a
	// reused one with a new ctime.
	id      fileID
	settled bool
}

// fileReads counts the files a snapshot read (tests).
var fileReads atomic.Int64

// racyMargin is how far back a file's ctime must lie, when it is read,
// for its reading to be settled (2 s: FAT's granularity; ext4 and the
// others are finer). internal/workscan trusts a directory's record by the
// same rule. A variable for the tests.
var racyMargin = 2 * time.Second

// fileID is what takeSince compares of a regular file.
type fileID struct {
	dev, ino uint64
	size     int64
	ctime    int64 // nanoseconds
}

func idOf(fi fs.FileInfo) fileID {
	dev, ino := devIno(fi)
	return fileID{dev: dev, ino: ino, size: fi.Size(), ctime: ctime(fi).UnixNano()}
}

// take snapshots path without following a symlink at it.
func take(path string) snapshot {
	return takeDepth(path, 1, nil, maxContent)
}

// takeEntry snapshots a ledger entry: a file read in its format is kept
// up to maxKeyed.
func takeEntry(e protect.Entry) snapshot {
	return takeDepth(e.Path, 1, nil, limitOf(e))
}

// limitOf is the bytes of e's content a snapshot keeps.
func limitOf(e protect.Entry) int64 {
	if e.Format != protect.FormatOpaque {
		return maxKeyed
	}
	return maxContent
}

// takeSince is take, reusing what base (an earlier snapshot of path)
// read of each regular file whose identity has not changed since, where
// base's reading was settled: the final audit of a directory such as
// .git/hooks then reads no file the agent left alone.
func takeSince(e protect.Entry, base snapshot) snapshot {
	return takeDepth(e.Path, 1, &base, limitOf(e))
}

// takeDepth is take of path, reading directories depth levels below it
// and reusing what base read where it still holds (see takeSince).
func takeDepth(path string, depth int, base *snapshot, limit int64) snapshot {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return snapshot{}
	}
	if err != nil {
		return snapshot{exists: true, err: err}
	}
	s := snapshot{exists: true, mode: fi.Mode()}
	if fi.Mode().IsRegular() {
		s.id = idOf(fi)
		if base.reusableFor(s) {
			return *base
		}
		// Read as of now: a change in the same clock tick as a ctime
		// this recent could leave the ctime as it is.
		s.settled = ctime(fi).Before(time.Now().Add(-racyMargin))
	}
	switch {
	case fi.Mode().IsRegular() && fi.Size() > maxHash:
		s.sumLarge(fi)
	case fi.Mode().IsRegular():
		s.readFile(path, fi, limit)
	case fi.IsDir():
		s.readDir(path, depth, base)
	default:
		s.other = true
		if t, err := os.Readlink(path); err == nil {
			s.sum = sha256.Sum256([]byte(t))
		}
	}
	return s
}

// reusableFor reports whether base (possibly nil), a settled reading of
// a regular file, shows the file s was just found to be (same mode, same
// identity): its reading holds and the file is not read again.
func (base *snapshot) reusableFor(s snapshot) bool {
	return base != nil && base.settled && base.exists && base.err == nil && !base.dir && !base.other &&
		base.mode == s.mode && base.id == s.id
}

// sumLarge sums a regular file above maxHash by its size, time and
// status, not its content.
func (s *snapshot) sumLarge(fi fs.FileInfo) {
	h := sha256.New()
	fmt.Fprintf(h, "large\x00%d\x00%d\x00%v", fi.Size(), fi.ModTime().UnixNano(), fi.Sys())
	h.Sum(s.sum[:0])
}

// readFile sums the regular file at path and keeps its content when it
// is at most limit bytes.
func (s *snapshot) readFile(path string, fi fs.FileInfo, limit int64) {
	fileReads.Add(1)
	f, err := openRead(path)
	if err != nil {
		s.err = err
		return
	}
	defer f.Close()
	h := sha256.New()
	var buf bytes.Buffer
	w := io.Writer(h)
	if fi.Size() <= limit {
		w = io.MultiWriter(h, &buf)
	}
	if _, err := io.Copy(w, f); err != nil {
		s.err = err
		return
	}
	h.Sum(s.sum[:0])
	if fi.Size() <= limit && int64(buf.Len()) <= limit {
		s.content = buf.Bytes()
		if s.content == nil {
			s.content = []byte{}
		}
	}
}

// readDir records the directory at path: its entries (at most maxTree),
// each taken depth-1 levels deeper (reusing base's) or, at depth 0, by
// its kind only, and a sum over their names, sums and modes.
func (s *snapshot) readDir(path string, depth int, base *snapshot) {
	s.dir = true
	ents, err := os.ReadDir(path)
	if err != nil {
		s.err = err
		return
	}
	s.entries = map[string]snapshot{}
	h := sha256.New()
	for i, e := range ents {
		if i >= maxTree {
			break
		}
		var sub snapshot
		if depth > 0 {
			var was *snapshot
			if b, ok := base.entry(e.Name()); ok {
				was = &b
			}
			sub = takeDepth(filepath.Join(path, e.Name()), depth-1, was, maxContent)
		} else {
			sub = snapshot{exists: true, dir: e.IsDir(), mode: e.Type()}
		}
		s.entries[e.Name()] = sub
		h.Write([]byte(e.Name()))
		h.Write([]byte{0})
		h.Write(sub.sum[:])
		// An entry's mode counts too: chmod +x on a hook that
		// was there, unused, makes git run it.
		h.Write(binary.LittleEndian.AppendUint32(nil, uint32(sub.mode)))
	}
	h.Sum(s.sum[:0])
}

// entry is base's entry name, if base (possibly nil) is a directory's
// snapshot that has one.
func (base *snapshot) entry(name string) (snapshot, bool) {
	if base == nil || !base.dir {
		return snapshot{}, false
	}
	e, ok := base.entries[name]
	return e, ok
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
