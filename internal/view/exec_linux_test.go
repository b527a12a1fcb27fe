//go:build linux

package view

import "testing"

// TestExecReportBeforeAnswer: init may report a short command's end before
// the parent has read the answer naming its pid; Exec must still get the
// status, and the process must not stay counted as running (a session
// that never ends).
func TestExecReportBeforeAnswer(t *testing.T) {
	p := &Process{}
	p.execReport(7, 3<<8) // exit status 3, reported first
	ch := p.execChan(7)
	select {
	case code := <-ch:
		if code != 3 {
			t.Fatalf("exit code %d, want 3", code)
		}
	default:
		t.Fatal("the early report was lost: Exec would wait forever")
	}
	if n := p.Execs(); n != 0 {
		t.Fatalf("Execs() = %d after the command ended, want 0", n)
	}
	// The usual order: the answer first, then the report.
	ch = p.execChan(8)
	if n := p.Execs(); n != 1 {
		t.Fatalf("Execs() = %d while the command runs, want 1", n)
	}
	p.execReport(8, 0)
	if code := <-ch; code != 0 || p.Execs() != 0 {
		t.Fatalf("code %d, Execs() %d; want 0 and 0", code, p.Execs())
	}
}

// TestExecStartReport: a command init started for a caller of its own
// exec socket is counted from its start report until its end report, and
// nothing of it is kept after.
func TestExecStartReport(t *testing.T) {
	p := &Process{}
	p.execStartReport(9)
	if n := p.Execs(); n != 1 {
		t.Fatalf("Execs() = %d after the start report, want 1", n)
	}
	p.execReport(9, 0)
	if n := p.Execs(); n != 0 || len(p.execs) != 0 || len(p.early) != 0 {
		t.Fatalf("after the end report: Execs() = %d, %d channels, %d early; want none", n, len(p.execs), len(p.early))
	}
}
