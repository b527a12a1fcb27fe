package engine

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite README.md's engine table from the code")

// Every engine answers every protection, with a note, and the view gives
// them all (the promise the others are measured against).
func TestEveryCell(t *testing.T) {
	for _, e := range All() {
		if e.Name == "" || e.How == "" {
			t.Errorf("%s: no name or how", e.ID)
		}
		if len(e.Gives) != len(Protections()) {
			t.Errorf("%s: %d cells, want %d", e.ID, len(e.Gives), len(Protections()))
		}
		for _, p := range Protections() {
			c, ok := e.Gives[p]
			if !ok || c.Note == "" {
				t.Errorf("%s: no cell or note for %q", e.ID, p)
			}
		}
	}
	for _, id := range []ID{View, NonoInView} {
		if l := Must(id).Lacks(); len(l) != 0 {
			t.Errorf("%s lacks %v", id, l)
		}
	}
	for _, id := range []ID{Nono, Weaker} {
		e := Must(id)
		if len(e.Lacks()) == 0 || !strings.Contains(e.Summary(), "NOT: ") || !strings.Contains(e.BannerLabel(), "weaker than the namespace view") {
			t.Errorf("%s: summary %q / banner %q do not say what it lacks", id, e.Summary(), e.BannerLabel())
		}
	}
	if _, ok := Get("landlock"); ok {
		t.Error("Get(landlock): landlock is a backend, not an engine")
	}
}

const (
	beginMarker = "<!-- engine table: generated from internal/engine; go test ./internal/engine -update rewrites it -->\n"
	endMarker   = "<!-- end of engine table -->\n"
)

// README.md's table is the code's (go test ./internal/engine -update
// rewrites it).
func TestReadmeTable(t *testing.T) {
	const path = "../../README.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, beginMarker), strings.Index(s, endMarker)
	if i < 0 || j < i {
		t.Fatalf("README.md has no engine table between %q and %q", beginMarker, endMarker)
	}
	have, want := s[i+len(beginMarker):j], Markdown()
	if have == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(s[:i+len(beginMarker)]+want+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's engine table differs from internal/engine's (go test ./internal/engine -update rewrites it):\nhave:\n%s\nwant:\n%s", have, want)
}
