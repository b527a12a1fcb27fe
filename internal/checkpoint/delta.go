package checkpoint

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// A later checkpoint that changed little is kept as a delta
// (manifests/<id>.delta.gz): the entries that differ from the checkpoint
// before it (its base), the paths gone since, and the rest of a
// manifest's fields whole. Reading one resolves the chain of bases and
// checks the result against the delta's digest, so a delta never reads
// as a smaller tree than the one recorded (a mismatch is a corrupt store).
// The file's name differs from a whole manifest's so that nothing reads
// a delta as a whole manifest.

// maxDeltaDepth bounds a chain of deltas: the next checkpoint after it is
// written whole.
const maxDeltaDepth = 32

// delta is the stored form of a checkpoint relative to its base.
type delta struct {
	Format  int       `json:"format"`
	ID      string    `json:"id"`
	Base    string    `json:"base"`
	Depth   int       `json:"depth"`
	Workdir string    `json:"workdir"`
	Time    time.Time `json:"time"`
	Rules   []string  `json:"rules"`
	Changed []Entry   `json:"changed"`
	Removed []string  `json:"removed"`
	Skipped []Skip    `json:"skipped,omitempty"`
	Bytes   int64     `json:"bytes"`
	Digest  string    `json:"digest"`
	Note    string    `json:"note,omitempty"`
}

func (s *Store) manifestPath(id string) string { return s.path("manifests", id+".json.gz") }
func (s *Store) deltaPath(id string) string    { return s.path("manifests", id+".delta.gz") }

// hasManifest reports whether checkpoint id is in the store (whole or as
// a delta).
func (s *Store) hasManifest(id string) bool {
	if _, err := os.Lstat(s.manifestPath(id)); err == nil {
		return true
	}
	_, err := os.Lstat(s.deltaPath(id))
	return err == nil
}

// readGzJSON decodes the gzip-compressed JSON file p into v.
func readGzJSON(p string, v any) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		return fmt.Errorf("checkpoint store is corrupt: %s: %v (left as it is)", p, err)
	}
	if err := json.NewDecoder(zr).Decode(v); err != nil {
		return fmt.Errorf("checkpoint store is corrupt: %s: %v (left as it is)", p, err)
	}
	return nil
}

// readDelta reads the delta of checkpoint id.
func (s *Store) readDelta(id string) (*delta, error) {
	p := s.deltaPath(id)
	var d delta
	if err := readGzJSON(p, &d); err != nil {
		return nil, err
	}
	if d.Format != Format {
		return nil, fmt.Errorf("checkpoint %s was written by another version of agent-sandbox (format %d, this one reads %d): left as it is", p, d.Format, Format)
	}
	if d.ID != id || d.Base == "" || d.Base == id {
		return nil, fmt.Errorf("checkpoint store is corrupt: %s names checkpoint %q on base %q (left as it is)", p, d.ID, d.Base)
	}
	return &d, nil
}

// resolveDelta is checkpoint id, stored as a delta, made whole.
func (s *Store) resolveDelta(id string, depth int) (*Manifest, error) {
	if depth > maxDeltaDepth+1 {
		return nil, fmt.Errorf("checkpoint store is corrupt: the chain of deltas below %s is longer than %d (left as it is)", s.deltaPath(id), maxDeltaDepth)
	}
	d, err := s.readDelta(id)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("checkpoint %s: %v", id, err)
		}
		return nil, err
	}
	if !s.hasManifest(d.Base) {
		return nil, fmt.Errorf("checkpoint store is corrupt: %s is a delta of checkpoint %s, which is missing (left as it is)", s.deltaPath(id), d.Base)
	}
	base, err := s.manifest(d.Base, depth+1)
	if err != nil {
		return nil, err
	}
	m := &Manifest{Format: Format, ID: d.ID, Workdir: d.Workdir, Time: d.Time, Rules: d.Rules,
		Skipped: d.Skipped, Bytes: d.Bytes, Digest: d.Digest, Note: d.Note}
	m.Entries = applyDelta(base.Entries, d.Changed, d.Removed)
	if digest(m) != d.Digest {
		return nil, fmt.Errorf("checkpoint store is corrupt: %s applied to checkpoint %s does not give the tree it recorded (left as it is)", s.deltaPath(id), d.Base)
	}
	return m, nil
}

// applyDelta is base (in walk order) without removed, with changed (in
// walk order) in place of or beside its entries.
func applyDelta(base, changed []Entry, removed []string) []Entry {
	gone := make(map[string]bool, len(removed))
	for _, p := range removed {
		gone[p] = true
	}
	out := make([]Entry, 0, len(base)+len(changed))
	i, j := 0, 0
	for i < len(base) || j < len(changed) {
		if i < len(base) && gone[base[i].Path] {
			i++
			continue
		}
		switch {
		case j == len(changed):
			out = append(out, base[i])
			i++
		case i == len(base):
			out = append(out, changed[j])
			j++
		default:
			c := cmpWalk(base[i].Path, changed[j].Path)
			switch {
			case c < 0:
				out = append(out, base[i])
				i++
			case c == 0:
				out = append(out, changed[j])
				i++
				j++
			default:
				out = append(out, changed[j])
				j++
			}
		}
	}
	return out
}

// diffEntries is what changed from prev to cur (both in walk order): the
// entries of cur that prev does not hold as they are, and the paths of
// prev that cur does not hold.
func diffEntries(prev, cur []Entry) (changed []Entry, removed []string) {
	i, j := 0, 0
	for i < len(prev) || j < len(cur) {
		switch {
		case j == len(cur):
			removed = append(removed, prev[i].Path)
			i++
		case i == len(prev):
			changed = append(changed, cur[j])
			j++
		default:
			c := cmpWalk(prev[i].Path, cur[j].Path)
			switch {
			case c < 0:
				removed = append(removed, prev[i].Path)
				i++
			case c == 0:
				if prev[i] != cur[j] {
					changed = append(changed, cur[j])
				}
				i++
				j++
			default:
				changed = append(changed, cur[j])
				j++
			}
		}
	}
	return changed, removed
}

// cmpWalk orders two workdir-relative paths as the walk records them:
// the names of a directory in byte order, each directory followed by
// what it holds. That is byte order with "/" below every other byte.
func cmpWalk(a, b string) int {
	n := min(len(a), len(b))
	for k := 0; k < n; k++ {
		ca, cb := a[k], b[k]
		if ca == cb {
			continue
		}
		if ca == '/' {
			return -1
		}
		if cb == '/' {
			return 1
		}
		if ca < cb {
			return -1
		}
		return 1
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}

// digest is the sha256 of a checkpoint's rules, entries and skips, in a
// binary encoding (every field, length-prefixed): equal digests mean
// equal trees.
func digest(m *Manifest) string {
	h := sha256.New()
	buf := make([]byte, 0, 64<<10)
	flush := func() {
		if len(buf) > 60<<10 {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	str := func(s string) {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	buf = append(buf, "agent-sandbox checkpoint digest 2\x00"...)
	buf = binary.AppendUvarint(buf, uint64(len(m.Rules)))
	for _, r := range m.Rules {
		str(r)
		flush()
	}
	buf = binary.AppendUvarint(buf, uint64(len(m.Entries)))
	for i := range m.Entries {
		e := &m.Entries[i]
		str(e.Path)
		str(e.Type)
		buf = binary.AppendUvarint(buf, uint64(e.Mode))
		buf = binary.AppendUvarint(buf, uint64(e.UID))
		buf = binary.AppendUvarint(buf, uint64(e.GID))
		buf = binary.AppendVarint(buf, e.Size)
		buf = binary.AppendVarint(buf, e.MTime)
		str(e.Hash)
		str(e.Target)
		if e.Repo {
			buf = append(buf, 1)
		} else {
			buf = append(buf, 0)
		}
		flush()
	}
	buf = binary.AppendUvarint(buf, uint64(len(m.Skipped)))
	for _, sk := range m.Skipped {
		str(sk.Path)
		str(sk.Why)
		flush()
	}
	h.Write(buf)
	return hex.EncodeToString(h.Sum(nil))
}

// saveDelta writes d.
func (s *Store) saveDelta(d *delta) error {
	return writeGzJSON(s.path("manifests"), s.deltaPath(d.ID), d)
}

// writeGzJSON writes v as gzip-compressed JSON to p (through a temporary
// file in dir, synced, then renamed).
func writeGzJSON(dir, p string, v any) error {
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	zw, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	bw := bufio.NewWriter(zw)
	if err := json.NewEncoder(bw).Encode(v); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), p)
}
