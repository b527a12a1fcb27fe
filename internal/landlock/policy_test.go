package landlock

import "testing"

func TestPolicyReaches(t *testing.T) {
	p := Policy{
		ReadExec:  []string{"/usr"},
		ReadOnly:  []string{"/home/u/ro"},
		ReadWrite: []string{"/tmp"},
		WriteOnly: []string{"/home/u/wo"},
		List:      []string{"/"},
	}
	for dir, want := range map[string]bool{
		"/usr/lib":       true,
		"/usr":           true,
		"/tmp/x/y":       true,
		"/home/u/ro/a":   true,
		"/home/u/wo":     true,
		"/home/u":        false, // only listing reaches it
		"/home/u/rox":    false, // a sibling with a common prefix
		"/opt/grants":    false,
		"/tmpfoo/grants": false,
	} {
		if got := p.Reaches(dir); got != want {
			t.Errorf("Reaches(%s) = %v, want %v", dir, got, want)
		}
	}
}
