//go:build linux

package checkpoint

import (
	"bufio"
	"encoding/binary"
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// The head cache (headcache in the store) is the last checkpoint's
// entries, in walk order, each with the stat of the file as it was read
// (change time, inode, device): a later walk takes a file's hash from it
// when its size, modification time, change time, inode and device are
// the ones recorded (the stat cache; a file changed in the 2 s before the
// walk is not trusted, git's "racily clean" rule), and a later
// checkpoint that differs from the head by little is written as a delta
// of it without reading the head's manifest. It is binary, read once
// into one string, because a checkpoint of an unchanged tree costs
// little more than reading it and the walk.

const headCacheMagic = "agent-sandbox headcache 2\n"

// dirList is a directory's listing as a walk read it (names in byte
// order), with the stat that says whether it still holds.
type dirList struct {
	Rel   string
	Key   dirStat
	Names []string
}

// dirStat is what says a directory's listing has not changed.
type dirStat struct {
	MTime, CTime int64
	Ino, Dev     uint64
}

func dirKey(st *unix.Stat_t) dirStat {
	return dirStat{MTime: st.Mtim.Nano(), CTime: st.Ctim.Nano(), Ino: st.Ino, Dev: st.Dev}
}

// sameLists reports whether two walks' listings are equal.
func sameLists(a, b []dirList) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Rel != b[i].Rel || a[i].Key != b[i].Key || len(a[i].Names) != len(b[i].Names) {
			return false
		}
		for j := range a[i].Names {
			if a[i].Names[j] != b[i].Names[j] {
				return false
			}
		}
	}
	return true
}

// centry is one entry of the head cache.
type centry struct {
	Entry
	cacheKey
}

// cacheKey is what the head cache keeps of an entry beside the entry.
type cacheKey struct {
	statKey
	// Trusted marks a file whose hash a walk may take from the cache.
	Trusted bool
}

// statKey is the part of a file's stat the cache compares beside the
// entry's own size and modification time.
type statKey struct {
	CTime    int64
	Ino, Dev uint64
}

// headCache is the head cache as read.
type headCache struct {
	ID, Digest string
	Entries    []centry
	// Dirs are the listings of the directories whose stat was old
	// enough to be trusted, by path.
	Dirs map[string]dirList
	// dirs are the same in walk order.
	dirs []dirList
}

// loadHeadCache reads the head cache; an empty one when it is missing or
// unreadable (every file is then read again).
func (s *Store) loadHeadCache() headCache {
	b, err := os.ReadFile(s.path("headcache"))
	if err != nil {
		return headCache{}
	}
	c, err := decodeHeadCache(string(b))
	if err != nil {
		return headCache{}
	}
	return c
}

var errBadCache = errors.New("bad head cache")

func decodeHeadCache(d string) (headCache, error) {
	var c headCache
	if len(d) < len(headCacheMagic) || d[:len(headCacheMagic)] != headCacheMagic {
		return c, errBadCache
	}
	r := cacheReader{d: d, i: len(headCacheMagic)}
	c.ID, c.Digest = r.str(), r.str()
	n := r.uint()
	if r.err != nil || n > uint64(len(d)) {
		return c, errBadCache
	}
	c.Entries = make([]centry, 0, n)
	for k := uint64(0); k < n && r.err == nil; k++ {
		var e centry
		e.Path, e.Type, e.Hash, e.Target = r.str(), r.str(), r.str(), r.str()
		e.Mode, e.UID, e.GID = uint32(r.uint()), uint32(r.uint()), uint32(r.uint())
		e.Size, e.MTime, e.CTime = r.int(), r.int(), r.int()
		e.Ino, e.Dev = r.uint(), r.uint()
		flags := r.uint()
		e.Repo, e.Trusted = flags&1 != 0, flags&2 != 0
		c.Entries = append(c.Entries, e)
	}
	nd := r.uint()
	if r.err != nil || nd > uint64(len(d)) {
		return headCache{}, errBadCache
	}
	c.Dirs = make(map[string]dirList, nd)
	for k := uint64(0); k < nd && r.err == nil; k++ {
		var l dirList
		l.Rel = r.str()
		l.Key.MTime, l.Key.CTime = r.int(), r.int()
		l.Key.Ino, l.Key.Dev = r.uint(), r.uint()
		nn := r.uint()
		if r.err != nil || nn > uint64(len(d)) {
			return headCache{}, errBadCache
		}
		l.Names = make([]string, 0, nn)
		for j := uint64(0); j < nn && r.err == nil; j++ {
			l.Names = append(l.Names, r.str())
		}
		c.Dirs[l.Rel] = l
		c.dirs = append(c.dirs, l)
	}
	if r.err != nil || r.i != len(d) {
		return headCache{}, errBadCache
	}
	return c, nil
}

type cacheReader struct {
	d   string
	i   int
	err error
}

func (r *cacheReader) uint() uint64 {
	var x uint64
	for shift := 0; shift < 64; shift += 7 {
		if r.i >= len(r.d) {
			r.err = errBadCache
			return 0
		}
		b := r.d[r.i]
		r.i++
		x |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return x
		}
	}
	r.err = errBadCache
	return 0
}

func (r *cacheReader) int() int64 {
	u := r.uint()
	return int64(u>>1) ^ -int64(u&1)
}

func (r *cacheReader) str() string {
	n := r.uint()
	if r.err != nil || n > uint64(len(r.d)-r.i) {
		r.err = errBadCache
		return ""
	}
	s := r.d[r.i : r.i+int(n)]
	r.i += int(n)
	return s
}

// saveHeadCache writes the head cache of checkpoint m, whose entries'
// stats are keys (and trusted, which of them a walk may trust).
func (s *Store) saveHeadCache(m *Manifest, keys []cacheKey, dirs []dirList) {
	tmp, err := os.CreateTemp(s.Dir, ".tmp-*")
	if err != nil {
		return
	}
	defer os.Remove(tmp.Name())
	bw := bufio.NewWriterSize(tmp, 256<<10)
	buf := make([]byte, 0, 512)
	str := func(v string) {
		buf = binary.AppendUvarint(buf, uint64(len(v)))
		buf = append(buf, v...)
	}
	buf = append(buf, headCacheMagic...)
	str(m.ID)
	str(m.Digest)
	buf = binary.AppendUvarint(buf, uint64(len(m.Entries)))
	for i := range m.Entries {
		e, k := &m.Entries[i], &keys[i]
		str(e.Path)
		str(e.Type)
		str(e.Hash)
		str(e.Target)
		buf = binary.AppendUvarint(buf, uint64(e.Mode))
		buf = binary.AppendUvarint(buf, uint64(e.UID))
		buf = binary.AppendUvarint(buf, uint64(e.GID))
		buf = binary.AppendVarint(buf, e.Size)
		buf = binary.AppendVarint(buf, e.MTime)
		buf = binary.AppendVarint(buf, k.CTime)
		buf = binary.AppendUvarint(buf, k.Ino)
		buf = binary.AppendUvarint(buf, k.Dev)
		var flags uint64
		if e.Repo {
			flags |= 1
		}
		if k.Trusted {
			flags |= 2
		}
		buf = binary.AppendUvarint(buf, flags)
		if _, err := bw.Write(buf); err != nil {
			tmp.Close()
			return
		}
		buf = buf[:0]
	}
	buf = binary.AppendUvarint(buf, uint64(len(dirs)))
	for _, l := range dirs {
		str(l.Rel)
		buf = binary.AppendVarint(buf, l.Key.MTime)
		buf = binary.AppendVarint(buf, l.Key.CTime)
		buf = binary.AppendUvarint(buf, l.Key.Ino)
		buf = binary.AppendUvarint(buf, l.Key.Dev)
		buf = binary.AppendUvarint(buf, uint64(len(l.Names)))
		for _, n := range l.Names {
			str(n)
		}
		if _, err := bw.Write(buf); err != nil {
			tmp.Close()
			return
		}
		buf = buf[:0]
	}
	if _, err := bw.Write(buf); err != nil || bw.Flush() != nil {
		tmp.Close()
		return
	}
	if tmp.Close() == nil && os.Rename(tmp.Name(), s.path("headcache")) == nil {
		// The stat cache of an earlier version.
		os.Remove(s.path("statcache"))
	}
}

// cursor finds the head cache's entry of a path, the walk visiting paths
// in the cache's order.
type cursor struct {
	c []centry
	i int
}

// find is the cached entry of rel, or nil; rel is after every path asked
// before.
func (k *cursor) find(rel string) *centry {
	for k.i < len(k.c) {
		switch c := cmpWalk(k.c[k.i].Path, rel); {
		case c < 0:
			k.i++
		case c == 0:
			k.i++
			return &k.c[k.i-1]
		default:
			return nil
		}
	}
	return nil
}
