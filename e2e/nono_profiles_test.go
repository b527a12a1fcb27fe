package e2e

// Every nono profile agent-sandbox generates loads in the real nono (issue
// 25 item 3): the built-in folders' and the rendered Nix profile templates'
// (nix/profiles), each validated against the schema that nono prints
// (`nono profile schema`), loaded by `nono profile validate` and by nono's
// own dry run of the exact launch agent-sandbox would make; and doctor
// checks the installed nono for real (version, schema, where it lies).
// nix/nono-schema.nix does the same for the rendered templates in a Nix
// build; the unit tests keep checking every generated profile against
// nono 0.74's schema (reference/nono-0.74).

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// nonoVersionOf returns what `nono --version` prints, as "0.78.0".
func nonoVersionOf(t *testing.T, nono string) string {
	t.Helper()
	cmd := exec.Command(nono, "--version")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "NONO_NO_UPDATE_CHECK=1"}
	out, err := cmd.CombinedOutput()
	m := regexp.MustCompile(`\b(\d+\.\d+\.\d+)\b`).FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("%s --version: %v: %s", nono, err, out)
	}
	return string(m[1])
}

// nonoEnviron is an environment for running nono itself on a profile.
func nonoEnviron(home string) []string {
	return []string{"HOME=" + home, "PATH=" + agentPath(), "NONO_NO_UPDATE_CHECK=1", "LANG=C.UTF-8"}
}

// ecmaEscape is a \uXXXX escape in a JSON-schema pattern.
var ecmaEscape = regexp.MustCompile(`\\u([0-9a-fA-F]{4})`)

// nonoSchema compiles the schema the nono under test prints.
func nonoSchema(t *testing.T, nono string) *jsonschema.Schema {
	t.Helper()
	cmd := exec.Command(nono, "profile", "schema")
	cmd.Env = nonoEnviron(t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s profile schema: %v", nono, err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("%s profile schema printed no JSON: %v", nono, err)
	}
	const url = "https://nono.sh/schemas/nono-profile.schema.json"
	c := jsonschema.NewCompiler()
	// nono's schema writes patterns with ECMA-262 escapes (`^[^\u0000]+$`,
	// nono 0.78), which Go's regexp spells \x{0000}.
	c.UseRegexpEngine(func(s string) (jsonschema.Regexp, error) {
		return regexp.Compile(ecmaEscape.ReplaceAllString(s, `\x{$1}`))
	})
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("compiling the schema of %s: %v", nono, err)
	}
	return s
}

// TestNonoProfilesLoad: the profile of every built-in agent folder and of
// every rendered template in nix/profiles, as `--dry-run --json
// --sandbox-backend nono` prints it, is valid against the real nono's
// schema, passes `nono profile validate`, and nono's own dry run of the
// launch (`nono -s run --profile P --workdir W --allow-cwd --dry-run`)
// accepts it.
func TestNonoProfilesLoad(t *testing.T) {
	nono := skipWithoutNono(t)
	bin := buildAgentSandbox(t)
	schema := nonoSchema(t, nono)
	t.Logf("nono under test: %s (nono %s)", nono, nonoVersionOf(t, nono))

	templates, err := filepath.Glob(filepath.Join("..", "nix", "profiles", "*", "agent.toml"))
	if err != nil || len(templates) == 0 {
		t.Fatalf("no templates in ../nix/profiles (run the test from the e2e directory of a checkout): %v", err)
	}
	type folder struct{ name, arg string }
	var folders []folder
	for _, a := range []string{"claude", "pi", "codex", "gemini", "opencode", "shell"} {
		folders = append(folders, folder{"builtin-" + a, a})
	}
	// Render each template as .ci/nix-check does: every @placeholder@
	// becomes a program of this host (the Nix build uses store paths).
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	placeholder := regexp.MustCompile(`@[a-zA-Z_][0-9A-Za-z_'-]*@`)
	for _, tmpl := range templates {
		src := filepath.Dir(tmpl)
		dst := filepath.Join(t.TempDir(), filepath.Base(src))
		err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(src, p)
			if fi.IsDir() {
				return os.MkdirAll(filepath.Join(dst, rel), 0o755)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dst, rel), placeholder.ReplaceAll(b, []byte(sh)), 0o644)
		})
		if err != nil {
			t.Fatalf("rendering %s: %v", src, err)
		}
		folders = append(folders, folder{"nix-profiles-" + filepath.Base(src), dst})
	}

	// Control: the checks refuse a profile with a mistyped key.
	t.Run("control: a mistyped key is refused", func(t *testing.T) {
		bad := []byte(`{"meta": {"name": "x"}, "filesystem": {"alow": ["/tmp"]}}`)
		p := filepath.Join(t.TempDir(), "bad.json")
		if err := os.WriteFile(p, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(bad))
		if schema.Validate(inst) == nil {
			t.Error("the schema accepted filesystem.alow")
		}
		validate := exec.Command(nono, "profile", "validate", p)
		validate.Env = nonoEnviron(t.TempDir())
		if out, err := validate.CombinedOutput(); err == nil {
			t.Errorf("nono profile validate accepted filesystem.alow: %s", out)
		}
	})

	for _, f := range folders {
		t.Run(f.name, func(t *testing.T) {
			root, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			home, work := filepath.Join(root, "home"), filepath.Join(root, "work")
			for _, d := range []string{home, work} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(bin, "--dry-run", "--json", "--sandbox-backend", "nono", f.arg)
			cmd.Dir = work
			cmd.Env = withCover([]string{"HOME=" + home, "PATH=" + filepath.Dir(nono) + string(os.PathListSeparator) + agentBinDir() + string(os.PathListSeparator) + agentPath(), "SHELL=/bin/sh", "LANG=C.UTF-8"})
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			cmd.Run() // a refusal (exit 125) still prints the plan and its profile
			var plan struct {
				Profile     json.RawMessage `json:"profile"`
				ProfilePath string          `json:"profile_path"`
				Refusal     *string         `json:"refusal"`
			}
			if err := json.Unmarshal(out.Bytes(), &plan); err != nil || len(plan.Profile) == 0 || string(plan.Profile) == "null" {
				t.Fatalf("--dry-run --json printed no profile (%v):\n%s\n%s", err, out.String(), errb.String())
			}
			p := filepath.Join(root, "nono-profile.json")
			if err := os.WriteFile(p, plan.Profile, 0o600); err != nil {
				t.Fatal(err)
			}
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(plan.Profile))
			if err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(inst); err != nil {
				t.Errorf("the profile is not valid against `nono profile schema` of %s: %v\n%s", nono, err, plan.Profile)
			}
			validate := exec.Command(nono, "profile", "validate", p)
			validate.Env = nonoEnviron(home)
			if b, err := validate.CombinedOutput(); err != nil {
				t.Errorf("nono profile validate %s: %v\n%s\n%s", p, err, b, plan.Profile)
			}
			dry := exec.Command(nono, "-s", "run", "--profile", p, "--workdir", work, "--allow-cwd", "--dry-run", "--", "/bin/true")
			dry.Dir = work
			dry.Env = nonoEnviron(home)
			if b, err := dry.CombinedOutput(); err != nil {
				t.Errorf("nono's dry run of the launch refused the profile: %v\n%s\n%s", err, b, plan.Profile)
			}
		})
	}
}

// TestNonoDoctor: `agent-sandbox doctor` checks the real nono: its version
// (the one nix/nono.nix pins, in a checkout), its profile schema, and that
// it lies outside every path a sandbox can write.
func TestNonoDoctor(t *testing.T) {
	nono := skipWithoutNono(t)
	bin := buildAgentSandbox(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, work := filepath.Join(root, "home"), filepath.Join(root, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	v := nonoVersionOf(t, nono)
	cmd := exec.Command(bin, "doctor", "shell")
	cmd.Dir = work
	cmd.Env = withCover([]string{"HOME=" + home, "PATH=" + filepath.Dir(nono) + string(os.PathListSeparator) + agentPath(), "SHELL=/bin/sh", "LANG=C.UTF-8"})
	b, _ := cmd.CombinedOutput()
	out := string(b)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^ok +nono: ` + regexp.QuoteMeta(nono) + ` is nono ` + regexp.QuoteMeta(v) + ` `),
		regexp.MustCompile(`(?m)^ok +nono schema: .*declares every key agent-sandbox writes`),
		regexp.MustCompile(`(?m)^ok +launcher nono: .*outside every path`),
	} {
		if !want.MatchString(out) {
			t.Errorf("doctor's output has no line matching %s:\n%s", want, out)
		}
	}
	if pinned := nonoPinned(); !strings.HasPrefix(pinned, "<") && v != pinned {
		t.Errorf("the nono under test is %s, but nix/nono.nix pins %s (the locked nixpkgs' nono): build that one (cargo install --locked nono-cli@%s --root /opt/nono-%s; .ci/run does) and set %s", v, pinned, pinned, pinned, nonoEnv)
	}
}
