package pathresolve

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const libSrc = `int foo(void) { return 42; }`
const mainSrc = `int foo(void); int main(void) { return foo() == 42 ? 0 : 1; }`

// noSystem are options under which only RPATH/RUNPATH and the loader's
// directory can find a library, as on NixOS.
func noSystem(t testing.TB) Options {
	return Options{LdSoConf: filepath.Join(t.TempDir(), "none.conf"), DefaultLibDirs: []string{}}
}

func TestRunpathOrigin(t *testing.T) {
	needGCC(t)
	d := tmpDir(t)
	lib, prog := d+"/lib/libfoo.so.1", d+"/bin/prog"
	os.MkdirAll(d+"/bin", 0o755)
	os.MkdirAll(d+"/lib", 0o755)
	gcc(t, libSrc, "-shared", "-fPIC", "-Wl,-soname,libfoo.so.1", "-o", lib)
	gcc(t, mainSrc, "-o", prog, lib, "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../lib")
	run(t, prog, 0)

	info, err := readELF(prog)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(info.runpath, []string{"$ORIGIN/../lib"}) || len(info.rpath) > 0 {
		t.Fatalf("fixture: want only DT_RUNPATH $ORIGIN/../lib, got RUNPATH %q RPATH %q", info.runpath, info.rpath)
	}
	res := resolve(t, prog, noSystem(t))
	if res.Path != prog {
		t.Errorf("Path = %s, want %s", res.Path, prog)
	}
	wantFiles(t, res, prog, lib, systemLoader(t))
	wantNoMissing(t, res)
	if !hasStep(res, "needed", prog, lib) || !hasStep(res, "interp", prog, info.interp) {
		t.Errorf("Chain lacks the needed/interp steps: %+v", res.Chain)
	}

	// Run through a symlink elsewhere: $ORIGIN is the program's real directory.
	link := d + "/elsewhere/prog"
	symlink(t, prog, link)
	res = resolve(t, link, noSystem(t))
	wantFiles(t, res, link, prog, lib)
	wantNoMissing(t, res)
}

// TestRpath checks DT_RPATH and its inheritance: a library without
// RUNPATH is also searched for in the RPATH of the objects that loaded it.
// DT_RUNPATH is not inherited.
func TestRpath(t *testing.T) {
	needGCC(t)
	for _, dtags := range []string{"--disable-new-dtags", "--enable-new-dtags"} {
		t.Run(dtags, func(t *testing.T) {
			d := tmpDir(t)
			bar, foo, prog := d+"/lib2/libbar.so", d+"/lib/libfoo.so", d+"/bin/prog"
			for _, sub := range []string{"bin", "lib", "lib2"} {
				os.MkdirAll(d+"/"+sub, 0o755)
			}
			gcc(t, `int bar(void) { return 42; }`, "-shared", "-fPIC", "-Wl,-soname,libbar.so", "-o", bar)
			gcc(t, `int bar(void); int foo(void) { return bar(); }`, "-shared", "-fPIC", "-Wl,-soname,libfoo.so", "-o", foo, bar)
			gcc(t, mainSrc, "-o", prog, foo, "-Wl,"+dtags+",-rpath,$ORIGIN/../lib:$ORIGIN/../lib2")
			info, err := readELF(prog)
			if err != nil {
				t.Fatal(err)
			}
			res := resolve(t, prog, noSystem(t))
			wantFiles(t, res, foo)
			if dtags == "--disable-new-dtags" {
				if len(info.rpath) != 2 || len(info.runpath) != 0 {
					t.Fatalf("fixture: want DT_RPATH only, got RPATH %q RUNPATH %q", info.rpath, info.runpath)
				}
				run(t, prog, 0)
				wantFiles(t, res, bar)
				wantNoMissing(t, res)
				return
			}
			if len(info.runpath) != 2 || len(info.rpath) != 0 {
				t.Fatalf("fixture: want DT_RUNPATH only, got RPATH %q RUNPATH %q", info.rpath, info.runpath)
			}
			if len(res.Missing) != 1 || res.Missing[0].Name != "libbar.so" || res.Missing[0].NeededBy != foo {
				t.Errorf("want libbar.so missing for %s (RUNPATH is not inherited), got %+v", foo, res.Missing)
			}
		})
	}
}

func TestCustomLoader(t *testing.T) {
	needGCC(t)
	d := tmpDir(t)
	sysLD := systemLoader(t)
	ld, prog := d+"/ld/"+filepath.Base(sysLD), d+"/prog"
	copyFile(t, sysLD, ld)
	gcc(t, `int main(void) { return 3; }`, "-o", prog, "-Wl,--dynamic-linker="+ld)
	run(t, prog, 3)

	res := resolve(t, prog, Options{})
	wantFiles(t, res, prog, ld, systemLib(t, "libc.so.6"))
	wantNoMissing(t, res)
	if !hasStep(res, "interp", prog, ld) {
		t.Errorf("Chain lacks interp step to %s: %+v", ld, res.Chain)
	}
	// libc's own DT_NEEDED on the loader is satisfied by the loaded loader.
	if slices.Contains(res.Files, sysLD) {
		t.Errorf("the system loader %s is in Files although the program uses %s", sysLD, ld)
	}
}

// TestLoaderDirIssue1649 is nono issue 1649: on NixOS libgcc_s.so.1 needs
// libc.so.6, which is only in the glibc store path beside the loader.
// Here libA.so needs libc.so.6, its RUNPATH points elsewhere, the program
// does not need libc itself and there are no system library directories.
func TestLoaderDirIssue1649(t *testing.T) {
	needGCC(t)
	d := tmpDir(t)
	sysLD := systemLoader(t)
	glibc := d + "/glibc/lib"
	ld, libc := glibc+"/"+filepath.Base(sysLD), glibc+"/libc.so.6"
	copyFile(t, sysLD, ld)
	copyFile(t, systemLib(t, "libc.so.6"), libc)
	libA, prog := d+"/liba/libA.so", d+"/bin/prog"
	os.MkdirAll(d+"/liba", 0o755)
	os.MkdirAll(d+"/bin", 0o755)
	os.MkdirAll(d+"/elsewhere", 0o755)
	gcc(t, `#include <unistd.h>
int a(void) { return getpid() > 0 ? 7 : 1; }`,
		"-shared", "-fPIC", "-o", libA, "-Wl,-soname,libA.so,--no-as-needed,--enable-new-dtags,-rpath,"+d+"/elsewhere")
	gcc(t, `int a(void);
void _start(void) {
	long r = a();
	__asm__ volatile ("syscall" :: "a"(60), "D"(r));
	for (;;) {}
}`, "-nostdlib", "-fno-stack-protector", "-o", prog, libA,
		"-Wl,--enable-new-dtags,-rpath,"+d+"/liba", "-Wl,--dynamic-linker="+ld)
	run(t, prog, 7)

	info, err := readELF(prog)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(info.needed, []string{"libA.so"}) {
		t.Fatalf("fixture: program should need only libA.so, needs %q", info.needed)
	}
	res := resolve(t, prog, noSystem(t))
	wantFiles(t, res, prog, ld, libA, libc)
	wantNoMissing(t, res)
	if !hasStep(res, "needed", libA, libc) {
		t.Errorf("libc.so.6 should be found for libA.so in the loader's directory %s: %+v", glibc, res.Chain)
	}
	for _, f := range res.Files {
		if filepath.Base(f) == "libc.so.6" && f != libc {
			t.Errorf("libc.so.6 resolved from %s, want %s", f, libc)
		}
	}
}

func TestMissingLibrary(t *testing.T) {
	needGCC(t)
	d := tmpDir(t)
	lib, prog := d+"/libB.so", d+"/prog"
	gcc(t, libSrc, "-shared", "-fPIC", "-Wl,-soname,libB.so", "-o", lib)
	gcc(t, mainSrc, "-o", prog, lib, "-Wl,--enable-new-dtags,-rpath,$ORIGIN")
	if err := os.Remove(lib); err != nil {
		t.Fatal(err)
	}
	res := resolve(t, prog, Options{})
	if len(res.Missing) != 1 {
		t.Fatalf("want libB.so missing, got %+v", res.Missing)
	}
	m := res.Missing[0]
	if m.Name != "libB.so" || m.NeededBy != prog {
		t.Errorf("Missing = %+v, want libB.so needed by %s", m, prog)
	}
	for _, want := range []string{"not found in", "RUNPATH [" + d + "]", "loader dir", "default dirs"} {
		if !strings.Contains(m.Reason, want) {
			t.Errorf("reason %q lacks %q", m.Reason, want)
		}
	}
	wantFiles(t, res, prog, systemLib(t, "libc.so.6"))
}

// TestWrongClassSkipped puts a 32-bit file named like the library first in
// RUNPATH: the loader skips it, so must we.
func TestWrongClassSkipped(t *testing.T) {
	needGCC(t)
	d := tmpDir(t)
	lib, prog := d+"/b/libfoo.so", d+"/prog"
	os.MkdirAll(d+"/b", 0o755)
	gcc(t, libSrc, "-shared", "-fPIC", "-Wl,-soname,libfoo.so", "-o", lib)
	gcc(t, mainSrc, "-o", prog, lib, "-Wl,--enable-new-dtags,-rpath,$ORIGIN/a:$ORIGIN/b")
	write(t, d+"/a/libfoo.so", string(elf32Header(t)), 0o755)

	res := resolve(t, prog, noSystem(t))
	wantFiles(t, res, lib)
	if slices.Contains(res.Files, d+"/a/libfoo.so") {
		t.Errorf("the 32-bit candidate was taken: %q", res.Files)
	}
	os.Remove(lib)
	res = resolve(t, prog, noSystem(t))
	if len(res.Missing) == 0 || !strings.Contains(res.Missing[0].Reason, "skipped "+d+"/a/libfoo.so (ELFCLASS32") {
		t.Errorf("want the skipped candidate in the reason, got %+v", res.Missing)
	}
}

// elf32Header is a minimal 32-bit i386 shared object: just the ELF header.
func elf32Header(t testing.TB) []byte {
	h := elf.Header32{Type: uint16(elf.ET_DYN), Machine: uint16(elf.EM_386), Version: 1, Ehsize: 52}
	copy(h.Ident[:], "\x7fELF")
	h.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS32)
	h.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	h.Ident[elf.EI_VERSION] = 1
	var b bytes.Buffer
	if err := binary.Write(&b, binary.LittleEndian, h); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestStaticBinary(t *testing.T) {
	needGCC(t)
	d := tmpDir(t)
	prog := d + "/static"
	if err := tryGCC(`int main(void) { return 5; }`, "-static", "-o", prog); err != nil {
		t.Skipf("cannot link statically (libc.a missing?): %v", err)
	}
	run(t, prog, 5)
	res := resolve(t, prog, Options{})
	if !slices.Equal(res.Files, []string{prog}) {
		t.Errorf("a static binary needs only itself, got %q", res.Files)
	}
}

func tryGCC(src string, args ...string) error {
	dir, err := os.MkdirTemp("", "pathresolve")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	c := filepath.Join(dir, "src.c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		return err
	}
	return runQuiet("gcc", append([]string{c}, args...)...)
}

func TestRealPrograms(t *testing.T) {
	for _, name := range []string{"sh", "node", "python3"} {
		t.Run(name, func(t *testing.T) {
			if _, err := Resolve(name, Options{PATH: testPATH}); err != nil {
				if name == "sh" {
					t.Fatal(err)
				}
				t.Skipf("%s not installed: %v", name, err)
			}
			res := resolve(t, name, Options{})
			wantNoMissing(t, res)
			wantFiles(t, res, systemLoader(t))
			if !slices.ContainsFunc(res.Files, func(f string) bool {
				b := filepath.Base(f)
				return strings.HasPrefix(b, "libc.so") || strings.HasPrefix(b, "libnode.so")
			}) {
				t.Errorf("%s: neither libc nor libnode in Files %q", name, res.Files)
			}
			t.Logf("%s -> %s: %d files in %q", name, res.Path, len(res.Files), res.Dirs)
		})
	}
}

func TestExpandDST(t *testing.T) {
	i64 := &elfInfo{class: elf.ELFCLASS64, machine: elf.EM_X86_64}
	i32 := &elfInfo{class: elf.ELFCLASS32, machine: elf.EM_386}
	for _, c := range []struct {
		in   string
		info *elfInfo
		want string
	}{
		{"$ORIGIN/../lib", i64, "/o/../lib"},
		{"${ORIGIN}/x", i64, "/o/x"},
		{"/usr/$LIB/$PLATFORM", i64, "/usr/lib64/x86_64"},
		{"/usr/${LIB}", i32, "/usr/lib"},
		{"/p/${PLATFORM}", i32, "/p/i686"},
		{"$ORIGINAL/x", i64, "$ORIGINAL/x"},
		{"$FOO/$", i64, "$FOO/$"},
		{"${ORIGIN", i64, "${ORIGIN"},
	} {
		if got := expandDST(c.in, "/o", c.info); got != c.want {
			t.Errorf("expandDST(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestLdSoConf(t *testing.T) {
	d := tmpDir(t)
	write(t, d+"/ld.so.conf", "# comment\n/first/lib\ninclude conf.d/*.conf\nhwcap 0 nosegneg\n/last/lib # trailing\n", 0o644)
	write(t, d+"/conf.d/b.conf", "/b/lib,/b/lib2\n", 0o644)
	write(t, d+"/conf.d/a.conf", "/a/lib=libc6\ninclude "+d+"/ld.so.conf\n", 0o644) // a loop
	write(t, d+"/conf.d/c.txt", "/not/included\n", 0o644)
	got := readLdSoConf(d + "/ld.so.conf")
	want := []string{"/first/lib", "/a/lib", "/b/lib", "/b/lib2", "/last/lib"}
	if !slices.Equal(got, want) {
		t.Errorf("readLdSoConf = %q, want %q", got, want)
	}
	if got := readLdSoConf(d + "/missing.conf"); len(got) != 0 {
		t.Errorf("a missing ld.so.conf gave %q", got)
	}
}

// TestNeededByPath: a library linked by path without a soname is recorded
// in DT_NEEDED as that path and loaded from there, without any search.
func TestNeededByPath(t *testing.T) {
	needGCC(t)
	d := tmpDir(t)
	lib, prog := d+"/lib/libnosoname.so", d+"/prog"
	os.MkdirAll(d+"/lib", 0o755)
	gcc(t, libSrc, "-shared", "-fPIC", "-o", lib)
	gcc(t, mainSrc, "-o", prog, lib)
	run(t, prog, 0)
	res := resolve(t, prog, noSystem(t))
	wantFiles(t, res, lib)
	wantNoMissing(t, res)

	os.Remove(lib)
	res = resolve(t, prog, noSystem(t))
	if len(res.Missing) != 1 || res.Missing[0].Name != lib || !strings.Contains(res.Missing[0].Reason, "does not exist") {
		t.Errorf("Missing = %+v", res.Missing)
	}
}
