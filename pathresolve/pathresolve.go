// Package pathresolve finds every file a command needs to start, so that a
// sandbox can grant exactly those files (read and execute) and nothing else.
//
// It owns the static analysis of a command, done without running anything:
//
//   - the PATH lookup and every symlink hop on the way;
//   - "#!" interpreters, recursively, including "#!/usr/bin/env [options] X",
//     and scripts without "#!" (which a shell runs with /bin/sh, so /bin/sh and
//     its closure are included);
//   - shell trampolines such as nixpkgs makeWrapper wrappers: a shell script
//     whose `exec` names a literal absolute path is parsed (never run) and the
//     exec target is followed; the result's Path is that target;
//   - nixpkgs compiled wrappers (makeBinaryWrapper): an ELF file X whose
//     sibling ".X-wrapped" exists is assumed to exec that sibling, which is
//     resolved too (a heuristic based on the nixpkgs naming convention; the
//     target is not read out of the wrapper binary);
//   - for ELF files, the loader named by PT_INTERP and every DT_NEEDED library,
//     transitively and breadth first, a name already loaded (as DT_NEEDED name
//     or DT_SONAME, the loader included) being reused. Each name is searched
//     like glibc's ld.so does: DT_RPATH of the needing object and of the
//     objects that loaded it (only when the needing object has no
//     DT_RUNPATH), its DT_RUNPATH ($ORIGIN, $LIB and $PLATFORM expanded), the
//     ld.so.conf directories (standing in for ld.so.cache), then the loader's
//     own directory, which is where NixOS keeps libc (nono issue 1649), then
//     the default directories. Files of another ELF class or machine are
//     skipped.
//
// Not modelled: exec targets computed at run time (`exec "$prog"`, as in
// pyenv shims), LD_LIBRARY_PATH, LD_PRELOAD, glibc-hwcaps subdirectories,
// DF_1_NODEFLIB, dlopen'ed libraries and anything a program opens after it
// has started.
//
// Resolve is safe for concurrent use; each call reads the file system afresh
// and caches parsed ELF files only for its own duration.
package pathresolve

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Result is what a command needs to start.
type Result struct {
	// Path is the canonical absolute path (symlinks resolved) of the program
	// that finally runs. For a shell wrapper or a compiled nixpkgs wrapper it
	// is the wrapped program; for an ordinary script it is the script itself
	// (its interpreter is in Files and Chain).
	Path string
	// Chain records how Path and Files were found, in discovery order and
	// without duplicates. See [Step] for the kinds.
	Chain []Step
	// Files lists every file needed to start the command: the program,
	// scripts, interpreters, the ELF loader, every DT_NEEDED library
	// transitively, and every symlink passed on the way (symlinked
	// directories on the way are resolved, not listed). Paths are absolute,
	// sorted and unique; each has a canonical parent directory, and only
	// symlinks have a last element that is not itself canonical.
	Files []string
	// Dirs is the smallest set of directories covering Files: the parent
	// directory of each file, minus directories inside another one of the
	// set. Sorted. A file directly in "/" makes Dirs contain "/".
	Dirs []string
	// Missing lists what could not be found below the command itself. A
	// non-empty Missing means the command will most likely fail to start.
	Missing []Missing
}

// Step is one step of a resolution. Kinds:
//
//	"path"    From: command name, To: where the PATH lookup found it
//	"symlink" From: a symlink, To: its target, made absolute but not cleaned
//	"shebang" From: a script, To: the interpreter its "#!" line names
//	"sh"      From: a script without "#!", To: "/bin/sh", which runs it
//	"env"     From: program name on a "#!/usr/bin/env" line, To: where PATH has it
//	"wrapper" From: a shell script, To: the literal absolute path it execs
//	"arg"     From: a shell script, To: a literal absolute file argument of that exec (e.g. node's script)
//	"wrapped" From: an ELF file X, To: its sibling ".X-wrapped" (nixpkgs compiled wrapper)
//	"interp"  From: an ELF file, To: its PT_INTERP loader
//	"needed"  From: an ELF file, To: the canonical library satisfying a DT_NEEDED entry
type Step struct {
	Kind     string
	From, To string
}

// Missing is something that could not be found, and why.
type Missing struct {
	Name     string // what was looked for: a library name, an interpreter path, a program name
	NeededBy string // canonical path of the file that needs it
	Reason   string
}

// Options tune a resolution. The zero value resolves like the running system.
type Options struct {
	// PATH is the search path for the command and for "#!/usr/bin/env X".
	// Empty means the PATH environment variable. Empty and relative entries
	// are ignored (like os/exec, a program is never found through ".").
	PATH string
	// LdSoConf is the ld.so configuration whose directories (with `include`
	// globs followed) stand in for ld.so.cache. Empty means /etc/ld.so.conf.
	// A file that does not exist contributes no directories.
	LdSoConf string
	// DefaultLibDirs are searched last, after the loader's directory. Nil means
	// the multiarch directories for GOARCH (e.g. /lib/x86_64-linux-gnu and
	// /usr/lib/x86_64-linux-gnu) followed by /lib64, /usr/lib64, /lib and
	// /usr/lib; an empty non-nil slice means none.
	DefaultLibDirs []string
}

const (
	maxSymlinkHops = 40 // like the kernel's MAXSYMLINKS
	maxDepth       = 16 // interpreters and wrappers, nested
	headSize       = 256
	maxScriptSize  = 1 << 20 // larger scripts are not parsed for exec targets
)

// Resolve finds the program command names and every file it needs to start.
//
// A command containing "/" is a path (relative ones are taken from the
// current directory); otherwise it is looked up in opts.PATH, skipping
// directories and files without an execute bit. Resolve returns an error
// only when the command itself cannot be found, followed (symlink loop,
// more than 40 hops), read or executed; problems
// further down (a missing interpreter or library) are reported in
// Result.Missing.
func Resolve(command string, opts Options) (*Result, error) {
	r, err := newResolver(opts)
	if err != nil {
		return nil, err
	}
	if command == "" {
		return nil, errors.New("pathresolve: empty command; name a program")
	}
	start := command
	if !strings.Contains(command, "/") {
		found, err := r.lookPath(command)
		if err != nil {
			return nil, fmt.Errorf("pathresolve: %w", err)
		}
		r.step("path", command, found)
		start = found
	}
	final, err := r.program(start, 0)
	if err != nil {
		if start == command { // the error names the path already
			return nil, fmt.Errorf("pathresolve: %w", err)
		}
		return nil, fmt.Errorf("pathresolve: %q: %w", command, err)
	}
	return r.result(final), nil
}

// resolver holds the state of one Resolve call.
type resolver struct {
	opts     Options
	pathDirs []string
	cwd      string

	confDirs   []string // from ld.so.conf, read on first use
	confLoaded bool

	elfCache map[string]elfResult // canonical path -> parsed ELF
	done     map[string]string    // canonical program -> what finally runs
	files    map[string]bool
	chain    []Step
	seenStep map[Step]bool
	missing  []Missing
	seenMiss map[[2]string]bool
}

func newResolver(opts Options) (*resolver, error) {
	if opts.PATH == "" {
		opts.PATH = os.Getenv("PATH")
	}
	if opts.LdSoConf == "" {
		opts.LdSoConf = "/etc/ld.so.conf"
	}
	if opts.DefaultLibDirs == nil {
		opts.DefaultLibDirs = defaultLibDirs()
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("pathresolve: cannot get the current directory: %w", err)
	}
	r := &resolver{
		opts:     opts,
		cwd:      cwd,
		elfCache: map[string]elfResult{},
		done:     map[string]string{},
		files:    map[string]bool{},
		seenStep: map[Step]bool{},
		seenMiss: map[[2]string]bool{},
	}
	for _, d := range filepath.SplitList(opts.PATH) {
		if filepath.IsAbs(d) {
			r.pathDirs = append(r.pathDirs, d)
		}
	}
	return r, nil
}

// lookPath finds name in the PATH directories like execvp does, skipping
// directories and files that have no execute bit.
func (r *resolver) lookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, d := range r.pathDirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%q not found in PATH (%s); install it, fix PATH or give its absolute path",
		name, strings.Join(r.pathDirs, ":"))
}

// program adds the closure of the program at p and returns the canonical
// path of what finally runs when p is executed.
func (r *resolver) program(p string, depth int) (string, error) {
	if depth > maxDepth {
		return "", fmt.Errorf("more than %d nested interpreters and wrappers at %s", maxDepth, p)
	}
	canon, err := r.follow(p)
	if err != nil {
		return "", err
	}
	if final, ok := r.done[canon]; ok {
		return final, nil
	}
	fi, err := os.Stat(canon)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", canon)
	}
	if fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not executable; chmod +x it or run it through its interpreter", canon)
	}
	head, err := readHead(canon)
	if err != nil {
		return "", err
	}
	r.done[canon] = canon // a wrapper that (indirectly) execs itself stops here
	r.addFile(canon)
	final := canon
	if isELF(head) {
		final, err = r.elfProgram(canon, depth)
		if err != nil {
			return "", err
		}
	} else {
		final = r.script(canon, head, depth)
	}
	r.done[canon] = final
	return final, nil
}

// sub resolves a program needed by neededBy; failures go to Missing.
// It returns "" when p could not be resolved.
func (r *resolver) sub(p, neededBy string, depth int) string {
	final, err := r.program(p, depth)
	if err != nil {
		r.miss(p, neededBy, err.Error())
		return ""
	}
	return final
}

// follow resolves p hop by hop and returns its canonical path. Every symlink
// passed through in the last path element is added to Files and Chain (at
// its location with a canonical parent directory); symlinked directories are
// resolved but not recorded, since a grant on the final file does not need
// them. A loop or more than maxSymlinkHops hops is an error.
func (r *resolver) follow(p string) (string, error) {
	if !filepath.IsAbs(p) {
		p = r.cwd + "/" + p
	}
	var hops []string
	for {
		dir, base := splitRaw(p)
		if base == "." || base == ".." {
			return filepath.EvalSymlinks(p)
		}
		cdir, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return "", notFound(p, err)
		}
		loc := filepath.Join(cdir, base)
		fi, err := os.Lstat(loc)
		if err != nil {
			return "", notFound(p, err)
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			return loc, nil
		}
		if slices.Contains(hops, loc) {
			return "", fmt.Errorf("symlink loop: %s -> %s; fix or remove one of the links",
				strings.Join(hops, " -> "), loc)
		}
		if len(hops) >= maxSymlinkHops {
			return "", fmt.Errorf("more than %d symlink hops from %s; shorten the chain", maxSymlinkHops, hops[0])
		}
		hops = append(hops, loc)
		target, err := os.Readlink(loc)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			target = cdir + "/" + target
		}
		r.addFile(loc)
		r.step("symlink", loc, target)
		p = target
	}
}

// splitRaw splits p into directory and last element without cleaning it,
// so that ".." after a symlinked directory keeps its physical meaning.
func splitRaw(p string) (dir, base string) {
	p = strings.TrimRight(p, "/")
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ".", p
	}
	if i == 0 {
		return "/", p[1:]
	}
	return p[:i], p[i+1:]
}

func notFound(p string, err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s does not exist", p)
	}
	return err
}

func readHead(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, headSize)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

func isELF(head []byte) bool {
	return len(head) >= 4 && string(head[:4]) == "\x7fELF"
}

func (r *resolver) addFile(p string) { r.files[p] = true }

func (r *resolver) step(kind, from, to string) {
	s := Step{Kind: kind, From: from, To: to}
	if !r.seenStep[s] {
		r.seenStep[s] = true
		r.chain = append(r.chain, s)
	}
}

func (r *resolver) miss(name, neededBy, reason string) {
	k := [2]string{name, neededBy}
	if !r.seenMiss[k] {
		r.seenMiss[k] = true
		r.missing = append(r.missing, Missing{Name: name, NeededBy: neededBy, Reason: reason})
	}
}

func (r *resolver) result(final string) *Result {
	files := make([]string, 0, len(r.files))
	for f := range r.files {
		files = append(files, f)
	}
	slices.Sort(files)
	return &Result{Path: final, Chain: r.chain, Files: files, Dirs: coveringDirs(files), Missing: r.missing}
}

// coveringDirs returns the parent directories of files, without those that
// lie inside another returned directory.
func coveringDirs(files []string) []string {
	var parents []string
	for _, f := range files {
		parents = append(parents, filepath.Dir(f))
	}
	slices.Sort(parents)
	parents = slices.Compact(parents)
	var dirs []string
	for _, d := range parents {
		// Sorted order puts a directory before everything inside it.
		if !slices.ContainsFunc(dirs, func(kept string) bool { return within(d, kept) }) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// within reports whether path p is dir or inside it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}
