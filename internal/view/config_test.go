package view

import (
	"fmt"
	"reflect"
	"sort"
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

func TestSiblingGroups(t *testing.T) {
	var ms []Mount
	grantsIn := func(dir string, n int, m Mount) {
		for i := 0; i < n; i++ {
			g := m
			g.Path = fmt.Sprintf("%s/g%02d", dir, i)
			ms = append(ms, g)
		}
	}
	ro := Mount{Kind: ReadOnly, Optional: true}
	grantsIn("/a", minSiblings, ro)                                     // a group
	grantsIn("/b", minSiblings-1, ro)                                   // too few
	grantsIn("/c", minSiblings, Mount{Kind: ReadWrite, Optional: true}) // read-write: never
	grantsIn("/d", minSiblings, ro)                                     // a mount at the parent
	ms = append(ms, Mount{Kind: Tmpfs, Path: "/d"})
	grantsIn("/e", minSiblings, ro) // a symlink beside them
	ms = append(ms, Mount{Kind: Symlink, Path: "/e/link", Target: "/x"})
	grantsIn("/f", minSiblings, ro) // masks and deeper binds: fine
	ms = append(ms, Mount{Kind: Mask, Path: "/f/g00/secret"}, Mount{Kind: Mask, Path: "/f/other"},
		Mount{Kind: ReadOnly, Path: "/f/g01/deep"})
	grantsIn("/g", minSiblings, Mount{Kind: ReadOnly}) // not optional (not a grant)
	grantsIn("/h", minSiblings, Mount{Kind: ReadOnly, Optional: true, Guarded: true})
	grantsIn("/dev/i", minSiblings, ro) // device nodes
	grantsIn("/j", minSiblings, Mount{Kind: ReadOnly, Optional: true, Source: "/elsewhere"})
	grantsIn("/k", minSiblings, ro) // a bind beside them, not placed
	ms = append(ms, Mount{Kind: ReadOnly, Path: "/k/missing", Optional: true})
	grantsIn("/l", minSiblings, ro) // a bind beside them, placed
	ms = append(ms, Mount{Kind: ReadWrite, Path: "/l/rw", Optional: true})
	ms = ordered(ms)
	placed := make([]bool, len(ms))
	for i, m := range ms {
		placed[i] = m.Path != "/k/missing"
	}
	var got []string
	for _, g := range siblingGroups(ms, placed) {
		got = append(got, fmt.Sprintf("%s:%d", g.dir, len(g.members)))
		for _, i := range g.members {
			if parentDir(ms[i].Path) != g.dir || ms[i].Kind != ReadOnly {
				t.Errorf("group %s holds %+v", g.dir, ms[i])
			}
		}
	}
	sort.Strings(got)
	want := []string{fmt.Sprintf("/a:%d", minSiblings), fmt.Sprintf("/f:%d", minSiblings), fmt.Sprintf("/k:%d", minSiblings)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("groups = %v, want %v", got, want)
	}
}

// TestInodeRules: only a path where every mount is a bind of one host
// path has its Landlock rule put on the bind's source descriptor.
func TestInodeRules(t *testing.T) {
	ms := ordered([]Mount{
		{Kind: ReadOnly, Path: "/a"},
		{Kind: ReadWrite, Path: "/a"},                  // the same host path again: still one inode
		{Kind: ReadOnly, Path: "/b"},                   //
		{Kind: Mask, Path: "/b"},                       // a mask on top: the path shows /dev/null
		{Kind: ReadOnly, Path: "/c", Source: "/x"},     //
		{Kind: ReadOnly, Path: "/c", Source: "/y"},     // two host paths at one place
		{Kind: ReadOnly, Path: "/d", Source: "/nix/d"}, // another host path, alone: its inode
		{Kind: Tmpfs, Path: "/e"},                      //
		{Kind: Terminal, Path: "/dev/pts/3"},           // not a bind of a tree
	})
	got := inodeRules(ms)
	want := map[string]bool{"/a": true, "/d": true}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("inodeRules = %v, want %v", got, want)
	}
	enc := enclosingBinds(ordered([]Mount{
		{Kind: ReadOnly, Path: "/etc"}, {Kind: ReadOnly, Path: "/etc/hosts"},
		{Kind: Tmpfs, Path: "/tmp"}, {Kind: ReadOnly, Path: "/tmp/w"},
		{Kind: ReadWrite, Path: "/home/u/p"}, {Kind: ReadOnly, Path: "/home/u/p/.git/config"},
	}))
	if want := []bool{true, false, false, false, true, false}; !reflect.DeepEqual(enc, want) {
		t.Fatalf("enclosingBinds = %v, want %v", enc, want)
	}
}

// TestValidateSharedTmpfsAndUserLimits: a Tmpfs may name the instance it
// shares (lower-case letters, digits, '-'), never a path; a user
// namespace limit must be one of the inotify ones and at least 1.
func TestValidateSharedTmpfsAndUserLimits(t *testing.T) {
	base := func() Config { return Config{Workdir: "/w", Argv: []string{"/bin/sh"}, Network: NetHost} }
	for _, tc := range []struct {
		name string
		edit func(*Config)
		ok   bool
	}{
		{"shared tmpfs", func(c *Config) {
			c.Mounts = []Mount{{Kind: Tmpfs, Path: "/tmp", Source: "tmp"}, {Kind: Tmpfs, Path: "/dev/shm", Source: "tmp"}}
		}, true},
		{"tmpfs named by a path", func(c *Config) { c.Mounts = []Mount{{Kind: Tmpfs, Path: "/tmp", Source: "/etc"}} }, false},
		{"tmpfs name with dots", func(c *Config) { c.Mounts = []Mount{{Kind: Tmpfs, Path: "/tmp", Source: "../x"}} }, false},
		{"inotify limits", func(c *Config) {
			c.UserLimits = []UserLimit{{Name: "max_inotify_instances", Value: 32}, {Name: "max_inotify_watches", Value: 1}}
		}, true},
		{"another limit", func(c *Config) { c.UserLimits = []UserLimit{{Name: "max_user_namespaces", Value: 0}} }, false},
		{"a path", func(c *Config) { c.UserLimits = []UserLimit{{Name: "../../fs/inotify/max_user_instances", Value: 1}} }, false},
		{"zero", func(c *Config) { c.UserLimits = []UserLimit{{Name: "max_inotify_instances", Value: 0}} }, false},
		{"alias", func(c *Config) {
			c.Mounts = []Mount{{Kind: Alias, Path: "/home/u/proj", Source: "/home/u/.local/state/t/tree"}}
		}, true},
		{"alias without source", func(c *Config) { c.Mounts = []Mount{{Kind: Alias, Path: "/p"}} }, false},
		{"alias of /", func(c *Config) { c.Mounts = []Mount{{Kind: Alias, Path: "/p", Source: "/"}} }, false},
		{"alias inside its source", func(c *Config) { c.Mounts = []Mount{{Kind: Alias, Path: "/t/p", Source: "/t"}} }, false},
		{"alias holding its source", func(c *Config) { c.Mounts = []Mount{{Kind: Alias, Path: "/t", Source: "/t/p"}} }, false},
		{"alias relative", func(c *Config) { c.Mounts = []Mount{{Kind: Alias, Path: "/p", Source: "t"}} }, false},
	} {
		c := base()
		tc.edit(&c)
		if err := c.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}
