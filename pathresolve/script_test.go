package pathresolve

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// canon is the canonical path of an existing system file.
func canon(t testing.TB, p string) string {
	t.Helper()
	c, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Skipf("%s: %v", p, err)
	}
	return c
}

func TestShebangEnv(t *testing.T) {
	env, sh := canon(t, "/usr/bin/env"), canon(t, "/bin/sh")
	d := tmpDir(t)
	for i, c := range []struct {
		line string
		runs bool // whether Linux's env accepts the line as written
	}{
		{"#!/usr/bin/env sh", true},
		{"#!/usr/bin/env -S sh -e", true},
		{"#! /usr/bin/env  -S  -u HOME FOO=bar sh -e", true},
		{"#!/usr/bin/env -i FOO=bar sh", false},
		{"#!/usr/bin/env --split-string=sh", true},
	} {
		p := filepath.Join(d, "s"+string(rune('0'+i)))
		write(t, p, c.line+"\necho ok\n", 0o755)
		if c.runs {
			if out, err := exec.Command(p).CombinedOutput(); err != nil || string(out) != "ok\n" {
				t.Fatalf("%q does not run: %v %s", c.line, err, out)
			}
		}
		res := resolve(t, p, Options{})
		if res.Path != p {
			t.Errorf("%q: Path = %s, want the script", c.line, res.Path)
		}
		wantFiles(t, res, p, env, sh, systemLoader(t))
		wantNoMissing(t, res)
		if !hasStep(res, "shebang", p, "/usr/bin/env") || !slices.ContainsFunc(res.Chain, func(s Step) bool {
			return s.Kind == "env" && s.From == "sh"
		}) {
			t.Errorf("%q: Chain lacks shebang/env steps: %+v", c.line, res.Chain)
		}
	}

	p := d + "/nope"
	write(t, p, "#!/usr/bin/env no-such-program-xyz\n", 0o755)
	res := resolve(t, p, Options{})
	if len(res.Missing) != 1 || res.Missing[0].Name != "no-such-program-xyz" || !strings.Contains(res.Missing[0].Reason, "not found in PATH") {
		t.Errorf("want the env program missing, got %+v", res.Missing)
	}
}

func TestScriptChains(t *testing.T) {
	sh := canon(t, "/bin/sh")
	d := tmpDir(t)
	inner, outer := d+"/inner", d+"/outer"
	write(t, inner, "#!/bin/sh\necho inner \"$1\"\n", 0o755)
	write(t, outer, "#!"+inner+"\n", 0o755)
	if out, err := exec.Command(outer).Output(); err != nil || string(out) != "inner "+outer+"\n" {
		t.Fatalf("fixture: %s: %v %q", outer, err, out)
	}
	res := resolve(t, outer, Options{})
	if res.Path != outer {
		t.Errorf("Path = %s, want %s", res.Path, outer)
	}
	wantFiles(t, res, outer, inner, sh)
	wantNoMissing(t, res)
	if !hasStep(res, "shebang", outer, inner) || !hasStep(res, "shebang", inner, "/bin/sh") {
		t.Errorf("Chain: %+v", res.Chain)
	}

	// No "#!": a shell runs it with /bin/sh.
	plain := d + "/plain"
	write(t, plain, "echo hi\n", 0o755)
	res = resolve(t, plain, Options{})
	wantFiles(t, res, plain, sh)
	if !hasStep(res, "sh", plain, "/bin/sh") {
		t.Errorf("Chain: %+v", res.Chain)
	}

	// A script that is its own interpreter stops instead of recursing.
	self := d + "/self"
	write(t, self, "#!"+self+"\n", 0o755)
	resolve(t, self, Options{})

	// A missing interpreter is reported, not an error.
	broken := d + "/broken"
	write(t, broken, "#!/no/such/interpreter -x\n", 0o755)
	res = resolve(t, broken, Options{})
	if len(res.Missing) != 1 || res.Missing[0].Name != "/no/such/interpreter" || res.Missing[0].NeededBy != broken {
		t.Errorf("Missing = %+v", res.Missing)
	}
}

// TestMakeWrapper writes a wrapper the way nixpkgs makeWrapper does.
func TestMakeWrapper(t *testing.T) {
	bash := canon(t, "/bin/bash")
	d := tmpDir(t)
	wrapped, wrapper := d+"/bin/.foo-wrapped", d+"/bin/foo"
	copyFile(t, canon(t, "/usr/bin/true"), wrapped)
	write(t, wrapper, `#! /bin/bash -e
PATH=${PATH:+':'$PATH':'}
PATH=${PATH/':'''`+d+`/extra''':'/':'}
PATH='`+d+`/extra'$PATH
PATH=${PATH#':'}
PATH=${PATH%':'}
export PATH
export NIX_FOO=${NIX_FOO-'bar'}
exec -a "$0" "`+d+`/bin/.foo-wrapped"  "$@" 
`, 0o755)
	run(t, wrapper, 0)

	// Reached through a profile symlink, as on NixOS.
	link := d + "/profile/bin/foo"
	symlink(t, "../../bin/foo", link)
	res := resolve(t, link, Options{})
	if res.Path != wrapped {
		t.Errorf("Path = %s, want the wrapped program %s", res.Path, wrapped)
	}
	wantFiles(t, res, link, wrapper, wrapped, bash, systemLib(t, "libc.so.6"))
	wantNoMissing(t, res)
	if !hasStep(res, "wrapper", wrapper, wrapped) {
		t.Errorf("Chain lacks the wrapper step: %+v", res.Chain)
	}

	// buildNpmPackage style: exec an interpreter with a literal script.
	js, npm := d+"/lib/cli.sh", d+"/bin/npmtool"
	write(t, js, "echo cli\n", 0o644)
	write(t, npm, "#!/bin/bash -e\nexec \"/bin/sh\"  "+js+" \"$@\"\n", 0o755)
	res = resolve(t, npm, Options{})
	if res.Path != canon(t, "/bin/sh") {
		t.Errorf("Path = %s, want %s", res.Path, canon(t, "/bin/sh"))
	}
	wantFiles(t, res, npm, js)
	if !hasStep(res, "arg", npm, js) {
		t.Errorf("Chain lacks the arg step: %+v", res.Chain)
	}

	// A wrapper whose target is gone.
	os.Remove(wrapped)
	res = resolve(t, wrapper, Options{})
	if res.Path != wrapper || len(res.Missing) != 1 || res.Missing[0].Name != wrapped {
		t.Errorf("Path %s, Missing %+v", res.Path, res.Missing)
	}
}

// TestBinaryWrapper: a nixpkgs compiled wrapper X with sibling .X-wrapped.
func TestBinaryWrapper(t *testing.T) {
	d := tmpDir(t)
	x, hidden, older := d+"/bin/claude", d+"/bin/.claude-wrapped", d+"/bin/.claude-wrapped_"
	copyFile(t, canon(t, "/usr/bin/true"), x)
	copyFile(t, canon(t, "/usr/bin/false"), hidden)
	copyFile(t, canon(t, "/usr/bin/true"), older)
	res := resolve(t, x, Options{})
	if res.Path != hidden {
		t.Errorf("Path = %s, want %s", res.Path, hidden)
	}
	wantFiles(t, res, x, hidden, older)
	wantNoMissing(t, res)
	if !hasStep(res, "wrapped", x, hidden) {
		t.Errorf("Chain: %+v", res.Chain)
	}
}

func TestSymlinks(t *testing.T) {
	d := tmpDir(t)
	real := d + "/real/prog"
	write(t, real, "#!/bin/sh\n", 0o755)
	// l1 -> (absolute) l2 -> (relative, through a symlinked dir) l3 -> real
	symlink(t, "real", d+"/dirlink")
	symlink(t, "../real/prog", d+"/c/l3")
	symlink(t, "../dirlink/../c/l3", d+"/b/l2")
	symlink(t, d+"/b/l2", d+"/a/l1")
	res := resolve(t, d+"/a/l1", Options{})
	if res.Path != real {
		t.Errorf("Path = %s, want %s", res.Path, real)
	}
	wantFiles(t, res, d+"/a/l1", d+"/b/l2", d+"/c/l3", real)
	for _, s := range []Step{{"symlink", d + "/a/l1", d + "/b/l2"}, {"symlink", d + "/b/l2", d + "/b/../dirlink/../c/l3"}} {
		if !hasStep(res, s.Kind, s.From, s.To) {
			t.Errorf("Chain lacks %+v: %+v", s, res.Chain)
		}
	}

	symlink(t, "loop2", d+"/loop1")
	symlink(t, "loop1", d+"/loop2")
	if _, err := Resolve(d+"/loop1", Options{}); err == nil || !strings.Contains(err.Error(), "loop") {
		t.Errorf("symlink loop: err = %v, want a loop error", err)
	}

	for i := range 41 {
		symlink(t, "h"+string(rune('A'+i+1)), d+"/hops/h"+string(rune('A'+i)))
	}
	write(t, d+"/hops/h"+string(rune('A'+41)), "#!/bin/sh\n", 0o755)
	if _, err := Resolve(d+"/hops/hA", Options{}); err == nil || !strings.Contains(err.Error(), "more than 40") {
		t.Errorf("41 hops: err = %v", err)
	}
	resolve(t, d+"/hops/hB", Options{}) // 40 hops are fine
}

func TestPathLookup(t *testing.T) {
	d := tmpDir(t)
	write(t, d+"/1/tool", "#!/bin/sh\n", 0o644) // not executable
	os.MkdirAll(d+"/2/tool", 0o755)             // a directory
	write(t, d+"/3/tool", "#!/bin/sh\n", 0o755)
	path := "relative:" + d + "/1:" + d + "/2::" + d + "/3"
	res := resolve(t, "tool", Options{PATH: path})
	if res.Path != d+"/3/tool" || !hasStep(res, "path", "tool", d+"/3/tool") {
		t.Errorf("Path %s, Chain %+v", res.Path, res.Chain)
	}

	_, err := Resolve("no-such-tool", Options{PATH: d + "/1:" + d + "/2"})
	want := `pathresolve: "no-such-tool" not found in PATH (` + d + "/1:" + d + "/2)"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %v, want prefix %q", err, want)
	}
	for _, p := range []string{d + "/1/tool", d + "/2/tool", d + "/missing"} {
		if _, err := Resolve(p, Options{}); err == nil {
			t.Errorf("Resolve(%s) succeeded", p)
		} else {
			t.Log(err)
		}
	}

	// A relative path is taken from the current directory.
	t.Chdir(d)
	res = resolve(t, "./3/tool", Options{})
	if res.Path != d+"/3/tool" {
		t.Errorf("Path = %s", res.Path)
	}
}

func TestParseShebang(t *testing.T) {
	for _, c := range []struct {
		in   string
		want shebang
		ok   bool
	}{
		{"#!/bin/sh\n", shebang{"/bin/sh", ""}, true},
		{"#! /nix/store/x-bash/bin/bash -e\nexec", shebang{"/nix/store/x-bash/bin/bash", "-e"}, true},
		{"#!/usr/bin/env -S a b  \n", shebang{"/usr/bin/env", "-S a b"}, true},
		{"#!/bin/sh\t-x -y\n", shebang{"/bin/sh", "-x -y"}, true},
		{"#!", shebang{}, true},
		{"echo", shebang{}, false},
	} {
		got, ok := parseShebang([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("parseShebang(%q) = %+v %v, want %+v %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestEnvProgram(t *testing.T) {
	for in, want := range map[string]string{
		"node":                           "node",
		"-S node --foo":                  "node",
		"-Snode --foo":                   "node",
		"-i PATH=/x python3":             "python3",
		"- sh":                           "sh",
		"-u HOME -C /tmp sh":             "sh",
		"-uHOME -iv sh":                  "sh",
		"--unset HOME --chdir=/ bash":    "bash",
		"--split-string=ruby -w":         "ruby",
		"-- A=b /opt/x":                  "/opt/x",
		`-S "node" -e`:                   "node",
		"-S --ignore-environment X=1 zx": "zx",
		"":                               "",
		"-i A=1":                         "",
	} {
		got, ok := envProgram(in)
		if got != want || ok != (want != "") {
			t.Errorf("envProgram(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
}

func TestExecTargets(t *testing.T) {
	for _, c := range []struct {
		src  string
		want []execCall
	}{
		{`exec -a "$0" "/nix/store/a-x/bin/.x-wrapped"  "$@"`, []execCall{{prog: "/nix/store/a-x/bin/.x-wrapped"}}},
		{`exec "/nix/store/a-x/bin/.x-wrapped"  "$@"`, []execCall{{prog: "/nix/store/a-x/bin/.x-wrapped"}}},
		{`exec /n/node /n/lib/cli.js --flag "$@"`, []execCall{{prog: "/n/node", args: []string{"/n/lib/cli.js"}}}},
		{`exec -cl -a name '/x/y' "$@"`, []execCall{{prog: "/x/y"}}},
		{`exec -- /x/y`, []execCall{{prog: "/x/y"}}},
		{"if true; then exec /a; fi\nexec /b", []execCall{{prog: "/a"}, {prog: "/b"}}},
		{`exec "$@"`, nil},
		{`exec 2>&1`, nil},
		{`exec "$HOME/x"`, nil},
		{`exec relative/x`, nil},
		{`exec /x/*`, nil},
		{`exec /x\ y`, nil},
		{`echo exec /x`, nil},
		{`exec (`, nil}, // does not parse
	} {
		if got := execTargets([]byte(c.src)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("execTargets(%q) = %+v, want %+v", c.src, got, c.want)
		}
	}
}

func TestCoveringDirs(t *testing.T) {
	got := coveringDirs([]string{"/a/x", "/a-b/y", "/a/c/z", "/usr/lib/q", "/usr/lib/r", "/usr/lib64/s"})
	want := []string{"/a", "/a-b", "/usr/lib", "/usr/lib64"}
	if !slices.Equal(got, want) {
		t.Errorf("coveringDirs = %q, want %q", got, want)
	}
	if got := coveringDirs([]string{"/init", "/a/b"}); !slices.Equal(got, []string{"/"}) {
		t.Errorf("coveringDirs with a file in / = %q", got)
	}
}
