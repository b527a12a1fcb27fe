package pathresolve

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// elfInfo is what the loader reads from an ELF file.
type elfInfo struct {
	class   elf.Class
	machine elf.Machine
	interp  string   // PT_INTERP
	needed  []string // DT_NEEDED, in order
	soname  string   // DT_SONAME
	rpath   []string // DT_RPATH entries, unexpanded
	runpath []string // DT_RUNPATH entries, unexpanded
}

type elfResult struct {
	info *elfInfo
	err  error
}

// object is an ELF file loaded into one program's process image.
type object struct {
	path   string // canonical
	origin string // what $ORIGIN expands to
	info   *elfInfo
	parent *object // the object whose DT_NEEDED loaded this one; nil for the program
}

// elf parses the ELF file at canonical path p, once per Resolve call.
func (r *resolver) elf(p string) (*elfInfo, error) {
	if res, ok := r.elfCache[p]; ok {
		return res.info, res.err
	}
	info, err := readELF(p)
	r.elfCache[p] = elfResult{info, err}
	return info, err
}

// elfProgram adds the closure of the ELF program at canon and returns what
// finally runs: canon, or the wrapped program of a nixpkgs compiled wrapper.
func (r *resolver) elfProgram(canon string, depth int) (string, error) {
	info, err := r.elf(canon)
	if err != nil {
		return "", fmt.Errorf("%s starts like an ELF file but cannot be parsed: %v", canon, err)
	}
	r.elfClosure(canon, info)

	// nixpkgs makeBinaryWrapper/wrapProgram renames X to .X-wrapped and puts
	// a compiled wrapper at X; wrapping again renames the previous wrapper
	// to .X-wrapped_ (then .X-wrapped__ ...). .X-wrapped is the original.
	final := canon
	dir, base := filepath.Split(canon)
	hidden := dir + "." + base + "-wrapped"
	for s := hidden; len(s) < len(hidden)+8; s += "_" {
		if fi, err := os.Stat(s); err != nil || !fi.Mode().IsRegular() {
			break
		}
		r.step("wrapped", canon, s)
		if f := r.sub(s, canon, depth+1); f != "" && s == hidden {
			final = f
		}
	}
	return final, nil
}

// elfClosure adds the loader and every library the program at prog loads,
// in the loader's breadth-first order, so that a name already loaded (by
// DT_NEEDED name or DT_SONAME) is reused rather than searched again.
func (r *resolver) elfClosure(prog string, info *elfInfo) {
	main := &object{path: prog, origin: filepath.Dir(prog), info: info}
	loaded := map[string]*object{} // nil value: searched and not found
	byPath := map[string]*object{prog: main}
	queue := []*object{main}
	loaderDir := ""
	if info.interp != "" {
		r.step("interp", prog, info.interp)
		if ld := r.loader(info.interp, prog); ld != nil {
			loaderDir = filepath.Dir(ld.path)
			byPath[ld.path] = ld
			loaded[filepath.Base(info.interp)] = ld
			if ld.info.soname != "" {
				loaded[ld.info.soname] = ld
			}
			queue = append(queue, ld)
		}
	}
	for len(queue) > 0 {
		o := queue[0]
		queue = queue[1:]
		for _, name := range o.info.needed {
			if _, ok := loaded[name]; ok {
				continue
			}
			found, canon, lib, reason := r.search(name, o, loaderDir)
			if found == "" {
				loaded[name] = nil
				r.miss(name, o.path, reason)
				continue
			}
			r.step("needed", o.path, canon)
			n := byPath[canon]
			if n == nil {
				n = &object{path: canon, origin: dirOf(found), info: lib, parent: o}
				byPath[canon] = n
				queue = append(queue, n)
				r.addFile(canon)
				r.follow(found) // adds the symlink hops; candidate already checked it resolves
			}
			loaded[name] = n
			if s := n.info.soname; s != "" {
				if _, ok := loaded[s]; !ok {
					loaded[s] = n
				}
			}
		}
	}
}

// loader resolves the PT_INTERP path interp of prog.
func (r *resolver) loader(interp, prog string) *object {
	canon, err := r.follow(interp)
	if err == nil {
		var info *elfInfo
		if info, err = r.elf(canon); err == nil {
			r.addFile(canon)
			return &object{path: canon, origin: dirOf(interp), info: info}
		}
	}
	r.miss(interp, prog, "PT_INTERP: "+err.Error())
	return nil
}

// search finds library name needed by o, in glibc's order: DT_RPATH of o and
// of the objects that loaded it (only if o has no DT_RUNPATH), DT_RUNPATH of
// o, the ld.so.conf directories, the loader's directory, the default
// directories. Candidates of another ELF class or machine are skipped.
// It returns the path as found, its canonical path and parsed ELF, or a
// reason why nothing was found.
func (r *resolver) search(name string, o *object, loaderDir string) (found, canon string, lib *elfInfo, reason string) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = r.cwd + "/" + p
		}
		canon, lib, why := r.candidate(p, o.info)
		if canon == "" {
			if why == "" {
				why = p + " does not exist"
			}
			return "", "", nil, "DT_NEEDED names a path: " + why
		}
		return p, canon, lib, ""
	}

	type group struct {
		label string
		dirs  []string
	}
	var groups []group
	if len(o.info.runpath) == 0 {
		for l := o; l != nil; l = l.parent {
			if len(l.info.rpath) > 0 {
				groups = append(groups, group{"RPATH of " + l.path, r.expandAll(l.info.rpath, l)})
			}
		}
	} else {
		groups = append(groups, group{"RUNPATH", r.expandAll(o.info.runpath, o)})
	}
	groups = append(groups, group{"ld.so.conf dirs", r.ldSoConfDirs()})
	if loaderDir != "" {
		groups = append(groups, group{"loader dir", []string{loaderDir}})
	}
	groups = append(groups, group{"default dirs", r.opts.DefaultLibDirs})

	var skipped []string
	for _, g := range groups {
		for _, d := range g.dirs {
			p := strings.TrimRight(d, "/") + "/" + name
			canon, lib, why := r.candidate(p, o.info)
			if canon != "" {
				return p, canon, lib, ""
			}
			if why != "" {
				skipped = append(skipped, why)
			}
		}
	}
	var searched []string
	for _, g := range groups {
		searched = append(searched, fmt.Sprintf("%s [%s]", g.label, strings.Join(g.dirs, " ")))
	}
	reason = "not found in " + strings.Join(searched, ", ")
	if len(skipped) > 0 {
		reason += "; skipped " + strings.Join(skipped, ", ")
	}
	return "", "", nil, reason
}

// candidate checks whether p is a library the object described by want can
// load. It returns p's canonical path and parsed ELF, or "" and, if p exists
// but is unusable, why.
func (r *resolver) candidate(p string, want *elfInfo) (string, *elfInfo, string) {
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
		return "", nil, "" // one syscall for the common miss
	}
	canon, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", nil, ""
	}
	lib, err := r.elf(canon)
	if err != nil {
		return "", nil, p + " (not ELF)"
	}
	if lib.class != want.class || lib.machine != want.machine {
		return "", nil, fmt.Sprintf("%s (%v %v)", p, lib.class, lib.machine)
	}
	return canon, lib, ""
}

func (r *resolver) expandAll(entries []string, o *object) []string {
	var out []string
	for _, e := range entries {
		if e != "" { // an empty entry means the current directory; never grant that
			out = append(out, expandDST(e, o.origin, o.info))
		}
	}
	return out
}

// expandDST expands the dynamic string tokens $ORIGIN, $LIB and $PLATFORM
// (also written ${ORIGIN} ...) in a DT_RPATH or DT_RUNPATH entry.
func expandDST(s, origin string, info *elfInfo) string {
	if !strings.Contains(s, "$") {
		return s
	}
	lib := "lib"
	if info.class == elf.ELFCLASS64 {
		lib = "lib64"
	}
	values := map[string]string{"ORIGIN": origin, "LIB": lib, "PLATFORM": platform(info.machine)}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			b.WriteByte(s[i])
			continue
		}
		rest := s[i+1:]
		name, skip := "", 0
		if strings.HasPrefix(rest, "{") {
			if end := strings.IndexByte(rest, '}'); end > 0 {
				name, skip = rest[1:end], end+1
			}
		} else {
			n := 0
			for n < len(rest) && isIdent(rest[n]) {
				n++
			}
			name, skip = rest[:n], n
		}
		if v, ok := values[name]; ok {
			b.WriteString(v)
			i += skip
		} else {
			b.WriteByte('$')
		}
	}
	return b.String()
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
}

// platform is a best-effort value of $PLATFORM (glibc takes it from AT_PLATFORM).
func platform(m elf.Machine) string {
	switch m {
	case elf.EM_X86_64:
		return "x86_64"
	case elf.EM_386:
		return "i686"
	case elf.EM_AARCH64:
		return "aarch64"
	}
	return runtime.GOARCH
}

// dirOf is the directory part of p as glibc computes $ORIGIN for a library:
// the path it was opened by, not resolved.
func dirOf(p string) string {
	d, _ := splitRaw(p)
	return d
}

// readELF reads the loader-relevant parts of an ELF file through its program
// headers (PT_INTERP, PT_DYNAMIC), as ld.so does, so files without section
// headers work too.
func readELF(p string) (*elfInfo, error) {
	f, err := elf.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info := &elfInfo{class: f.Class, machine: f.Machine}
	var dyn *elf.Prog
	for _, prog := range f.Progs {
		switch prog.Type {
		case elf.PT_INTERP:
			b, err := io.ReadAll(io.LimitReader(prog.Open(), 4096))
			if err != nil {
				return nil, fmt.Errorf("reading PT_INTERP: %w", err)
			}
			info.interp = string(bytes.TrimRight(b, "\x00"))
		case elf.PT_DYNAMIC:
			dyn = prog
		}
	}
	if dyn == nil {
		return info, nil // static
	}
	if err := readDynamic(f, dyn, info); err != nil {
		return nil, err
	}
	return info, nil
}

const maxDynSize = 16 << 20

func readDynamic(f *elf.File, dyn *elf.Prog, info *elfInfo) error {
	if dyn.Filesz > maxDynSize {
		return errors.New("PT_DYNAMIC is implausibly large")
	}
	data := make([]byte, dyn.Filesz)
	if _, err := dyn.ReadAt(data, 0); err != nil {
		return fmt.Errorf("reading PT_DYNAMIC: %w", err)
	}
	entSize := 8
	if f.Class == elf.ELFCLASS64 {
		entSize = 16
	}
	var strtab, strsz uint64
	var needed, rpath, runpath []uint64
	soname, hasSoname := uint64(0), false
	bo := f.ByteOrder
entries:
	for i := 0; i+entSize <= len(data); i += entSize {
		var tag elf.DynTag
		var val uint64
		if entSize == 16 {
			tag, val = elf.DynTag(bo.Uint64(data[i:])), bo.Uint64(data[i+8:])
		} else {
			tag, val = elf.DynTag(int32(bo.Uint32(data[i:]))), uint64(bo.Uint32(data[i+4:]))
		}
		switch tag {
		case elf.DT_NULL:
			break entries
		case elf.DT_STRTAB:
			strtab = val
		case elf.DT_STRSZ:
			strsz = val
		case elf.DT_NEEDED:
			needed = append(needed, val)
		case elf.DT_RPATH:
			rpath = append(rpath, val)
		case elf.DT_RUNPATH:
			runpath = append(runpath, val)
		case elf.DT_SONAME:
			soname, hasSoname = val, true
		}
	}
	if len(needed)+len(rpath)+len(runpath) == 0 && !hasSoname {
		return nil
	}
	strs, err := stringTable(f, strtab, strsz)
	if err != nil {
		return fmt.Errorf("reading the dynamic string table: %w", err)
	}
	for _, off := range needed {
		info.needed = append(info.needed, strs.at(off))
	}
	for _, off := range rpath {
		info.rpath = append(info.rpath, strings.Split(strs.at(off), ":")...)
	}
	for _, off := range runpath {
		info.runpath = append(info.runpath, strings.Split(strs.at(off), ":")...)
	}
	if hasSoname {
		info.soname = strs.at(soname)
	}
	return nil
}

// strTable reads NUL-terminated strings from the dynamic string table on
// demand: programs that export many symbols (node) have tables of megabytes.
type strTable struct {
	r    io.ReaderAt
	base int64 // offset of the table in r
	size uint64
}

// stringTable locates the string table at virtual address addr in the
// PT_LOAD segment that maps it.
func stringTable(f *elf.File, addr, size uint64) (*strTable, error) {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && addr >= p.Vaddr && addr-p.Vaddr <= p.Filesz && size <= p.Filesz-(addr-p.Vaddr) {
			return &strTable{r: p, base: int64(addr - p.Vaddr), size: size}, nil
		}
	}
	return nil, fmt.Errorf("address %#x is in no PT_LOAD segment", addr)
}

// at returns the string at offset off ("" if it is out of bounds or unreadable).
func (t *strTable) at(off uint64) string {
	var s []byte
	buf := make([]byte, 256)
	for off < t.size {
		n := min(uint64(len(buf)), t.size-off)
		if _, err := t.r.ReadAt(buf[:n], t.base+int64(off)); err != nil {
			return ""
		}
		if i := bytes.IndexByte(buf[:n], 0); i >= 0 {
			return string(append(s, buf[:i]...))
		}
		s = append(s, buf[:n]...)
		off += n
	}
	return string(s)
}
