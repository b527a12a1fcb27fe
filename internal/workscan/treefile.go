package workscan

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"slices"
	"time"
)

// The tree file's format (TreeFile; written by SaveTree, read by
// loadTree), version 1: the magic line, then the number of directories
// and each directory in ascending order of its path: the path, its
// ctime's seconds (signed) and nanoseconds, its inode, 1 if trusted else
// 0, the number of its entries and each entry's name and type bits.
// Numbers are varints (encoding/binary's), strings a length and the
// bytes. One tree has one encoding: the decoder refuses anything else
// (paths out of order or repeated, a number not in its shortest form,
// nanoseconds past a second, a byte other than 0 or 1, bytes left over),
// and a file that does not decode is
// no tree (the scan then reads every directory).
//
// It replaces encoding/gob, whose package initialisation alone cost every
// start of agent-sandbox about 0.2 ms (the parent's and init's alike).
const treeMagic = "agent-sandbox tree 1\n"

// encodeTree is the tree file's contents for dirs.
func encodeTree(dirs map[string]treeDir) []byte {
	keys := make([]string, 0, len(dirs))
	for k := range dirs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b := append([]byte(nil), treeMagic...)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, k := range keys {
		d := dirs[k]
		str(k)
		b = binary.AppendVarint(b, d.Ctime.Unix())
		b = binary.AppendUvarint(b, uint64(d.Ctime.Nanosecond()))
		b = binary.AppendUvarint(b, d.Ino)
		if d.Trusted {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		b = binary.AppendUvarint(b, uint64(len(d.Ents)))
		for _, e := range d.Ents {
			str(e.N)
			b = binary.AppendUvarint(b, uint64(e.T))
		}
	}
	return b
}

var errTreeFile = errors.New("not a tree file of this version")

// decodeTree reads what encodeTree wrote; any other input is an error.
func decodeTree(b []byte) (map[string]treeDir, error) {
	if len(b) < len(treeMagic) || string(b[:len(treeMagic)]) != treeMagic {
		return nil, errTreeFile
	}
	r := treeReader{b: b[len(treeMagic):]}
	// Each directory takes at least 6 bytes: a count past that is a
	// corrupt file, not a reason to allocate.
	n := r.uvarint()
	if n > uint64(len(r.b))/6 {
		return nil, errTreeFile
	}
	dirs := make(map[string]treeDir, n)
	prev := ""
	for i := uint64(0); i < n && r.err == nil; i++ {
		k := r.str()
		if i > 0 && k <= prev {
			return nil, errTreeFile
		}
		prev = k
		sec, nsec := r.varint(), r.uvarint()
		var d treeDir
		d.Ino = r.uvarint()
		switch r.byte() {
		case 0:
		case 1:
			d.Trusted = true
		default:
			return nil, errTreeFile
		}
		// A ctime within ±2^40 s of 1970 (35,000 years): time.Unix
		// keeps those exactly.
		if nsec >= uint64(time.Second) || sec > 1<<40 || sec < -(1<<40) {
			return nil, errTreeFile
		}
		d.Ctime = time.Unix(sec, int64(nsec))
		ents := r.uvarint()
		if ents > uint64(len(r.b))/2 { // a name's length and a type at least
			return nil, errTreeFile
		}
		if ents > 0 {
			d.Ents = make([]treeEnt, 0, ents)
		}
		for j := uint64(0); j < ents && r.err == nil; j++ {
			name := r.str()
			mode := r.uvarint()
			if mode > uint64(^uint32(0)) {
				return nil, errTreeFile
			}
			d.Ents = append(d.Ents, treeEnt{N: name, T: fs.FileMode(mode)})
		}
		dirs[k] = d
	}
	if r.err != nil || len(r.b) != 0 {
		return nil, errTreeFile
	}
	return dirs, nil
}

// treeReader takes varints, strings and bytes off b; the first shortfall
// sets err, and everything after it reads as zero.
type treeReader struct {
	b   []byte
	err error
}

// uvarint and varint take only the shortest encoding of a number (the
// one encodeTree writes).
func (r *treeReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 || n != len(binary.AppendUvarint(nil, v)) {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *treeReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 || n != len(binary.AppendVarint(nil, v)) {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *treeReader) byte() byte {
	if len(r.b) == 0 {
		r.fail()
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *treeReader) str() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail()
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *treeReader) fail() {
	if r.err == nil {
		r.err = errTreeFile
	}
	r.b = nil
}
