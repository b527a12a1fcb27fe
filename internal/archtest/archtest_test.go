package archtest

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// module is the module path every package's import path starts with.
const module = "github.com/agent-sandbox/agent-sandbox"

// engines are the backend implementations: only internal/backends and
// the engines themselves import them.
var engines = []string{"internal/backend/nono", "internal/backend/sbx", "internal/backend/landlock"}

// rule is one import rule of docs/ARCHITECTURE.md: no package that from
// matches imports a package that to matches (both relative to the module;
// a pattern matches the package and every package below it).
type rule struct {
	name    string
	from    func(pkg string) bool
	to      func(imp string) bool
	because string
	// same, when set, lets a package import its own engine's packages
	// (an engine and its helpers below it).
	same bool
}

// under says whether pkg is prefix or a package below it.
func under(pkg, prefix string) bool {
	return pkg == prefix || strings.HasPrefix(pkg, prefix+"/")
}

func anyOf(prefixes ...string) func(string) bool {
	return func(p string) bool {
		for _, pre := range prefixes {
			if under(p, pre) {
				return true
			}
		}
		return false
	}
}

func not(f func(string) bool) func(string) bool { return func(p string) bool { return !f(p) } }

// rules are the import rules docs/ARCHITECTURE.md states ("Import rules").
var rules = []rule{
	{
		name: "only internal/backends knows every backend",
		from: not(anyOf("internal/backends")),
		to:   anyOf(engines...),
		same: true,
		because: "a backend is reached through the internal/backend interfaces, built by backends.New; " +
			"what else a command needs of one engine is a function in internal/backends",
	},
	{
		name:    "the view does not import launch",
		from:    anyOf("internal/view"),
		to:      anyOf("internal/launch"),
		because: "the view is the namespace engine below the lifecycle, not a part of it",
	},
	{
		name:    "the kernel library and safefs are leaves",
		from:    anyOf("internal/landlock", "internal/safefs"),
		to:      func(string) bool { return true },
		because: "internal/landlock and internal/safefs import no package of the module",
	},
	{
		name:    "the decision is pure",
		from:    anyOf("internal/cli", "internal/posture", "internal/spec", "internal/sandboxfile"),
		to:      anyOf("internal/launch", "internal/view", "internal/guard", "internal/workscan", "internal/backend", "internal/backends", "internal/plan", "internal/scope", "internal/broker"),
		because: "parsing, the posture and the spec start nothing and know no engine",
	},
	{
		name:    "the backend interface knows no engine and no plan",
		from:    anyOf("internal/backend"),
		to:      anyOf("internal/plan", "internal/backends", "cmd", "doctor"),
		because: "internal/backend is the seam below the plan",
	},
}

// imports maps each package of the module (relative path) to the packages
// of the module its non-test Go files import, whatever their build tags.
func imports(t *testing.T, root string) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		if out[pkg] == nil {
			out[pkg] = map[string]bool{}
		}
		for _, spec := range f.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return err
			}
			if imp == module {
				out[pkg]["."] = true
			} else if r, ok := strings.CutPrefix(imp, module+"/"); ok {
				out[pkg][r] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameEngine says whether pkg and imp belong to the same engine.
func sameEngine(pkg, imp string) bool {
	for _, e := range engines {
		if under(pkg, e) && under(imp, e) {
			return true
		}
	}
	return false
}

// violations lists "pkg imports imp" for each import that breaks r.
func violations(r rule, graph map[string]map[string]bool) []string {
	var out []string
	for pkg, imps := range graph {
		if !r.from(pkg) {
			continue
		}
		for imp := range imps {
			if r.to(imp) && !(r.same && sameEngine(pkg, imp)) {
				out = append(out, pkg+" imports "+imp)
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestImportRules checks the import rules docs/ARCHITECTURE.md states
// over every non-test Go file of the module (all build tags).
func TestImportRules(t *testing.T) {
	graph := imports(t, filepath.Join("..", ".."))
	for _, must := range []string{"cmd/agent-sandbox", "doctor", "internal/plan", "internal/view", "internal/backends", "internal/backend/nono"} {
		if graph[must] == nil {
			t.Fatalf("package %s not found: the walk did not read the module", must)
		}
	}
	for _, r := range rules {
		for _, v := range violations(r, graph) {
			t.Errorf("%s: %s (%s)", r.name, v, r.because)
		}
	}
}

// TestRulesCatch checks that each rule catches the import it forbids.
func TestRulesCatch(t *testing.T) {
	for _, tc := range []struct {
		rule     int
		pkg, imp string
	}{
		{0, "cmd/agent-sandbox", "internal/backend/sbx"},
		{0, "doctor", "internal/backend/nono"},
		{0, "internal/plan", "internal/backend/landlock"},
		{0, "internal/backend", "internal/backend/nono/schematest"},
		{0, "internal/backend/nono", "internal/backend/landlock"},
		{0, "internal/backend/sbx/x", "internal/backend/nono"},
		{1, "internal/view", "internal/launch"},
		{2, "internal/safefs", "internal/diag"},
		{3, "internal/posture", "internal/backend"},
		{4, "internal/backend", "internal/plan"},
	} {
		got := violations(rules[tc.rule], map[string]map[string]bool{tc.pkg: {tc.imp: true}})
		if len(got) != 1 {
			t.Errorf("rule %q does not catch %s importing %s", rules[tc.rule].name, tc.pkg, tc.imp)
		}
	}
	// And allows what the architecture allows.
	for _, tc := range []struct {
		rule     int
		pkg, imp string
	}{
		{0, "internal/backends", "internal/backend/sbx"},
		{0, "internal/backend/nono/schematest", "internal/backend/nono"},
		{0, "cmd/agent-sandbox", "internal/backends"},
		{0, "cmd/agent-sandbox", "internal/backend"},
	} {
		if got := violations(rules[tc.rule], map[string]map[string]bool{tc.pkg: {tc.imp: true}}); len(got) != 0 {
			t.Errorf("rule %q refuses %s importing %s", rules[tc.rule].name, tc.pkg, tc.imp)
		}
	}
}
