//go:build linux

package checkpoint

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/safefs"
)

// ErrTooLarge is matched (errors.Is) by the error of a checkpoint that
// would record more than Settings.MaxBytes.
var ErrTooLarge = errors.New("over the checkpoint size limit")

// taker is one walk of the workdir.
type taker struct {
	s       *Store
	rules   rules
	store   bool // write the blobs (false: only hash)
	skipSet map[string]bool
	prev    cursor     // the head cache, to take hashes from
	reuse   bool       // the filesystem's stat can be trusted
	keys    []cacheKey // the stats of t.m.Entries, for the next head cache
	pf      *prefetcher
	// lists are the head cache's directory listings (by path), dirs the
	// walk's, for the next head cache.
	lists map[string]dirList
	dirs  []dirList
	racy  int64 // files changed after this are not cached
	m     *Manifest
}

// Take records the workdir's current state as a checkpoint and returns
// it. With base, the ignore rules are base's (not the tree's own, which
// the agent may have edited). A tree equal to the last checkpoint taken
// is that checkpoint (nothing new is written).
func (s *Store) Take(base *Manifest) (*Manifest, error) {
	return s.walk(base, true)
}

// Scan reads the workdir's current state like Take, hashing the files
// the stat cache does not know, but writes nothing to the store.
func (s *Store) Scan(base *Manifest) (*Manifest, error) {
	return s.walk(base, false)
}

func (s *Store) walk(base *Manifest, store bool) (*Manifest, error) {
	now := time.Now()
	root, err := safefs.OpenFd(s.Workdir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: opening %s: %v", s.Workdir, err)
	}
	defer unix.Close(root)
	racy := now.Add(-2 * time.Second)
	if !s.racyAfter.IsZero() {
		racy = s.racyAfter
	}
	t := &taker{s: s, store: store, racy: racy.UnixNano(), reuse: true,
		m: &Manifest{Format: Format, Workdir: s.Workdir, Time: now.UTC()}}
	if base != nil {
		t.m.Rules = base.Rules
	} else {
		t.m.Rules = append(append([]string{}, DefaultRules...), append(readSmall(root, ".gitignore"), readSmall(root, ".git/info/exclude")...)...)
	}
	t.rules = parseRules(t.m.Rules)
	t.skipSet = s.livePlaceholders()
	if fs := unreliableStat(root); fs != "" {
		// Inode numbers or change times that a network or FUSE
		// filesystem may not keep: every file is read each time.
		t.reuse = false
		t.m.Note = "the workdir is on " + fs + ", whose inode numbers and change times a stat cache cannot trust: every checkpoint reads every file"
	}
	hc := s.loadHeadCache()
	t.prev = cursor{c: hc.Entries}
	t.m.Entries = make([]Entry, 0, len(hc.Entries)+64)
	t.keys = make([]cacheKey, 0, len(hc.Entries)+64)
	top := &dirRead{fd: root, kept: true}
	if err := unix.Fstat(root, &top.st); err != nil {
		return nil, fmt.Errorf("checkpoint: %s: %v", s.Workdir, err)
	}
	t.lists = hc.Dirs
	t.pf = newPrefetcher(t)
	err = t.dir(top)
	t.pf.stop()
	if err != nil {
		return nil, err
	}
	t.m.Digest = digest(t.m)
	if !store {
		return t.m, nil
	}
	return t.record(now, hc)
}

// record keeps the walk's checkpoint: nothing new when it is the head's
// tree, a delta of the head when the head cache is the head's and little
// changed, a whole manifest otherwise.
func (t *taker) record(now time.Time, hc headCache) (*Manifest, error) {
	s := t.s
	head, herr := s.head()
	t.m.newSkips = len(t.m.Skipped) > 0 && (herr != nil || head.Skipped != skipDigest(t.m.Skipped))
	cacheIsHead := herr == nil && hc.ID == head.ID && hc.Digest == head.Digest && s.hasManifest(head.ID)
	if herr == nil && head.Digest == t.m.Digest && s.hasManifest(head.ID) {
		// The tree is the last checkpoint's: that one stands.
		t.m.ID = head.ID
		if !cacheIsHead || !sameCache(hc.Entries, t.m.Entries, t.keys) || !sameLists(hc.dirs, t.dirs) {
			s.saveHeadCache(t.m, t.keys, t.dirs)
		}
		return t.m, nil
	}
	t.m.ID = NewID(now)
	depth := 0
	if cacheIsHead && head.Depth < maxDeltaDepth {
		prev := make([]Entry, len(hc.Entries))
		for i := range hc.Entries {
			prev[i] = hc.Entries[i].Entry
		}
		changed, removed := diffEntries(prev, t.m.Entries)
		if len(changed)+len(removed) <= 64+len(t.m.Entries)/8 {
			depth = head.Depth + 1
			d := &delta{Format: Format, ID: t.m.ID, Base: head.ID, Depth: depth, Workdir: t.m.Workdir, Time: t.m.Time,
				Rules: t.m.Rules, Changed: changed, Removed: removed, Skipped: t.m.Skipped, Bytes: t.m.Bytes, Digest: t.m.Digest, Note: t.m.Note}
			if err := s.saveDelta(d); err != nil {
				return nil, fmt.Errorf("checkpoint store %s: writing the checkpoint: %v", s.Dir, err)
			}
		}
	}
	if depth == 0 {
		if err := s.saveManifest(t.m); err != nil {
			return nil, fmt.Errorf("checkpoint store %s: writing the manifest: %v", s.Dir, err)
		}
	}
	b, _ := json.Marshal(headRecord{ID: t.m.ID, Digest: t.m.Digest, Skipped: skipDigest(t.m.Skipped), Depth: depth})
	_ = writeFileAtomic(s.path("head"), b)
	s.saveHeadCache(t.m, t.keys, t.dirs)
	return t.m, nil
}

// listing is the names of the directory d as the head cache has them,
// when the directory's modification and change times, inode and device
// are the ones recorded then (and were not too recent to be trusted):
// a name added, removed or renamed in a directory changes its
// modification and change times, and no one can set a change time back,
// so its listing is the one recorded (git's untracked cache relies on
// the same). Its entries are still each lstat'ed.
func (t *taker) listing(d *dirRead) ([]string, bool) {
	if !t.reuse {
		return nil, false
	}
	l, ok := t.lists[d.rel]
	if !ok || l.Key != dirKey(&d.st) {
		return nil, false
	}
	t.s.listed.Add(1)
	return l.Names, true
}

// sameCache reports whether the head cache c holds the entries es with
// the stats keys.
func sameCache(c []centry, es []Entry, keys []cacheKey) bool {
	if len(c) != len(es) {
		return false
	}
	for i := range c {
		if c[i].Entry != es[i] || c[i].cacheKey != keys[i] {
			return false
		}
	}
	return true
}

type headRecord struct {
	ID     string `json:"id"`
	Digest string `json:"digest"`
	// Skipped is the digest of what the checkpoint left out.
	Skipped string `json:"skipped"`
	// Depth is the checkpoint's place in a chain of deltas (0: whole).
	Depth int `json:"depth,omitempty"`
}

func skipDigest(sk []Skip) string {
	h := sha256.New()
	_ = json.NewEncoder(h).Encode(sk)
	return hex.EncodeToString(h.Sum(nil))
}

// NewSkips reports whether what m left out differs from what the
// checkpoint before it left out (for the note a run prints).
func (m *Manifest) NewSkips() bool { return m.newSkips }

func (s *Store) head() (headRecord, error) {
	var h headRecord
	b, err := os.ReadFile(s.path("head"))
	if err == nil {
		err = json.Unmarshal(b, &h)
	}
	return h, err
}

// unreliableStat names the filesystem of the directory fd when it is
// one whose stat a cache cannot trust (network and FUSE filesystems);
// "" otherwise.
func unreliableStat(fd int) string {
	var st unix.Statfs_t
	if unix.Fstatfs(fd, &st) != nil {
		return "a filesystem it cannot identify"
	}
	switch uint32(st.Type) {
	case unix.NFS_SUPER_MAGIC:
		return "NFS"
	case unix.FUSE_SUPER_MAGIC:
		return "a FUSE filesystem"
	case unix.V9FS_MAGIC:
		return "9p"
	case unix.CIFS_SUPER_MAGIC, unix.SMB2_SUPER_MAGIC, unix.SMB_SUPER_MAGIC:
		return "SMB/CIFS"
	}
	return ""
}

// readSmall reads the lines of the regular file rel below root (never
// through a symlink), or nothing.
func readSmall(root int, rel string) []string {
	fd, err := safefs.OpenBeneathFd(root, rel, rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(f, 1<<20))
	return strings.Split(string(b), "\n")
}

func (t *taker) skip(rel, why string) {
	t.m.Skipped = append(t.m.Skipped, Skip{Path: rel, Why: why})
}

// dir records the directory d (rel "" is the workdir) and what it
// holds.
func (t *taker) dir(d *dirRead) error {
	t.pf.get(d)
	if d.err != nil {
		return fmt.Errorf("checkpoint: reading %s: %v", t.s.Workdir+"/"+d.rel, d.err)
	}
	if t.reuse {
		key := dirKey(&d.st)
		if key.MTime < t.racy && key.CTime < t.racy {
			t.dirs = append(t.dirs, dirList{Rel: d.rel, Key: key, Names: d.names})
		}
	}
	if d.rel != "" {
		for _, n := range d.names {
			if n == ".git" {
				t.m.Entries[len(t.m.Entries)-1].Repo = true
			}
		}
	}
	for i, name := range d.names {
		r := name
		if d.rel != "" {
			r = d.rel + "/" + name
		}
		if err := t.one(d, i, name, r); err != nil {
			return err
		}
	}
	return nil
}

// statted is one name's lstat, taken ahead of the walk.
type statted struct {
	st  unix.Stat_t
	err error
}

// statAll lstats the names in the directory fd, in parallel for a large
// directory (the stat walk is most of a checkpoint of an unchanged tree).
func statAll(fd int, names []string) []statted {
	out := make([]statted, len(names))
	const chunk = 64
	if len(names) < 2*chunk {
		for i, n := range names {
			out[i].err = unix.Fstatat(fd, n, &out[i].st, unix.AT_SYMLINK_NOFOLLOW)
		}
		return out
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, statWorkers)
	for lo := 0; lo < len(names); lo += chunk {
		hi := min(lo+chunk, len(names))
		wg.Add(1)
		sem <- struct{}{}
		go func(lo, hi int) {
			defer func() { <-sem; wg.Done() }()
			for i := lo; i < hi; i++ {
				out[i].err = unix.Fstatat(fd, names[i], &out[i].st, unix.AT_SYMLINK_NOFOLLOW)
			}
		}(lo, hi)
	}
	wg.Wait()
	return out
}

// statWorkers bounds the parallel lstats of one directory.
var statWorkers = max(2, min(8, runtime.NumCPU()*2))

func (t *taker) one(d *dirRead, i int, name, rel string) error {
	dirfd, pre := d.fd, &d.sts[i]
	st := pre.st
	if err := pre.err; err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("checkpoint: cannot stat %s: %v", Quote(t.s.Workdir+"/"+rel), err)
	}
	if t.skipSet[rel] {
		return nil
	}
	e := Entry{Path: rel, Mode: st.Mode & 0o7777, UID: st.Uid, GID: st.Gid, MTime: st.Mtim.Nano()}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if strings.Count(rel, "/") >= MaxDepth {
			t.skip(rel, fmt.Sprintf("directory nested deeper than %d levels", MaxDepth))
			return nil
		}
		if t.rules.ignored(rel, true) {
			t.skip(rel, "ignored directory")
			return nil
		}
		sub := d.kids[i]
		if sub == nil {
			sub = t.pf.open(dirfd, name, rel, &st)
		}
		defer t.pf.done(sub)
		err := sub.openErr
		if errors.Is(err, unix.EACCES) {
			// Left as it is, and named: an unreadable directory must
			// not stop every later checkpoint.
			t.skip(rel, "unreadable directory")
			return nil
		}
		if err != nil {
			return fmt.Errorf("checkpoint: cannot open %s: %v", Quote(t.s.Workdir+"/"+rel), err)
		}
		e.Type = TypeDir
		t.add(e, statKey{}, false)
		return t.dir(sub)
	case unix.S_IFLNK:
		target, err := readlinkat(dirfd, name)
		if err != nil {
			return fmt.Errorf("checkpoint: cannot read the symlink %s: %v", Quote(t.s.Workdir+"/"+rel), err)
		}
		e.Type, e.Target, e.Mode = TypeSymlink, target, 0o777
		t.add(e, statKey{}, false)
		return nil
	case unix.S_IFREG:
		return t.file(dirfd, name, rel, &st, e)
	}
	t.skip(rel, "special file")
	return nil
}

func (t *taker) file(dirfd int, name, rel string, st *unix.Stat_t, e Entry) error {
	if t.rules.ignored(rel, false) && st.Size > t.s.Settings.IgnoredFileMax {
		t.skip(rel, fmt.Sprintf("ignored file over %d bytes", t.s.Settings.IgnoredFileMax))
		return nil
	}
	if t.m.Bytes+st.Size > t.s.Settings.MaxBytes {
		return fmt.Errorf("checkpoint of %s: %w (%d bytes) at %s (%d bytes, %d on disk); remove what should not be kept, set AGENT_SANDBOX_CHECKPOINT_MAX_SIZE, or turn checkpoints off for this workdir with --checkpoint=off or checkpoint = \"off\" in agent.toml", t.s.Workdir, ErrTooLarge, t.s.Settings.MaxBytes, Quote(rel), st.Size, st.Blocks*512)
	}
	e.Type, e.Size = TypeFile, st.Size
	t.m.Bytes += st.Size
	key := statKey{CTime: st.Ctim.Nano(), Ino: st.Ino, Dev: st.Dev}
	if c := t.prev.find(rel); c != nil && t.reuse && c.Trusted && c.Type == TypeFile &&
		c.statKey == key && c.Size == e.Size && c.MTime == e.MTime && c.Hash != "" {
		e.Hash = c.Hash
		t.add(e, key, true)
		return nil
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EACCES) {
		t.m.Bytes -= st.Size
		t.skip(rel, "unreadable file")
		return nil
	}
	if err != nil {
		return fmt.Errorf("checkpoint: cannot read %s: %v", Quote(t.s.Workdir+"/"+rel), err)
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	var now unix.Stat_t
	if err := unix.Fstat(fd, &now); err != nil || now.Ino != st.Ino || now.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("checkpoint: %s changed while it was read", Quote(t.s.Workdir+"/"+rel))
	}
	hash, n, err := t.s.putBlob(f, t.store, st.Size)
	if err != nil {
		return fmt.Errorf("checkpoint: %s: %v", Quote(t.s.Workdir+"/"+rel), err)
	}
	if n != st.Size {
		return fmt.Errorf("checkpoint: %s changed while it was read", Quote(t.s.Workdir+"/"+rel))
	}
	e.Hash = hash
	t.add(e, key, t.reuse && e.MTime < t.racy && key.CTime < t.racy)
	return nil
}

// add records e, with the stat the head cache keeps of it.
func (t *taker) add(e Entry, key statKey, trusted bool) {
	t.m.Entries = append(t.m.Entries, e)
	t.keys = append(t.keys, cacheKey{statKey: key, Trusted: trusted})
}

// putBlob hashes what r holds (up to max+1 bytes) and, with store, keeps
// it as a blob.
func (s *Store) putBlob(r io.Reader, store bool, max int64) (string, int64, error) {
	h := sha256.New()
	r = io.LimitReader(r, max+1)
	if !store {
		n, err := io.Copy(h, r)
		return hex.EncodeToString(h.Sum(nil)), n, err
	}
	tmp, err := os.CreateTemp(s.path("objects"), ".tmp-*")
	if err != nil {
		return "", 0, fmt.Errorf("writing to the checkpoint store: %v", err)
	}
	defer os.Remove(tmp.Name())
	bw := bufio.NewWriterSize(tmp, 64<<10)
	n, err := io.Copy(io.MultiWriter(h, bw), r)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", n, err
	}
	hash := hex.EncodeToString(h.Sum(nil))
	// A blob already there has these bytes: renaming over it is
	// harmless, and cheaper than looking first.
	dst := s.objectPath(hash)
	err = os.Rename(tmp.Name(), dst)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.Mkdir(filepath.Dir(dst), 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return "", n, err
		}
		err = os.Rename(tmp.Name(), dst)
	}
	s.wrote++
	return hash, n, err
}

func readlinkat(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// livePlaceholders are the workdir paths (relative) that other runs'
// placeholders hold now (internal/placeholder's registry in the state
// root): they are not the user's files.
func (s *Store) livePlaceholders() map[string]bool {
	out := map[string]bool{}
	sum := sha256.Sum256([]byte(s.Workdir))
	f, err := os.Open(filepath.Join(s.StateRoot, "protect", hex.EncodeToString(sum[:8])+".placeholders"))
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var r struct {
			Path    string `json:"path"`
			Dev     uint64 `json:"dev"`
			Ino     uint64 `json:"ino"`
			Exclude string `json:"exclude"`
		}
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Exclude != "" {
			continue
		}
		rel, err := filepath.Rel(s.Workdir, r.Path)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		var st unix.Stat_t
		if unix.Lstat(r.Path, &st) == nil && st.Dev == r.Dev && st.Ino == r.Ino {
			out[rel] = true
		}
	}
	return out
}
