package sbx_test

// A recording stand-in for the sbx CLI. The real sbx needs KVM and a Docker
// login, so the executor is tested against this test binary run under the
// name "sbx": it appends its argv to a log and answers per a scenario file.
// It is never mistaken for sbx: it only acts when SBX_STANDIN_SCENARIO is
// set, which only these tests do.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const standinEnv = "SBX_STANDIN_SCENARIO"

func TestMain(m *testing.M) {
	if path := os.Getenv(standinEnv); path != "" {
		os.Exit(standinMain(path, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// scenario is what the stand-in answers.
type scenario struct {
	Log   string  `json:"log"`
	Rules []reply `json:"rules"`
}

// reply answers the first call whose arguments start with Args ("*"
// matches any one argument). Unmatched calls exit 0 silently.
type reply struct {
	Args   []string `json:"args"`
	Exit   int      `json:"exit"`
	Stdout string   `json:"stdout"`
	Stderr string   `json:"stderr"`
}

// call is one logged invocation of the stand-in.
type call struct {
	Args      []string `json:"args"`
	StdoutTTY bool     `json:"stdout_tty"`
}

func standinMain(path string, args []string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sbx stand-in:", err)
		return 98
	}
	var sc scenario
	if err := json.Unmarshal(b, &sc); err != nil {
		fmt.Fprintln(os.Stderr, "sbx stand-in:", err)
		return 98
	}
	st, _ := os.Stdout.Stat()
	line, _ := json.Marshal(call{Args: args, StdoutTTY: st != nil && st.Mode()&os.ModeCharDevice != 0})
	f, err := os.OpenFile(sc.Log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sbx stand-in:", err)
		return 98
	}
	fmt.Fprintf(f, "%s\n", line)
	f.Close()
	for _, r := range sc.Rules {
		if matches(r.Args, args) {
			fmt.Fprint(os.Stdout, r.Stdout)
			fmt.Fprint(os.Stderr, r.Stderr)
			return r.Exit
		}
	}
	return 0
}

func matches(pattern, args []string) bool {
	if len(pattern) > len(args) {
		return false
	}
	for i, p := range pattern {
		if p != "*" && p != args[i] {
			return false
		}
	}
	return true
}

// standin installs the stand-in as <tmp>/sbx with the given replies and
// returns its path and a function reading its log.
func standin(t *testing.T, rules ...reply) (string, func() []call) {
	t.Helper()
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sbx")
	if err := os.Symlink(self, path); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "calls.jsonl")
	b, _ := json.Marshal(scenario{Log: log, Rules: rules})
	sc := filepath.Join(dir, "scenario.json")
	if err := os.WriteFile(sc, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(standinEnv, sc)
	return path, func() []call {
		f, err := os.Open(log)
		if err != nil {
			return nil
		}
		defer f.Close()
		var calls []call
		s := bufio.NewScanner(f)
		for s.Scan() {
			var c call
			if err := json.Unmarshal(s.Bytes(), &c); err != nil {
				t.Fatal(err)
			}
			calls = append(calls, c)
		}
		return calls
	}
}

// find returns the logged calls whose arguments start with prefix.
func find(calls []call, prefix ...string) []call {
	var out []call
	for _, c := range calls {
		if matches(prefix, c.Args) {
			out = append(out, c)
		}
	}
	return out
}

func argsOf(calls []call) string {
	var b strings.Builder
	for _, c := range calls {
		b.WriteString("sbx " + strings.Join(c.Args, " ") + "\n")
	}
	return b.String()
}
