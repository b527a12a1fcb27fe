package grant

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// resolveTree builds a directory full of what makes canonical forms
// differ from the paths as written: absolute and relative links, links
// with "..", links to files, dangling links, loops, chains, links whose
// target goes on past a file, and trailing slashes.
func resolveTree(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"d/e", "d/f", "x"} {
		must(os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	must(os.WriteFile(filepath.Join(root, "file"), nil, 0o644))
	must(os.WriteFile(filepath.Join(root, "d/file"), nil, 0o644))
	links := map[string]string{
		"abs":        root + "/d",
		"rel":        "d/e",
		"up":         "d/../x",
		"upfile":     "file/..",
		"slash":      "file/",
		"dslash":     "d/",
		"dang":       "missing/x",
		"loop":       "loop",
		"loop2":      "loop3",
		"loop3":      "loop2",
		"chain":      "abs/e",
		"chainfile":  "abs/file",
		"tofile":     "file",
		"past":       "tofile/x",
		"pastup":     "tofile/..",
		"d/e/back":   "../..",
		"d/e/self":   ".",
		"d/e/abs":    "/",
		"d/f/parent": "../f/../e",
		"d/lnk":      "../abs/e/back",
		"x/deep":     "../d/e/back/chain",
	}
	for name, target := range links {
		must(os.Symlink(target, filepath.Join(root, name)))
	}
	return root
}

// TestResolverMatchesCanonical holds the one-pass resolver to the old
// Canonical (filepath.EvalSymlinks on ever shorter prefixes) on every
// path of up to three components over the tree's names, and ".." and
// missing names, resolved singly and as one batch.
func TestResolverMatchesCanonical(t *testing.T) {
	root := resolveTree(t)
	names := []string{"abs", "rel", "up", "upfile", "slash", "dslash", "dang", "loop", "loop2", "chain",
		"chainfile", "tofile", "past", "pastup", "d", "e", "f", "x", "file", "back", "self", "parent",
		"lnk", "deep", "missing", ".."}
	var paths []string
	var gen func(prefix string, depth int)
	gen = func(prefix string, depth int) {
		paths = append(paths, prefix)
		if depth == 3 {
			return
		}
		for _, n := range names {
			gen(prefix+"/"+n, depth+1)
		}
	}
	gen(root, 0)
	paths = append(paths, "/", root+"/", "/nonexistent/a/b", root+"//d/./e")
	batch := newResolver()
	for _, p := range paths {
		want := oldCanonical(p)
		if got := newResolver().canonical(p); got != want {
			t.Errorf("canonical(%s) = %s, want %s", p, got, want)
		}
		if got := batch.canonical(p); got != want {
			t.Errorf("batch canonical(%s) = %s, want %s", p, got, want)
		}
	}
	if len(paths) < 10000 {
		t.Fatalf("only %d paths", len(paths))
	}
}

// BenchmarkCanonicalMissing is one path whose last two components do not
// exist, the usual credential path.
func BenchmarkCanonicalMissing(b *testing.B) {
	home := b.TempDir()
	p := filepath.Join(home, ".config", "gcloud", "x")
	b.Run("resolver", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			newResolver().canonical(p)
		}
	})
	b.Run("old", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			oldCanonical(p)
		}
	})
}

// TestResolverListsDirectory: a directory asked about more than listAfter
// times is read whole, and what the listing says of each entry (file,
// directory, symlink and its target, socket, missing) is what lstat says.
func TestResolverListsDirectory(t *testing.T) {
	dir := t.TempDir()
	var names []string
	for i := 0; i < 3*listAfter; i++ {
		name := fmt.Sprintf("e%03d", i)
		p := filepath.Join(dir, name)
		var err error
		switch i % 4 {
		case 0:
			err = os.Mkdir(p, 0o755)
		case 1:
			err = os.WriteFile(p, nil, 0o644)
		case 2:
			err = os.Symlink(fmt.Sprintf("e%03d", i-2), p)
		case 3:
			continue // asked about, never created
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r := newResolver()
	for i := 0; i < 3*listAfter; i++ {
		p := filepath.Join(dir, fmt.Sprintf("e%03d", i))
		if got, want := r.lstat(p), lstatNode(p); got != want {
			t.Errorf("lstat(%s) = %+v, want %+v", p, got, want)
		}
	}
	if d := r.dirs[dir]; d == nil || !d.listed {
		t.Fatalf("%s was not read whole: %+v", dir, d)
	}
	if n := r.lstat(sock); !n.socket || n.missing {
		t.Errorf("the socket from the listing: %+v", n)
	}
}

// BenchmarkResolveSiblings is a plan's lookups of 1,000 grants in one
// directory (one resolver, as plan.Build shares): the directory is read
// whole after listAfter lookups instead of one lstat per grant.
func BenchmarkResolveSiblings(b *testing.B) {
	dir := b.TempDir()
	paths := make([]string, 1000)
	for i := range paths {
		paths[i] = filepath.Join(dir, fmt.Sprintf("g%04d", i))
		if err := os.Mkdir(paths[i], 0o755); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		r := newResolver()
		for _, p := range paths {
			r.canonical(p)
		}
	}
}
