package landlock

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// TestScopeOutcome: a bound the folder set refuses the run when no scope
// can be had; the default bound warns when a user manager refused it and
// is silent when there is none (--dry-run says so).
func TestScopeOutcome(t *testing.T) {
	set := spec.Spec{AgentDir: "/f/claude", MemoryMax: 2 << 30}
	def := spec.Spec{AgentDir: "/f/claude"}
	noManager := &errNoManager{errors.New("no systemd user manager runs for uid 1000")}
	refused := errors.New("your systemd user manager did not create the scope")
	for _, c := range []struct {
		name             string
		s                spec.Spec
		err              error
		refusal, warning string
	}{
		{"attached", set, nil, "", ""},
		{"set, no manager", set, noManager, `/f/claude/agent.toml: memory_max = "2G" cannot be applied: no systemd user manager runs for uid 1000; remove the key`, ""},
		{"set, manager refused", set, refused, `/f/claude/agent.toml: memory_max = "2G" cannot be applied: your systemd user manager did not create`, ""},
		{"default, no manager", def, noManager, "", ""},
		{"default, manager refused", def, refused, "", "the run has no memory bound: your systemd user manager did not create the scope"},
	} {
		refusal, warning := scopeOutcome(c.s, c.err)
		got := ""
		if refusal != nil {
			got = refusal.Error()
		}
		if (c.refusal == "") != (got == "") || !strings.Contains(got, c.refusal) {
			t.Errorf("%s: refusal %q, want %q", c.name, got, c.refusal)
		}
		if (c.warning == "") != (warning == "") || !strings.Contains(warning, c.warning) {
			t.Errorf("%s: warning %q, want %q", c.name, warning, c.warning)
		}
	}
}

func TestMemoryBound(t *testing.T) {
	if got := MemoryMax(spec.Spec{MemoryMax: spec.NoMemoryLimit}); got != 0 {
		t.Errorf(`memory_max = "none": bound %d`, got)
	}
	if got := MemoryMax(spec.Spec{MemoryMax: 3 << 30}); got != 3<<30 {
		t.Errorf("memory_max = 3G: bound %d", got)
	}
	if m := memTotal(); m > 0 && MemoryMax(spec.Spec{}) != m/4*3 {
		t.Errorf("default bound %d, want three quarters of %d", MemoryMax(spec.Spec{}), m)
	}
	for _, s := range []spec.Spec{{}, {MemoryMax: spec.NoMemoryLimit}} {
		if r := memoryRefusal(s); r != "" {
			t.Errorf("memory_max %d refused: %q", s.MemoryMax, r)
		}
	}
	if c := limitComment(spec.Spec{MemoryMax: spec.NoMemoryLimit}); !strings.HasSuffix(c, `; no memory bound (memory_max = "none")`) {
		t.Errorf("none: %q", c)
	}
}

// The weaker sandbox's trampoline waits for the go-ahead on the
// descriptor holdEnv names, and stops when the parent closes it without.
func TestAwaitScope(t *testing.T) {
	env := []string{"A=1", holdEnv + "=bad", "B=2"}
	if out, ok := awaitScope(env); ok || strings.Join(out, " ") != "A=1 B=2" {
		t.Errorf("a malformed descriptor: %q, %v", out, ok)
	}
	if out, ok := awaitScope([]string{"A=1"}); !ok || len(out) != 1 {
		t.Errorf("no hold: %q, %v", out, ok)
	}
	for _, goAhead := range []bool{true, false} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		fd, err := unix.Dup(int(r.Fd()))
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		if goAhead {
			w.Write([]byte{1})
		}
		w.Close()
		out, ok := awaitScope([]string{holdEnv + "=" + strconv.Itoa(fd), "C=3"})
		if ok != goAhead || strings.Join(out, " ") != "C=3" {
			t.Errorf("go-ahead %v: %q, %v", goAhead, out, ok)
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
			t.Errorf("the descriptor was left open for the agent")
		}
	}
}
