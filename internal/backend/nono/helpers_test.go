package nono

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/backend/nono/schematest"
)

// schemaEnv names the variable holding the path of nono's profile JSON
// schema (relative paths are taken from the repository root).
const schemaEnv = schematest.Env

// defaultSchema is where the schema lies beside the project (../shared).
const defaultSchema = schematest.Default

// TestMain lets the test binary stand in for nono: run under the name
// "nono" it is recordingNono, never the real thing. The stand-in exits
// with syscall.Exit, skipping Go's exit hooks: under `go test -cover` they
// would try to write coverage data and, with GOCOVERDIR stripped from
// nono's environment by Execute, print a warning the tests read as nono
// output.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "nono" {
		syscall.Exit(recordingNono(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// repoRoot is the directory holding go.mod.
func repoRoot(t *testing.T) string { return schematest.RepoRoot(t) }

// schemaPath is the schema named by AGENT_SANDBOX_NONO_SCHEMA, or the
// default beside the project; the test is skipped when neither exists.
func schemaPath(t *testing.T) string { return schematest.Path(t) }

// referenceFile is one of nono's data files (policy.json,
// network-policy.json): beside the schema, else in the default reference
// directory; the test is skipped when it is not reachable.
func referenceFile(t *testing.T, name string) []byte {
	t.Helper()
	candidates := []string{filepath.Join(repoRoot(t), filepath.Dir(defaultSchema), name)}
	if p := os.Getenv(schemaEnv); p != "" {
		if !filepath.IsAbs(p) {
			p = filepath.Join(repoRoot(t), p)
		}
		candidates = append([]string{filepath.Join(filepath.Dir(p), name)}, candidates...)
	}
	for _, c := range candidates {
		if b, err := os.ReadFile(c); err == nil {
			return b
		}
	}
	t.Skipf("nono's %s not found (looked at %s): set %s to a nono-profile.schema.json that has nono's data files beside it", name, strings.Join(candidates, ", "), schemaEnv)
	return nil
}

// validateSchema validates one profile against nono's JSON schema.
// It runs as its own subtest "schema", so that a missing schema skips
// only the validation, never the caller's golden comparison.
func validateSchema(t *testing.T, profile []byte) {
	t.Helper()
	t.Run("schema", func(t *testing.T) {
		if err := checkSchema(t, profile); err != nil {
			t.Errorf("generated profile does not validate against %s:\n%v\n%s", schemaPath(t), err, profile)
		}
	})
}

// checkSchema validates one document against nono's JSON schema.
func checkSchema(t *testing.T, profile []byte) error { return schematest.Validate(t, profile) }

// validateWithNono runs `nono profile validate` on the profile when a nono
// binary is on PATH (under nix flake check) and the profile is for this
// platform; otherwise it does nothing.
func validateWithNono(t *testing.T, profile []byte, goos string) {
	t.Helper()
	bin, err := exec.LookPath("nono")
	if err != nil {
		return
	}
	if goos != runtime.GOOS {
		t.Logf("not running nono profile validate: the profile is for %s", goos)
		return
	}
	p := filepath.Join(t.TempDir(), "profile.json")
	if err := os.WriteFile(p, profile, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "profile", "validate", p)
	cmd.Env = append(os.Environ(), "NONO_NO_UPDATE_CHECK=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("%s profile validate %s: %v\n%s\n%s", bin, p, err, out, profile)
	}
}

// tree is a throwaway filesystem for one test, rooted at a canonical path.
type tree struct {
	t    *testing.T
	root string
}

func newTree(t *testing.T) *tree {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &tree{t: t, root: root}
}

// path is rel under the root, created as nothing.
func (tr *tree) path(rel string) string { return filepath.Join(tr.root, rel) }

// dir creates rel as a directory.
func (tr *tree) dir(rel string) string {
	p := tr.path(rel)
	if err := os.MkdirAll(p, 0o755); err != nil {
		tr.t.Fatal(err)
	}
	return p
}

// file creates rel as a regular file.
func (tr *tree) file(rel string, mode os.FileMode) string {
	p := tr.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tr.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
		tr.t.Fatal(err)
	}
	return p
}

// symlink creates rel as a symlink to target.
func (tr *tree) symlink(rel, target string) string {
	p := tr.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tr.t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		tr.t.Fatal(err)
	}
	return p
}

// anon replaces the tree's root by $ROOT in s.
func (tr *tree) anon(s string) string { return strings.ReplaceAll(s, tr.root, "$ROOT") }

// mustJSON renders v indented.
func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
