package workscan

import (
	"bytes"
	"io/fs"
	"reflect"
	"testing"
	"time"
)

func sampleDirs() map[string]treeDir {
	return map[string]treeDir{
		"":      {Ctime: time.Unix(1764800000, 123456789), Ino: 2, Trusted: true, Ents: []treeEnt{{N: ".git", T: fs.ModeDir}, {N: "src", T: fs.ModeDir}, {N: ".envrc", T: 0}}},
		"src":   {Ctime: time.Unix(1764800001, 0), Ino: 1 << 40, Ents: []treeEnt{{N: "a b\x00\n", T: fs.ModeSymlink}}},
		"src/x": {Ctime: time.Unix(-5, 999999999), Ino: 0},
	}
}

// The tree file round-trips exactly (ctimes to the nanosecond, which the
// scan compares with Equal), and one tree has one encoding.
func TestTreeFileFormat(t *testing.T) {
	dirs := sampleDirs()
	b := encodeTree(dirs)
	got, err := decodeTree(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(dirs) {
		t.Fatalf("decoded %d directories, want %d", len(got), len(dirs))
	}
	for k, d := range dirs {
		g := got[k]
		if !g.Ctime.Equal(d.Ctime) || g.Ino != d.Ino || g.Trusted != d.Trusted || !reflect.DeepEqual(g.Ents, d.Ents) {
			t.Errorf("%q: decoded %+v, want %+v", k, g, d)
		}
	}
	if !bytes.Equal(encodeTree(got), b) {
		t.Error("a decoded tree encodes otherwise")
	}
	if got, err := decodeTree(encodeTree(nil)); err != nil || len(got) != 0 {
		t.Errorf("an empty tree: %v, %v", got, err)
	}
	for name, bad := range map[string][]byte{
		"empty":          nil,
		"another magic":  append([]byte("agent-sandbox tree 2\n"), b[len(treeMagic):]...),
		"truncated":      b[:len(b)-1],
		"trailing bytes": append(append([]byte{}, b...), 0),
		"gob, as before": {0x0e, 0xff, 0x81, 0x04, 0x01, 0x02, 0xff, 0x82, 0x00},
		"a huge count":   append([]byte(treeMagic), 0xff, 0xff, 0xff, 0xff, 0x0f),
		"overlong zero":  append([]byte(treeMagic), 0x80, 0x00),
	} {
		if _, err := decodeTree(bad); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	// Paths out of order, or repeated: not an encoding encodeTree makes.
	one := encodeTree(map[string]treeDir{"a": {}})
	body := one[len(treeMagic)+1:]
	twice := append(append(append([]byte(treeMagic), 2), body...), body...)
	if _, err := decodeTree(twice); err == nil {
		t.Error("a repeated path decoded")
	}
}

// FuzzTreeFile: decoding never panics, and whatever decodes is the one
// encoding of its tree.
func FuzzTreeFile(f *testing.F) {
	f.Add(encodeTree(sampleDirs()))
	f.Add(encodeTree(nil))
	f.Add([]byte(treeMagic))
	f.Add([]byte("not a tree"))
	f.Fuzz(func(t *testing.T, b []byte) {
		dirs, err := decodeTree(b)
		if err != nil {
			return
		}
		if again := encodeTree(dirs); !bytes.Equal(again, b) {
			t.Fatalf("decoded %q, which encodes as %q", b, again)
		}
	})
}
