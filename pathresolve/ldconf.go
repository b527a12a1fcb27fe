package pathresolve

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// multiarch maps GOARCH to the Debian multiarch triple of its library dirs.
var multiarch = map[string]string{
	"amd64":   "x86_64-linux-gnu",
	"386":     "i386-linux-gnu",
	"arm64":   "aarch64-linux-gnu",
	"arm":     "arm-linux-gnueabihf",
	"riscv64": "riscv64-linux-gnu",
	"ppc64le": "powerpc64le-linux-gnu",
	"s390x":   "s390x-linux-gnu",
	"loong64": "loongarch64-linux-gnu",
}

func defaultLibDirs() []string {
	var dirs []string
	if t, ok := multiarch[runtime.GOARCH]; ok {
		dirs = append(dirs, "/lib/"+t, "/usr/lib/"+t)
	}
	return append(dirs, "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}

// ldSoConfDirs returns the library directories of opts.LdSoConf, read once.
func (r *resolver) ldSoConfDirs() []string {
	if !r.confLoaded {
		r.confLoaded = true
		r.confDirs = readLdSoConf(r.opts.LdSoConf)
	}
	return r.confDirs
}

// readLdSoConf returns the directories an ld.so.conf lists, in order,
// following `include` globs (relative ones are taken from the including
// file's directory). Files that cannot be read contribute nothing; `hwcap`
// lines and comments are ignored.
func readLdSoConf(path string) []string {
	var dirs []string
	seen := map[string]bool{}
	var read func(file string)
	read = func(file string) {
		if seen[file] || len(seen) > 1000 {
			return
		}
		seen[file] = true
		data, err := os.ReadFile(file)
		if err != nil {
			return
		}
		for _, line := range strings.Split(string(data), "\n") {
			line, _, _ = strings.Cut(line, "#")
			fields := strings.Fields(line)
			if len(fields) == 0 || fields[0] == "hwcap" {
				continue
			}
			if fields[0] == "include" {
				for _, pat := range fields[1:] {
					if !filepath.IsAbs(pat) {
						pat = filepath.Join(filepath.Dir(file), pat)
					}
					matches, _ := filepath.Glob(pat) // sorted
					for _, m := range matches {
						read(m)
					}
				}
				continue
			}
			for _, f := range fields {
				for _, d := range strings.FieldsFunc(f, func(c rune) bool { return c == ',' || c == ':' }) {
					d, _, _ = strings.Cut(d, "=") // old "dir=TYPE" syntax
					if filepath.IsAbs(d) {
						dirs = append(dirs, d)
					}
				}
			}
		}
	}
	read(path)
	return dirs
}
