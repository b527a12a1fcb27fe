package gitconfig

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// tricky are config files git reads in surprising ways. want lists the
// entries as `git config --list` prints them ("name=value", or "name" for
// a key without "="); errLine is the line of git's "bad config line N"
// (0: git reads the file), and then want lists what git prints before it
// dies. TestDifferential checks every case against the real git too.
var tricky = []struct {
	name    string
	in      string
	want    []string
	errLine int
}{
	// Comments.
	{"comments", "# c\n; c\n[a] # c\n\t; c\nk = v # c\nl = v ; c\nm = v#c\nn=v;c\n", []string{"a.k=v", "a.l=v", "a.m=v", "a.n=v"}, 0},
	{"comment in quotes", "[a]\nk = \"v # not ; a comment\"\n", []string{"a.k=v # not ; a comment"}, 0},
	{"comment ends quote-less continuation", "[a]\nk = v # c \\\nl = w\n", []string{"a.k=v", "a.l=w"}, 0},
	{"comment after key without value", "[a]\nk # c\n", nil, 2},
	{"comment after header", "[a]#c\nk\n", []string{"a.k"}, 0},

	// Section headers.
	{"plain header", "[core]\nhooksPath = /h\n", []string{"core.hookspath=/h"}, 0},
	{"header case", "[CoRe]\nHooksPath = /h\n", []string{"core.hookspath=/h"}, 0},
	{"key on header line", "[core] hooksPath = /h\n", []string{"core.hookspath=/h"}, 0},
	{"key right after header", "[core]hooksPath=/h", []string{"core.hookspath=/h"}, 0},
	{"subsection", "[Remote \"Origin\"]\nURL = u\n", []string{"remote.Origin.url=u"}, 0},
	{"subsection escapes", "[a \"b\\\"c\\\\d\\e\"]\nk=1\n", []string{"a.b\"c\\de.k=1"}, 0},
	{"subsection with dots and blanks", "[includeIf \"gitdir:~/my work/.x\"]\npath = p\n", []string{"includeif.gitdir:~/my work/.x.path=p"}, 0},
	{"subsection after tabs", "[a \t \"b\"]k=1", []string{"a.b.k=1"}, 0},
	{"empty subsection", "[a \"\"]\nk=1\n", []string{"a..k=1"}, 0},
	{"deprecated subsection", "[Core.HooksDir]\nk=1\n", []string{"core.hooksdir.k=1"}, 0},
	{"deprecated deeper", "[a.B.c]\nk=1\n", []string{"a.b.c.k=1"}, 0},
	{"deprecated and quoted", "[a.b \"C\"]\nk=1\n", []string{"a.b.C.k=1"}, 0},
	{"dot only", "[.]\nk=1\n", []string{"..k=1"}, 0},
	{"no section name", "[ \"x\"]\nk=1\n", []string{".x.k=1"}, 0},
	{"empty header", "[]\nk=1\n", nil, 1},
	{"blank before section name", "[ a]\nk=1\n", nil, 1},
	{"blank before bracket", "[a ]\nk=1\n", nil, 1},
	{"blank after subsection", "[a \"b\" ]\nk=1\n", nil, 1},
	{"text after subsection", "[a \"b\"c]\nk=1\n", nil, 1},
	{"bad section char", "[a_b]\nk=1\n", nil, 1},
	{"second bracket", "[a]]\nk=1\n", nil, 1},
	{"unterminated header at EOF", "[a", nil, 2},
	{"unterminated header at EOL", "[a\nk=1\n", nil, 1},
	{"unterminated subsection", "[a \"b\nk=1\n", nil, 1},
	{"unterminated subsection escape", "[a \"b\\\nk=1\n", nil, 1},
	{"subsection without bracket", "[a \"b\"\nk=1\n", nil, 2},
	{"subsection without bracket at EOF", "[a \"b\"", nil, 2},
	{"newline in subsection via CRLF", "[a \"b\r\n\"]\n", nil, 1},
	{"CR in subsection", "[a \"b\rc\"]\nk=1\n", []string{"a.b\rc.k=1"}, 0},
	{"before any section", "k = v\n[a]\nk = w\n", []string{"k=v", "a.k=w"}, 0},

	// Keys.
	{"digits and dash", "[a]\nk-1x = v\n", []string{"a.k-1x=v"}, 0},
	{"key starts with digit", "[a]\n1k = v\n", nil, 2},
	{"key starts with dash", "[a]\n-k = v\n", nil, 2},
	{"underscore in key", "[a]\nk_1 = v\n", nil, 2},
	{"dot in key", "[a]\nk.l = v\n", nil, 2},
	{"blank inside key", "[a]\nk l = v\n", nil, 2},
	{"tab around =", "[a]\nk\t=\tv\n", []string{"a.k=v"}, 0},
	{"CR before =", "[a]\nk \r = v\n", nil, 2},
	{"vertical tab is not blank", "[a]\n\vk = v\n", nil, 2},
	{"form feed in value", "[a]\nk = a\fb\n", []string{"a.k=a\fb"}, 0},
	{"non-ASCII key", "[a]\nkä = v\n", nil, 2},

	// Values.
	{"empty value", "[a]\nk =\nl=\nm = \"\"\n", []string{"a.k=", "a.l=", "a.m="}, 0},
	{"no equals", "[a]\nk\nl   \n", []string{"a.k", "a.l"}, 0},
	{"no equals at EOF", "[a]\nk", []string{"a.k"}, 0},
	{"partial quoting", "[a]\nk = a\"b c\"d\n", []string{"a.k=ab cd"}, 0},
	{"quotes and blanks", "[a]\nk = \"a\"  \"b\"\nl = \"\" x\nm = \" \" x\n", []string{"a.k=a  b", "a.l=x", "a.m=  x"}, 0},
	{"inner blanks become spaces", "[a]\nk = a\t\tb  c\n", []string{"a.k=a  b  c"}, 0},
	{"trailing blanks dropped", "[a]\nk = a  \t\nl = \"a  \"  \n", []string{"a.k=a", "a.l=a  "}, 0},
	{"escapes", "[a]\nk = a\\nb\\tc\\bd\\\\e\\\"f\n", []string{"a.k=a\nb\tc\bd\\e\"f"}, 0},
	{"invalid escape", "[a]\nk = \\q\n", nil, 2},
	{"invalid escape in quotes", "[a]\nk = \"\\q\"\n", nil, 2},
	{"escape r is invalid", "[a]\nk = a\\rb\n", nil, 2},
	{"escape 0 is invalid", "[a]\nk = a\\0\n", nil, 2},
	{"escaped blank is invalid", "[a]\nk = a\\ b\n", nil, 2},
	{"escaped comment char is invalid", "[a]\nk = a\\#b\n", nil, 2},
	{"escaped CR", "[a]\nk = a\\\rb\n", nil, 2},
	{"continuation", "[a]\nk = a\\\nb\nl = w\n", []string{"a.k=ab", "a.l=w"}, 0},
	{"continuation in quotes", "[a]\nk = \"a \\\n  b\"\n", []string{"a.k=a   b"}, 0},
	{"continuation keeps space", "[a]\nk = a \\\n", []string{"a.k=a "}, 0},
	{"continuation at EOF", "[a]\nk = a\\", []string{"a.k=a"}, 0},
	{"continuation CRLF", "[a]\r\nk = a\\\r\nb\r\n", []string{"a.k=ab"}, 0},
	{"missing closing quote", "[a]\nk = \"v\nl = w\n", nil, 2},
	{"missing closing quote at EOF", "[a]\nk = \"v", nil, 2},
	{"missing quote after continuation", "[a]\nk = \"v\\\nw\nl = 1\n", nil, 3},
	{"CRLF", "[a]\r\nk = v\r\nl = \"v\r\"\r\n", []string{"a.k=v", "a.l=v\r"}, 0},
	{"lone CR", "[a]\rk = a\rb\r\r\n", []string{"a.k=a b"}, 0},
	{"NUL in value", "[a]\nk = v\x00w\n", []string{"a.k=v"}, 0},
	{"NUL in subsection", "[core \"hooksPath\x00x\"]\nx = /p\n", []string{"core.hooksPath=/p"}, 0},
	{"NUL in subsection lower", "[core \"hookspath\x00\"]\nx = /p\n", []string{"core.hookspath=/p"}, 0},
	{"NUL in comment", "# \x00\n[a]k=1 ;\x00\n", []string{"a.k=1"}, 0},
	{"NUL at line start", "[a]\n\x00k=1\n", nil, 2},
	{"NUL in key", "[a]\nk\x00=1\n", nil, 2},
	{"no newline at end", "[a]\nk = v", []string{"a.k=v"}, 0},
	{"UTF-8 value", "[a \"é\"]\nk = ünï \"cödé\"\n", []string{"a.é.k=ünï cödé"}, 0},
	{"repeated", "[a]\nk=1\n[b]\nk=2\n[a]\nk=3\n", []string{"a.k=1", "b.k=2", "a.k=3"}, 0},
	{"entries before an error", "[a]\nk=1\n[b]]\n", []string{"a.k=1"}, 3},

	// Byte order mark.
	{"BOM", "\xef\xbb\xbf[a]k=1", []string{"a.k=1"}, 0},
	{"BOM only", "\xef\xbb\xbf", nil, 0},
	{"partial BOM", "\xef\xbb[a]k=1", nil, 1},
	{"partial BOM at EOF", "\xef", nil, 2},
	{"partial BOM then newline", "\xef\xbb\nk", nil, 2},
	{"BOM later", "[a]\n\xef\xbb\xbfk=1\n", nil, 2},

	{"empty file", "", nil, 0},
	{"blank lines", "\n\r\n \t\n", nil, 0},
}

func render(entries []Entry) []string {
	var out []string
	for _, e := range entries {
		if e.NoValue {
			out = append(out, e.Name())
		} else {
			out = append(out, e.Name()+"="+e.Value)
		}
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestParseTricky(t *testing.T) {
	for _, tc := range tricky {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.in))
			if !equal(render(got), tc.want) {
				t.Errorf("Parse(%q) = %q, want %q", tc.in, render(got), tc.want)
			}
			var se *SyntaxError
			switch {
			case tc.errLine == 0 && err != nil:
				t.Errorf("Parse(%q): %v", tc.in, err)
			case tc.errLine != 0 && !errors.As(err, &se):
				t.Errorf("Parse(%q) = %v, want a *SyntaxError at line %d", tc.in, err, tc.errLine)
			case tc.errLine != 0 && se.Line != tc.errLine:
				t.Errorf("Parse(%q): %v, want line %d", tc.in, err, tc.errLine)
			}
		})
	}
}

func TestLongLines(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	in := "[a \"" + long + "\"]\n" + long + " = \"" + long + "\" " + long + "\n"
	got, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Subsection != long || got[0].Key != long || got[0].Value != long+" "+long || got[0].Line != 2 {
		t.Errorf("a 1 MiB subsection, key and value are not read whole")
	}
}

func TestEntryFields(t *testing.T) {
	in := "k0 = 0\n" +
		"[Core]\n" +
		"\tHooksPath = \\\n  /h\n" +
		"[includeIf \"gitdir:~/Work/\"]path=~/w\n" +
		"[Url.X]\nk\n" +
		"[core \"hookspath\x00\"]\nx = /p\n" +
		"[a \"b\"]\n"
	got, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{Key: "k0", Value: "0", Line: 1},
		{Section: "core", Key: "hookspath", Value: "/h", Line: 3},
		{Section: "includeif", Subsection: "gitdir:~/Work/", HasSub: true, Key: "path", Value: "~/w", Line: 5},
		{Section: "url", Subsection: "x", HasSub: true, Key: "k", NoValue: true, Line: 7},
		{Section: "core", Key: "hookspath", Value: "/p", Line: 9},
	}
	if len(got) != len(want) {
		t.Fatalf("Parse = %q, want %d entries", render(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		g.name = ""
		if g != w {
			t.Errorf("entry %d = %+v, want %+v", i, g, w)
		}
		// The fields give back the name git sees.
		if g.Name() != got[i].Name() {
			t.Errorf("entry %d: Name() from the fields %q, git's %q", i, g.Name(), got[i].Name())
		}
	}
}

func TestLookup(t *testing.T) {
	in := "[Core]\nHooksPath = /a\n[core]\nhookspath = /b\n" +
		"[remote \"Origin\"]\nurl = u\n[remote.Other]\nurl = o\n" +
		"[core \"hooksPath\x00\"]\nx = /c\n" +
		"[x]\nflag\n"
	entries, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"core.hooksPath", []string{"/a", "/b"}},
		{"CORE.HOOKSPATH", []string{"/a", "/b"}},
		{"remote.Origin.URL", []string{"u"}},
		{"remote.origin.url", nil},
		{"remote.other.url", []string{"o"}},
		{"remote.Other.url", nil},
		// The cut name is "core.hooksPath": git's own lookups
		// (lower-cased keys) do not see it, and neither does Get.
		{"core.hooksPath.x", nil},
		{"x.flag", []string{""}},
		{"hookspath", nil},
	} {
		if got := Get(entries, tc.name); !equal(got, tc.want) {
			t.Errorf("Get(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	if e, ok := Last(entries, "core.hooksPath"); !ok || e.Value != "/b" || e.Line != 4 {
		t.Errorf("Last(core.hooksPath) = %+v, %v; want /b from line 4", e, ok)
	}
	if e, ok := Last(entries, "x.flag"); !ok || !e.NoValue {
		t.Errorf("Last(x.flag) = %+v, %v; want a key without value", e, ok)
	}
	if _, ok := Last(entries, "core.fsmonitor"); ok {
		t.Errorf("Last(core.fsmonitor) found an entry")
	}
	if e := entries[4]; e.Name() != "core.hooksPath" || e.Is("core.hooksPath") || e.Is("core.hookspath") {
		t.Errorf("the NUL-cut name %q matches a lookup, or is not what git sees", e.Name())
	}
	if !entries[0].Is("Core.HooksPath") || entries[0].Is("core.hooksPath.x") || entries[0].Is("hookspath") {
		t.Errorf("%q.Is does not compare as git", entries[0].Name())
	}
}

func TestNameFromFields(t *testing.T) {
	for _, tc := range []struct {
		e    Entry
		want string
	}{
		{Entry{Section: "core", Key: "hookspath"}, "core.hookspath"},
		{Entry{Section: "a", Subsection: "B", HasSub: true, Key: "k"}, "a.B.k"},
		{Entry{Section: "a", HasSub: true, Key: "k"}, "a..k"},
		{Entry{Key: "k"}, "k"},
	} {
		if got := tc.e.Name(); got != tc.want {
			t.Errorf("%+v.Name() = %q, want %q", tc.e, got, tc.want)
		}
	}
}

func TestSyntaxErrorMessage(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"[a]\nk = \"v\n", `line 2: unterminated quoted value`},
		{"[a]\nk = \\q\n", `line 2: invalid escape in a value: '\' followed by "q"`},
		{"[a\n", `line 1: unterminated section header`},
		{"[a]\nk x\n", `line 2: variable name "a.k" followed by "x"`},
		{"[a]\n" + strings.Repeat("k", 100) + "!", `line 2: variable name "a.` + strings.Repeat("k", 58) + `"... followed by "!"`},
		{"[a]\n1\n", `line 2: "1" cannot start a variable name`},
		{"[a \"b\"", `line 2: section header: the end of the file after the subsection's closing '"'`},
		{"\xef\xbb", `line 2: incomplete UTF-8 byte order mark`},
	} {
		_, err := Parse([]byte(tc.in))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error starting %q", tc.in, err, tc.want)
		}
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(good, []byte("[core]\n\thooksPath = .husky\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("[core]\n\thooksPath = \".husky\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	entries, err := ReadFile(good, 1<<20)
	if err != nil || !equal(Get(entries, "core.hooksPath"), []string{".husky"}) {
		t.Errorf("ReadFile(good) = %q, %v", render(entries), err)
	}
	if _, err := ReadFile(good, 10); err == nil || !strings.Contains(err.Error(), "larger than 10 bytes") {
		t.Errorf("ReadFile over the limit: %v", err)
	}
	if _, err := ReadFile(bad, 1<<20); err == nil || !strings.HasPrefix(err.Error(), bad+":2: unterminated quoted value") {
		t.Errorf("ReadFile(bad) = %v, want the file and line", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), 1<<20); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile(missing) = %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(fifo, 1<<20); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("ReadFile(fifo) = %v, want a refusal (and no wait for a writer)", err)
	}
	if _, err := ReadFile(dir, 1<<20); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("ReadFile(dir) = %v, want a refusal", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	if entries, err := ReadFile(link, 1<<20); err != nil || len(entries) != 1 {
		t.Errorf("ReadFile(symlink to good) = %q, %v; git follows the link", render(entries), err)
	}
}

// config1MiB is a realistic config of about 1 MiB: sections with
// subsections, quoted values, comments and a continuation line.
func config1MiB() []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < 1<<20; i++ {
		b.WriteString("# remote number ")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString("\n[remote \"origin\"]\n\turl = https://example.com/some/repository.git ; comment\n")
		b.WriteString("\tfetch = +refs/heads/*:refs/remotes/origin/*\n")
		b.WriteString("[core]\n\thooksPath = \"/some path/with \\\"quotes\\\"\" \\\n\t\tcontinued\n\tbare = false\n")
		b.WriteString("[branch \"main\"]\r\n\tremote = origin\r\n\tmerge\r\n")
	}
	return b.Bytes()
}

func BenchmarkParse1MiB(b *testing.B) {
	data := config1MiB()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}
