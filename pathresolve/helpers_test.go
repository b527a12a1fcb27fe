package pathresolve

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// testPATH keeps the tests independent of the caller's PATH.
const testPATH = "/usr/local/bin:/usr/bin:/bin"

// tmpDir is a canonical temporary directory, so paths compare with Files.
func tmpDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func needGCC(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not found in PATH; the ELF fixture tests compile programs with gcc")
	}
}

// gcc compiles the C source src (written to a temporary file) with args.
func gcc(t testing.TB, src string, args ...string) {
	t.Helper()
	dir := t.TempDir()
	c := filepath.Join(dir, "src.c")
	write(t, c, src, 0o644)
	out, err := exec.Command("gcc", append([]string{c}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func write(t testing.TB, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	write(t, to, string(data), 0o755)
}

func symlink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// systemLoader is the canonical path of the ELF loader /bin/sh uses.
func systemLoader(t testing.TB) string {
	t.Helper()
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Skip("no /bin/sh")
	}
	info, err := readELF(sh)
	if err != nil || info.interp == "" {
		t.Skip("/bin/sh is not a dynamically linked ELF program")
	}
	ld, err := filepath.EvalSymlinks(info.interp)
	if err != nil {
		t.Fatal(err)
	}
	return ld
}

// systemLib is the canonical path of library name as the system resolves it
// for /bin/sh.
func systemLib(t testing.TB, name string) string {
	t.Helper()
	res, err := Resolve("/bin/sh", Options{PATH: testPATH})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Files {
		if filepath.Base(f) == name {
			return f
		}
	}
	t.Skipf("/bin/sh does not load %s", name)
	return ""
}

func resolve(t testing.TB, command string, opts Options) *Result {
	t.Helper()
	if opts.PATH == "" {
		opts.PATH = testPATH
	}
	res, err := Resolve(command, opts)
	if err != nil {
		t.Fatalf("Resolve(%q): %v", command, err)
	}
	checkInvariants(t, res)
	return res
}

// checkInvariants checks what every Result promises.
func checkInvariants(t testing.TB, res *Result) {
	t.Helper()
	if !slices.IsSorted(res.Files) || len(slices.Compact(slices.Clone(res.Files))) != len(res.Files) {
		t.Errorf("Files not sorted and unique: %q", res.Files)
	}
	if !slices.Contains(res.Files, res.Path) {
		t.Errorf("Path %s not in Files %q", res.Path, res.Files)
	}
	for _, f := range res.Files {
		if !filepath.IsAbs(f) || filepath.Clean(f) != f {
			t.Errorf("file %q is not absolute and clean", f)
		}
		if d, err := filepath.EvalSymlinks(filepath.Dir(f)); err != nil || d != filepath.Dir(f) {
			t.Errorf("file %q has a non-canonical parent (%q, %v)", f, d, err)
		}
		if !slices.ContainsFunc(res.Dirs, func(d string) bool { return within(f, d) }) {
			t.Errorf("file %s is covered by no dir in %q", f, res.Dirs)
		}
	}
	for _, d := range res.Dirs {
		for _, e := range res.Dirs {
			if d != e && within(d, e) {
				t.Errorf("Dirs not minimal: %s is inside %s", d, e)
			}
		}
		if !slices.ContainsFunc(res.Files, func(f string) bool { return filepath.Dir(f) == d }) {
			t.Errorf("dir %s is the parent of no file", d)
		}
	}
}

func hasStep(res *Result, kind, from, to string) bool {
	return slices.Contains(res.Chain, Step{Kind: kind, From: from, To: to})
}

func wantFiles(t testing.TB, res *Result, files ...string) {
	t.Helper()
	for _, f := range files {
		if !slices.Contains(res.Files, f) {
			t.Errorf("Files lacks %s; got %q", f, res.Files)
		}
	}
}

func wantNoMissing(t testing.TB, res *Result) {
	t.Helper()
	if len(res.Missing) > 0 {
		t.Errorf("unexpected Missing: %+v", res.Missing)
	}
}

func run(t testing.TB, prog string, wantExit int) {
	t.Helper()
	err := exec.Command(prog).Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s: %v", prog, err)
	}
	if code != wantExit {
		t.Fatalf("%s exited %d, want %d (the fixture is broken)", prog, code, wantExit)
	}
}

func runQuiet(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v\n%s", name, err, out)
	}
	return nil
}
