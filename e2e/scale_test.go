package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Many grants (issue 27, item 2): a thousand read grants that are all the
// entries of one directory become one bind of the directory, each entry
// keeping its own Landlock rule, and init never holds a descriptor per
// grant (its descriptor table stays small). What the view shows is the
// same as with a bind per grant, except an entry the host creates in the
// directory during the run, which shows by name and cannot be read.
func TestManyGrants(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	grants := func(dir string, names []string) []string {
		var args []string
		for _, n := range names {
			args = append(args, "--read", filepath.Join(dir, n))
		}
		return args
	}
	entries := func(d *daily, dir string, n int) []string {
		var names []string
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("g%04d", i)
			d.file(filepath.Join(dir, name, "f"), "in-"+name+"\n", 0o644)
			names = append(names, name)
		}
		return names
	}

	// runLate runs the agent with a read grant of every entry of dir,
	// and has the host create dir/late while it runs.
	runLate := func(t *testing.T, d *daily, dir string, names []string) string {
		late := filepath.Join(dir, "late")
		script := fmt.Sprintf(`cat %[1]s/g0000/f %[1]s/g0999/f
echo "member-mounts=$(awk '$5 ~ "^%[1]s/" {print $5}' /proc/self/mountinfo | sort -u | wc -l)"
echo "parent-mounts=$(awk '$5 == "%[1]s" {print $5}' /proc/self/mountinfo | sort -u | wc -l)"
grep FDSize /proc/1/status
touch %[1]s/g0001/x 2>/dev/null && echo wrote-into-grant
echo ready
i=0; while [ ! -e %[1]s/late ] && [ $i -lt 40 ]; do sleep 0.05; i=$((i+1)); done
cat %[1]s/late 2>&1
true`, dir)
		cmd := exec.Command(d.bin, append(append([]string{"--sandbox-backend", "landlock", "--offline"},
			grants(dir, names)...), "shell", "-c", script)...)
		cmd.Dir = d.work
		cmd.Env = withCover([]string{"HOME=" + d.home, "PATH=" + d.path, "LANG=C.UTF-8", "SHELL=/bin/sh"})
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			out.WriteString(line + "\n")
			if line == "ready" {
				// The host creates an entry in the directory while
				// the agent runs.
				d.file(late, "SECRET-LATE\n", 0o644)
			}
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("the run failed (%v): %s%s", err, out.String(), stderr.String())
		}
		got := out.String()
		for _, want := range []string{"in-g0000", "in-g0999", "ready"} {
			if !strings.Contains(got, want) {
				t.Errorf("want %q inside: %s", want, got)
			}
		}
		if strings.Contains(got, "wrote-into-grant") {
			t.Errorf("a read grant was writable: %s", got)
		}
		if strings.Contains(got, "SECRET-LATE") {
			t.Errorf("the entry the host created during the run was readable: %s", got)
		}
		m := regexp.MustCompile(`FDSize:\s+(\d+)`).FindStringSubmatch(got)
		if m == nil {
			t.Fatalf("no FDSize of init: %s", got)
		}
		// A thousand descriptors held at once need a table of 1,024 or
		// more; growing it waits for RCU grace periods.
		if n, _ := strconv.Atoi(m[1]); n >= 1024 {
			t.Errorf("init's descriptor table grew to %d entries for 1,000 grants", n)
		}
		// Control: outside, the late entry is readable.
		if b, err := os.ReadFile(late); err != nil || !strings.Contains(string(b), "SECRET-LATE") {
			t.Fatalf("control: %v %q", err, b)
		}
		return got
	}

	t.Run("thousand-siblings-one-bind", func(t *testing.T) {
		// Outside /tmp: the view's private /tmp has a Landlock rule of
		// its own, which would reach what the host adds to a joined
		// directory below it (the next row).
		if base, err := os.UserHomeDir(); err != nil || strings.HasPrefix(base, "/tmp/") {
			t.Skipf("needs a home directory outside /tmp (HOME=%q)", base)
		}
		d := newDaily(t)
		dir := homeTempDir(t, ".agent-sandbox-e2e-grants-")
		got := runLate(t, d, dir, entries(d, dir, 1000))
		if !strings.Contains(got, "member-mounts=0") || !strings.Contains(got, "parent-mounts=1") {
			t.Errorf("the 1,000 grants are not one bind of their directory: %s", got)
		}
		// The late entry shows by name, its content refused.
		if !strings.Contains(got, "Permission denied") {
			t.Errorf("reading the entry the host created during the run was not refused: %s", got)
		}
	})

	t.Run("under-the-private-tmp-a-bind-per-grant", func(t *testing.T) {
		d := newDaily(t)
		dir := filepath.Join(d.home, "many")
		got := runLate(t, d, dir, entries(d, dir, 1000))
		if !strings.Contains(got, "member-mounts=1000") || !strings.Contains(got, "parent-mounts=0") {
			t.Errorf("the 1,000 grants under /tmp are not a bind each: %s", got)
		}
		if !strings.Contains(got, "No such file") {
			t.Errorf("the entry the host created during the run was in the view: %s", got)
		}
	})

	t.Run("an-ungranted-sibling-keeps-a-bind-per-grant", func(t *testing.T) {
		d := newDaily(t)
		dir := filepath.Join(d.home, "some")
		names := entries(d, dir, 20)
		d.file(filepath.Join(dir, "secret", "f"), "SECRET-SIBLING\n", 0o644)
		script := fmt.Sprintf(`cat %[1]s/g0019/f
ls %[1]s | wc -l
cat %[1]s/secret/f 2>&1
echo "member-mounts=$(awk '$5 ~ "^%[1]s/" {print $5}' /proc/self/mountinfo | sort -u | wc -l)"
true`, dir)
		out, code := d.run(true, script, grants(dir, names)...)
		if code != 0 || !strings.Contains(out, "in-g0019") || !strings.Contains(out, "member-mounts=20") {
			t.Errorf("the 20 grants beside an ungranted sibling are not 20 binds (exit %d): %s", code, out)
		}
		if strings.Contains(out, "SECRET-SIBLING") || !strings.Contains(out, "\n20\n") {
			t.Errorf("the ungranted sibling was in the view: %s", out)
		}
		out, _ = d.run(false, fmt.Sprintf("cat %s/secret/f", dir))
		if !strings.Contains(out, "SECRET-SIBLING") {
			t.Fatalf("control: unsandboxed the sibling was not readable: %s", out)
		}
	})
}
