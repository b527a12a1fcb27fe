package pathresolve

import (
	"path/filepath"
	"testing"
)

// FuzzWrapperParse checks that parsing arbitrary scripts for exec targets
// never panics and only returns absolute paths.
func FuzzWrapperParse(f *testing.F) {
	for _, s := range []string{
		"#! /nix/store/x-bash/bin/bash -e\nexport PATH='/x'${PATH:+':'}$PATH\nexec -a \"$0\" \"/nix/store/a/bin/.a-wrapped\"  \"$@\"\n",
		"exec /n/node /n/cli.js \"$@\"",
		"exec -cla",
		"f() { exec /x; }; f",
		"exec $'/x'",
		"exec \"/a\"'b'c",
		"cat <<EOF\nexec /x\nEOF\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		for _, c := range execTargets(src) {
			if !filepath.IsAbs(c.prog) {
				t.Fatalf("relative exec target %q", c.prog)
			}
			for _, a := range c.args {
				if !filepath.IsAbs(a) {
					t.Fatalf("relative argument %q", a)
				}
			}
		}
	})
}

// FuzzShebang checks that the "#!" and env parsers never panic.
func FuzzShebang(f *testing.F) {
	for _, s := range []string{"#!/usr/bin/env -S sh -e\n", "#! /bin/bash -e", "#!/usr/bin/env -Sx -u", "#!\t\t/x\t-y z"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, head []byte) {
		sb, ok := parseShebang(head)
		if !ok && sb != (shebang{}) {
			t.Fatalf("no shebang but %+v", sb)
		}
		envProgram(sb.arg)
		envProgram(string(head))
	})
}
