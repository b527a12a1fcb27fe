package e2e

import (
	"path/filepath"
	"testing"
	"time"
)

// TestGuardConcurrentRuns (issue 38, item 4): a run of the view and a run
// of another engine (nono, the weaker sandbox) in the same workdir at the
// same time. The view makes placeholders of the missing protected paths
// and removes them when it ends; the other run must take neither their
// appearance nor their removal for a change (it reported 7-14 protected
// files "changed during the run (removed)" and quarantined empty
// placeholders the user never had). Both orders: the view first and
// ending first, and the other run first and ending first.
func TestGuardConcurrentRuns(t *testing.T) {
	for name, engine := range quiesceEngines(t) {
		t.Run(name, func(t *testing.T) {
			prefix, flags, env := engine(t)
			for _, viewFirst := range []bool{true, false} {
				r := newBrokerRun(t)
				gitRepoCommitted(t, r.work)
				wait := func(tag string) string {
					return `: > ` + tag + `-ready; while [ ! -e ` + tag + `-go ]; do sleep 0.01; done`
				}
				startView := func() *liveRun {
					l := r.start(90*time.Second, nil, "--sandbox-backend", "landlock", r.folder(), "-c", wait("v"))
					if !waitFile(filepath.Join(r.work, "v-ready"), 30*time.Second) {
						l.cancel()
						_, out := l.wait()
						t.Fatalf("view first %v: the view's run did not start:\n%s", viewFirst, out)
					}
					return l
				}
				startOther := func() *liveRun {
					l := r.startIn(90*time.Second, prefix, env, append(append([]string(nil), flags...), r.folder(), "-c", wait("o"))...)
					waitPath(t, filepath.Join(r.work, "o-ready"), 30*time.Second)
					return l
				}
				var v, o *liveRun
				if viewFirst {
					v = startView()
					o = startOther()
				} else {
					o = startOther()
					v = startView()
				}
				if !exists(filepath.Join(r.work, ".envrc")) {
					t.Fatalf("control: the view made no placeholder (.envrc) while both ran, so the row proves nothing")
				}
				var vout, oout string
				var vcode, ocode int
				if viewFirst {
					write(t, filepath.Join(r.work, "v-go"), "")
					vcode, vout = v.wait()
					write(t, filepath.Join(r.work, "o-go"), "")
					ocode, oout = o.wait()
				} else {
					write(t, filepath.Join(r.work, "o-go"), "")
					ocode, oout = o.wait()
					write(t, filepath.Join(r.work, "v-go"), "")
					vcode, vout = v.wait()
				}
				if vcode != 0 || ocode != 0 {
					t.Fatalf("view first %v: exits %d, %d:\n%s\n%s", viewFirst, vcode, ocode, vout, oout)
				}
				for who, out := range map[string]string{"the view's run": vout, "the " + name + " run": oout} {
					for _, bad := range []string{"changed during the run", "quarantine", "moved aside", "restored"} {
						if l := lastLine(out, bad); l != "" {
							t.Errorf("view first %v: %s took the other run's placeholders for changes: %s", viewFirst, who, l)
						}
					}
				}
				if exists(filepath.Join(r.work, ".envrc")) {
					t.Errorf("view first %v: a placeholder (.envrc) is left after both runs", viewFirst)
				}
			}
		})
	}
}
