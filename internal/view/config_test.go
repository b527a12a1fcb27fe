package view

import (
	"reflect"
	"testing"
)

func TestCoveredBinds(t *testing.T) {
	ms := ordered([]Mount{
		{Kind: ReadOnly, Path: "/etc"},
		{Kind: ReadOnly, Path: "/etc/hosts"},                   // covered
		{Kind: ReadOnly, Path: "/etc/ssl/certs"},               // covered (nearest is /etc)
		{Kind: ReadWrite, Path: "/etc/rw"},                     // another kind
		{Kind: ReadOnly, Path: "/etc/rw/ro"},                   // under a read-write bind
		{Kind: ReadWrite, Path: "/etc/rw/rw"},                  // covered
		{Kind: ReadWrite, Path: "/etc/rw/pin", Pin: true},      // pinned: a mount point of its own
		{Kind: ReadOnly, Path: "/etc/other", Source: "/srv/x"}, // another host path
		{Kind: ReadOnly, Path: "/etc/other/y"},                 // under a bind of another path
		{Kind: Tmpfs, Path: "/etc/tmp"},                        //
		{Kind: ReadOnly, Path: "/etc/tmp/z"},                   // under a tmpfs
		{Kind: ReadOnly, Path: "/opt/missing"},                 // its source did not open
		{Kind: ReadOnly, Path: "/opt/missing/a"},               // under a bind that is not there
		{Kind: Mask, Path: "/etc/secret"},                      //
		{Kind: ReadOnly, Path: "/etc/secret/x"},                // under a mask
		{Kind: ReadOnly, Path: "/usr", Source: "/usr"},         // Source equal to Path
		{Kind: ReadOnly, Path: "/usr/lib", Source: "/nix/lib"}, // another host path
		{Kind: ReadOnly, Path: "/usr/share"},                   // covered
		{Kind: ReadOnly, Path: "/etc/hosts"},                   // the same path again: kept
		{Kind: Terminal, Path: "/etc/pts/0"},                   // not a bind of a tree
	})
	opened := make([]bool, len(ms))
	for i, m := range ms {
		opened[i] = m.Path != "/opt/missing" && (m.Kind == ReadOnly || m.Kind == ReadWrite || m.Kind == Terminal)
	}
	got := map[string]int{}
	for i, c := range coveredBinds(ms, opened) {
		if c {
			got[ms[i].Path]++
		}
	}
	want := map[string]int{"/etc/hosts": 2, "/etc/ssl/certs": 1, "/etc/rw/rw": 1, "/usr/share": 1}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("covered = %v, want %v", got, want)
	}
}
