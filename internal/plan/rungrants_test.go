package plan

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/posture"
)

// TestRunGrants: --read and --write are checked like folder grants and
// land in the plan; --write makes a path the folder grants read-only
// read-write.
func TestRunGrants(t *testing.T) {
	f := newFixture(t)
	lib, out := filepath.Join(f.root, "lib"), filepath.Join(f.root, "out")
	for _, d := range []string{lib, out, filepath.Join(f.home, ".ssh"), filepath.Join(f.home, ".local/bin")} {
		os.MkdirAll(d, 0o755)
	}
	fo := f.folder(t, "command = \"/bin/sh\"\nread_paths = [\""+out+"\"]\n", map[string]string{"sandbox/nono.json": `{"network": {"block": true}}`})
	build := func(read, write []string) (*Plan, error) {
		pst, err := posture.Resolve(posture.Input{Agent: fo.ID, Flags: posture.Flags{Backend: posture.Landlock}, Nono: fo.Nono, Host: posture.Host{GOOS: "linux"}})
		if err != nil {
			t.Fatal(err)
		}
		return Build(Input{Folder: fo, Posture: pst, Home: f.h, Workdir: f.work, RunRead: read, RunWrite: write,
			Getenv:   func(k string) string { return map[string]string{"PATH": "/usr/bin:/bin"}[k] },
			LookPath: func(c string) (string, error) { return c, nil }})
	}
	p, err := build([]string{lib, lib}, []string{out})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.RunGrants.Read, []string{lib}) || !slices.Equal(p.RunGrants.Write, []string{out}) {
		t.Errorf("RunGrants = %+v", p.RunGrants)
	}
	if !slices.Contains(p.Filesystem.Read, lib) || !slices.Contains(p.Filesystem.Allow, out) {
		t.Errorf("filesystem = %+v", p.Filesystem)
	}
	for _, c := range []struct {
		read, write []string
		want        string
	}{
		{[]string{"~/.ssh"}, nil, `--read "~/.ssh" lies inside the credential path`},
		{nil, []string{"~/.local/bin"}, "from where the host runs code later"},
		{nil, []string{"~/.local/state/agent-sandbox"}, "where agent-sandbox keeps policy or state"},
		{nil, []string{"/"}, "grants the whole filesystem"},
		{[]string{"rel"}, nil, "relative paths are refused"},
		{[]string{filepath.Join(f.root, "nope")}, nil, "does not exist"},
	} {
		if _, err := build(c.read, c.write); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--read %q --write %q: %v, want %q", c.read, c.write, err, c.want)
		}
	}
}

// TestRepeating: the nono fallback notice is a repeating warning (--quiet
// drops it); an opt-out's loud warning is not.
func TestRepeating(t *testing.T) {
	f := newFixture(t)
	fo := f.folder(t, "command = \"/bin/sh\"\n", map[string]string{"sandbox/nono.json": `{"network": {"block": true}}`})
	pst, err := posture.Resolve(posture.Input{Agent: fo.ID, Flags: posture.Flags{NetworkOpen: true}, Nono: fo.Nono, Host: posture.Host{GOOS: "linux"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(Input{Folder: fo, Posture: pst, Home: f.h, Workdir: f.work,
		Getenv:   func(string) string { return "" },
		LookPath: func(c string) (string, error) { return c, nil }})
	if err != nil {
		t.Fatal(err)
	}
	var fallback, loud bool
	for _, w := range p.Repeating {
		fallback = fallback || strings.Contains(w, "nono not found on PATH")
		loud = loud || strings.Contains(w, "NETWORK OPEN")
	}
	if !fallback || loud {
		t.Errorf("Repeating = %q; want the fallback notice and not the NETWORK OPEN warning", p.Repeating)
	}
}
