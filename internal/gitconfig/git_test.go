package gitconfig

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The differential tests run the real `git config --list` on a file and
// compare: git fails, and then Parse fails at the line git names with the
// entries git printed first; or git succeeds, and Parse gives the same
// names and values.

// gitResult is what `git config --file F --list -z --no-includes` says.
type gitResult struct {
	entries []string // as render prints them
	errLine int      // git's "bad config line N", 0 when git succeeded
}

var (
	gitOnce sync.Once
	gitPath string
	gitEnv  []string
)

// findGit returns the git binary and an environment in which only the
// file given with --file is read; "" when git is not installed.
func findGit() string {
	gitOnce.Do(func() {
		p, err := exec.LookPath("git")
		if err != nil {
			return
		}
		gitPath = p
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "LC_") && !strings.HasPrefix(kv, "LANG") {
				gitEnv = append(gitEnv, kv)
			}
		}
		gitEnv = append(gitEnv, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "LC_ALL=C")
	})
	return gitPath
}

func needGit(t testing.TB) {
	if findGit() == "" {
		t.Skip("git is not installed: the comparison with git's own parser needs the `git` command")
	}
}

var badLine = regexp.MustCompile(`^fatal: bad config line ([0-9]+) in file `)

// runGit has git read data from a file in dir.
func runGit(dir string, data []byte) (gitResult, error) {
	f := filepath.Join(dir, "config")
	if err := os.WriteFile(f, data, 0o644); err != nil {
		return gitResult{}, err
	}
	cmd := exec.Command(gitPath, "config", "--file", f, "--list", "-z", "--no-includes")
	cmd.Dir = dir
	// A new slice: workers run git at the same time.
	cmd.Env = slices.Concat(gitEnv, []string{"GIT_CEILING_DIRECTORIES=" + dir})
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var r gitResult
	out := stdout.String()
	for out != "" {
		rec, rest, ok := strings.Cut(out, "\x00")
		if !ok {
			return r, fmt.Errorf("git config --list -z: output %q does not end with NUL", stdout.String())
		}
		out = rest
		if name, value, ok := strings.Cut(rec, "\n"); ok {
			rec = name + "=" + value
		}
		r.entries = append(r.entries, rec)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		m := badLine.FindStringSubmatch(stderr.String())
		if m == nil {
			return r, fmt.Errorf("git config failed otherwise than on a bad line: %v: %s", err, stderr.String())
		}
		r.errLine, _ = strconv.Atoi(m[1])
	default:
		return r, fmt.Errorf("running git: %v", err)
	}
	return r, nil
}

// compare returns how Parse differs from git on data ("" when it does
// not) and whether git read the file.
func compare(dir string, data []byte) (diff string, ok bool) {
	g, err := runGit(dir, data)
	if err != nil {
		return err.Error(), false
	}
	d := differ(g, data)
	return d, g.errLine == 0
}

func differ(g gitResult, data []byte) string {
	entries, err := Parse(data)
	got := render(entries)
	var se *SyntaxError
	switch {
	case g.errLine == 0 && err != nil:
		return fmt.Sprintf("git reads the file, Parse fails: %v", err)
	case g.errLine != 0 && err == nil:
		return fmt.Sprintf("git fails at line %d, Parse reads the file", g.errLine)
	case err != nil && !errors.As(err, &se):
		return fmt.Sprintf("Parse fails with %T: %v", err, err)
	case err != nil && se.Line != g.errLine:
		return fmt.Sprintf("git fails at line %d, Parse: %v", g.errLine, err)
	case !equal(got, g.entries):
		return fmt.Sprintf("entries: Parse %q, git %q", got, g.entries)
	}
	return ""
}

func TestDifferentialTricky(t *testing.T) {
	needGit(t)
	dir := t.TempDir()
	for _, tc := range tricky {
		g, err := runGit(dir, []byte(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		if d := differ(g, []byte(tc.in)); d != "" {
			t.Errorf("%s: %q: %s", tc.name, tc.in, d)
		}
		// The table's own expectations are git's.
		if g.errLine != tc.errLine || !equal(g.entries, tc.want) {
			t.Errorf("%s: %q: git says %q (bad line %d), the table %q (bad line %d)",
				tc.name, tc.in, g.entries, g.errLine, tc.want, tc.errLine)
		}
	}
}

func TestDifferentialLong(t *testing.T) {
	needGit(t)
	long := strings.Repeat("y", 300_000)
	for _, in := range []string{
		"[a \"" + long + "\"]\n" + long + " = \"" + long + "\" \\\n " + long + " ; c\n",
		"[a]\nk = " + strings.Repeat("\\\n", 50_000) + "v\n",
		"[a]\nk = \"" + long + "\n",
		string(config1MiB()),
	} {
		if d, _ := compare(t.TempDir(), []byte(in)); d != "" {
			if len(d) > 300 {
				d = d[:300] + "..."
			}
			t.Errorf("a long file (%d bytes): %s", len(in), d)
		}
	}
}

// pieces are the fragments the generator puts together: the characters
// that matter to the grammar, and some whole constructs.
var pieces = []string{
	"[", "]", "\"", "\\", "\n", "\n", "\n", "\r", "\r\n", " ", " ", "\t", "=", "=", "#", ";", ".",
	"a", "B", "z", "1", "-", "_", "\x00", "\x0b", "\x0c", "\xef\xbb\xbf", "\xef", "é", "\xff",
	"\\n", "\\t", "\\b", "\\\\", "\\\"", "\\\n", "\\q", "\\r", "\\0", "\\ ", "\\\r\n",
	"[core]", "[a \"b\"]", "[a \"B c\"]", "[a.B]", "[includeIf \"gitdir:~/x/\"]", "[a \"\\\"\"]",
	"hooksPath", "path", "k", "K-1", " = ", "= \"", "\" ", "# c\n", "; c\n", "\n\tk = v\n",
}

// generate returns a random file: mostly well-formed lines with damage,
// or a soup of pieces.
func generate(r *rand.Rand) []byte {
	var b strings.Builder
	if r.IntN(10) == 0 {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	if r.IntN(4) == 0 {
		for n := r.IntN(40); n > 0; n-- {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return []byte(b.String())
	}
	for n := 1 + r.IntN(6); n > 0; n-- {
		switch r.IntN(4) {
		case 0:
			b.WriteString("[" + name(r))
			if r.IntN(2) == 0 {
				b.WriteString(" \"" + value(r) + "\"")
			}
			b.WriteString("]")
		default:
			b.WriteString(pick(r, "", " ", "\t") + name(r) + pick(r, "", " ", "\t"))
			if r.IntN(5) > 0 {
				b.WriteString("=" + pick(r, "", " ", "\t"))
				for m := r.IntN(5); m > 0; m-- {
					b.WriteString(value(r) + pick(r, "", " ", "\t"))
				}
			}
		}
		b.WriteString(pick(r, "\n", "\n", "\r\n", "", " # c\n"))
	}
	return []byte(b.String())
}

// name is a section, subsection or variable name, and value a word of a
// value; sometimes with a piece in it.
func name(r *rand.Rand) string {
	return damage(r, pick(r, "a", "core", "hooksPath", "K9-x", "v", "Path", "includeIf"))
}

func value(r *rand.Rand) string {
	return damage(r, pick(r, "a", "/x/y", "~/h", "\"q v\"", "\"\"", "", "a\\tb", "\"a;b#c\""))
}

func damage(r *rand.Rand, w string) string {
	if r.IntN(6) == 0 {
		i := r.IntN(len(w) + 1)
		w = w[:i] + pieces[r.IntN(len(pieces))] + w[i:]
	}
	return w
}

func pick(r *rand.Rand, s ...string) string {
	return s[r.IntN(len(s))]
}

func TestDifferentialGenerated(t *testing.T) {
	needGit(t)
	n := 3000
	if testing.Short() {
		n = 300
	}
	r := rand.New(rand.NewPCG(1, 2))
	inputs := make([][]byte, n)
	for i := range inputs {
		inputs[i] = generate(r)
	}
	var (
		mu          sync.Mutex
		wg          sync.WaitGroup
		fails, read int
	)
	const workers = 4
	for w := 0; w < workers; w++ {
		dir := t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(inputs); i += workers {
				d, ok := compare(dir, inputs[i])
				mu.Lock()
				if ok {
					read++
				}
				if d != "" {
					if fails++; fails <= 10 {
						t.Errorf("generated file %d %q: %s", i, inputs[i], d)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if fails > 0 {
		t.Errorf("%d of %d generated files differ", fails, n)
	}
	// Both verdicts must be well represented for the comparison to mean
	// something.
	if read < n/5 || read > n*4/5 {
		t.Errorf("git reads %d of %d generated files: the generator is off balance", read, n)
	}
	t.Logf("%d generated files, %d read by git, %d refused", n, read, n-read)
}

// FuzzParse checks Parse against the real git: the same verdict, line and
// entries. Without git it checks only that Parse does not panic and gives
// the same result twice.
func FuzzParse(f *testing.F) {
	for _, tc := range tricky {
		f.Add([]byte(tc.in))
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 50; i++ {
		f.Add(generate(r))
	}
	haveGit := findGit() != ""
	f.Fuzz(func(t *testing.T, data []byte) {
		e1, err1 := Parse(data)
		e2, err2 := Parse(data)
		if !equal(render(e1), render(e2)) || fmt.Sprint(err1) != fmt.Sprint(err2) {
			t.Fatalf("Parse(%q) is not deterministic", data)
		}
		for _, e := range e1 {
			if e.Line < 1 || e.Name() == "" || (e.NoValue && e.Value != "") {
				t.Fatalf("Parse(%q): bad entry %+v", data, e)
			}
		}
		if !haveGit {
			return
		}
		if d, _ := compare(t.TempDir(), data); d != "" {
			t.Fatalf("%q: %s", data, d)
		}
	})
}
