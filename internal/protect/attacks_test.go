package protect

// Attacks on the ledger's readers found by the review of issue 22: each
// failed on the reviewed code (6a42b25).

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBranchRemoteIsCode: branch.<name>.remote is on the harmless
// list, but its value may be a URL or a path (git uses it as the remote
// itself): the user's next plain `git push` then runs receive-pack in a
// bare repository the agent planted, and its pre-receive hook runs on the
// host. A change to it must count.
func TestBranchRemoteIsCode(t *testing.T) {
	e := Entry{Format: FormatGit}
	base := []byte("[core]\n\tbare = false\n")
	planted := []byte("[core]\n\tbare = false\n[branch \"main\"]\n\tremote = /home/u/proj/node_modules/.cache/pkg\n\tmerge = refs/heads/main\n")
	bk, _ := CodeKeys(e, base)
	pk, _ := CodeKeys(e, planted)
	if len(bk) == len(pk) {
		t.Errorf("branch.main.remote set to a local path does not change the code keys (%v -> %v): the audit keeps it", bk, pk)
	}
}

// TestDeepJSONNoCrash: a JSON settings file the agent writes (an
// audited or project entry) of 1 MiB of '[' makes hujson.Parse recurse
// until Go's 1 GB stack limit: a fatal error, not a panic, that ends
// agent-sandbox (no audit after the run, the sandbox killed with it) and
// every later plan that reads the file. Run in a child process.
func TestDeepJSONNoCrash(t *testing.T) {
	if os.Getenv("AGENT_SANDBOX_DEEPJSON_CHILD") == "1" {
		DecodeDoc(FormatJSON, []byte(`{"hooks": `+strings.Repeat("[", 1<<20-16)))
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestDeepJSONNoCrash$")
	cmd.Env = append(os.Environ(), "AGENT_SANDBOX_DEEPJSON_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		first := strings.SplitN(string(out), "\n", 4)
		t.Errorf("decoding 1 MiB of nested JSON ended the process (%v): %s", err, strings.Join(first[:len(first)-1], " | "))
	}
}

// TestDeepTOMLRefused: codex's config.toml (audited) of deeply nested
// inline tables is refused by its depth before the TOML reader sees it
// (BurntSushi/toml grows about quadratically with the depth: hours at
// 1 MiB, in the watch and in every later plan), like deep JSON.
func TestDeepTOMLRefused(t *testing.T) {
	n := 8000
	doc := "a = " + strings.Repeat("{b=", n) + "1" + strings.Repeat("}", n)
	if _, ok := CodeKeys(Entry{Format: FormatTOML, Keys: []string{"notify"}}, []byte(doc)); ok {
		t.Errorf("a TOML document nested %d deep was read", n)
	}
	shallow := "notify = [\"x\"]\na = {b = {c = 1}}\n"
	if keys, ok := CodeKeys(Entry{Format: FormatTOML, Keys: []string{"notify"}}, []byte(shallow)); !ok || len(keys) == 0 {
		t.Errorf("a shallow TOML document was not read: %v %v", keys, ok)
	}
}
