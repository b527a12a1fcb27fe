// Package schematest validates generated nono profiles against nono's own
// JSON schema, for tests. The schema is not part of this repository: its
// path comes from AGENT_SANDBOX_NONO_SCHEMA (relative paths are taken from
// the repository root), else ../shared/reference/nono-0.74/ beside it; when
// neither exists the validation is skipped, naming the variable. Callers
// run the validation in a subtest of its own, so that the skip leaves
// every other check running.
package schematest

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Env names the variable holding the schema's path.
const Env = "AGENT_SANDBOX_NONO_SCHEMA"

// Default is where the schema lies beside the project, from the repo root.
const Default = "../shared/reference/nono-0.74/nono-profile.schema.json"

// url is the schema's $id, used to register it with the compiler.
const url = "https://nono.sh/schemas/nono-profile.schema.json"

// RepoRoot is the directory holding go.mod, above the test's directory.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// Path returns the schema's path, or skips the test.
func Path(t testing.TB) string {
	t.Helper()
	p := os.Getenv(Env)
	explicit := p != ""
	if !explicit {
		p = Default
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(RepoRoot(t), p)
	}
	if _, err := os.Stat(p); err != nil {
		if explicit {
			t.Fatalf("%s=%s: %v", Env, os.Getenv(Env), err)
		}
		t.Skipf("JSON-schema validation skipped (only it; the other checks run): nono's profile schema not found at %s: set %s to the path of nono-profile.schema.json (nono 0.74's reference/nono-0.74/, or `nono profile schema` output)", p, Env)
	}
	return p
}

var (
	once      sync.Once
	schema    *jsonschema.Schema
	schemaErr error
)

// Validate checks one profile document against the schema. A schema that
// cannot be compiled, or a document that is not JSON, fails the test.
func Validate(t testing.TB, profile []byte) error {
	t.Helper()
	path := Path(t)
	once.Do(func() {
		f, err := os.Open(path)
		if err != nil {
			schemaErr = err
			return
		}
		defer f.Close()
		doc, err := jsonschema.UnmarshalJSON(f)
		if err != nil {
			schemaErr = err
			return
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource(url, doc); err != nil {
			schemaErr = err
			return
		}
		schema, schemaErr = c.Compile(url)
	})
	if schemaErr != nil {
		t.Fatalf("compiling %s: %v", path, schemaErr)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(profile))
	if err != nil {
		t.Fatalf("profile is not JSON: %v\n%s", err, profile)
	}
	return schema.Validate(inst)
}
