package scope

import (
	"reflect"
	"strings"
	"testing"
)

func TestUnitName(t *testing.T) {
	for _, c := range []struct {
		agent string
		pid   int
		want  string
	}{
		{"claude", 42, "agent-sandbox-claude-42.scope"},
		{"my_agent.v2", 7, "agent-sandbox-my_agent.v2-7.scope"},
		{"a/b c\\x", 1, "agent-sandbox-a_b_c_x-1.scope"},
		{"", 3, "agent-sandbox-agent-3.scope"},
		{"é", 3, "agent-sandbox-_-3.scope"},
		{strings.Repeat("x", 100), 9, "agent-sandbox-" + strings.Repeat("x", 64) + "-9.scope"},
	} {
		if got := UnitName(c.agent, c.pid); got != c.want {
			t.Errorf("UnitName(%q, %d) = %q, want %q", c.agent, c.pid, got, c.want)
		}
	}
}

func TestCallArgs(t *testing.T) {
	head := []string{"--quiet", "--timeout=10", "call", "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
		"org.freedesktop.systemd1.Manager", "StartTransientUnit", "ssa(sv)a(sa(sv))", "u.scope", "fail"}
	got := CallArgs("u.scope", "agent-sandbox: x in /w", 99, Limits{MemoryMax: 1 << 30, TasksMax: 8192}, true)
	want := append(append([]string{}, head...), "6",
		"Description", "s", "agent-sandbox: x in /w",
		"PIDs", "au", "1", "99",
		"CollectMode", "s", "inactive-or-failed",
		"OOMPolicy", "s", "continue",
		"MemoryMax", "t", "1073741824",
		"TasksMax", "t", "8192",
		"0")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CallArgs =\n%q\nwant\n%q", got, want)
	}
	got = CallArgs("u.scope", "d", 5, Limits{}, false)
	want = append(append([]string{}, head...), "3", "Description", "s", "d", "PIDs", "au", "1", "5", "CollectMode", "s", "inactive-or-failed", "0")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CallArgs without limits =\n%q\nwant\n%q", got, want)
	}
}

func TestUnifiedPath(t *testing.T) {
	for in, want := range map[string]string{
		"0::/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope\n": "/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope",
		"12:pids:/\n1:name=systemd:/\n0::/\n":                                  "/",
		"4:memory:/a\n":                                                        "",
		"":                                                                     "",
	} {
		if got := unifiedPath(in); got != want {
			t.Errorf("unifiedPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// systemd before 253 has no OOMPolicy for scopes: a transient property a
// unit type does not take is refused with "Cannot set property NAME, or
// unknown property." (src/core/dbus-unit.c), and Attach asks again
// without it.
func TestOOMPolicyUnknown(t *testing.T) {
	if !oomPolicyUnknown("Call failed: Cannot set property OOMPolicy, or unknown property.") {
		t.Error("the refusal of OOMPolicy was not recognised")
	}
	if oomPolicyUnknown("Call failed: Unit agent-sandbox-x-1.scope already exists.") {
		t.Error("another refusal was taken for OOMPolicy's")
	}
}
