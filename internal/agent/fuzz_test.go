package agent

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParseConfig: no agent.toml panics, and every error names the file.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		`command = "claude"`,
		"command = \"x\"\nargs = [\"a\"]\nconfig_paths = [\"~/.x\"]\n[set_env]\nA = \"1\"\n[sbx]\ninstall = \"npm:x\"\nversion_command = [\"x\", \"--version\"]\nhome = \"~\"",
		`command = 1`, `[sbx]`, `x = [`,
		"command = \"x\"\ntmp_size = \"8G\"\nnested_userns = true\n[[credentials]]\nenv = \"K\"\nbase_url_env = \"B\"\nupstream = \"https://a\"\nheader = \"x-api-key\"\nsource = \"file:~/k\"\n",
		"command = \"x\"\n[[credentials]]\nenv = \"T\"\nupstream = \"https://a\"\nheader = \"basic\"\ngit = true\n",
		"command = \"x\"\n[[credentials]]\nenv = \"G\"\nupstream = \"https://a\"\nheader = \"authorization\"\nintercept = true\nbase_url_args = [\"-c\", \"u={base_url}\"]\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		c, err := ParseConfig("/fuzz/agent.toml", []byte(src))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "/fuzz/agent.toml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if c.Command == "" {
			t.Fatal("accepted a config without a command")
		}
	})
}

// FuzzParseSize: tmp_size never panics, a size it accepts is at least 1M
// and fits an int64, and an error quotes the value.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"", "8G", "512M", "1M", "1023K", "9223372036854775807", "4T", "-1G", "1.5G", "G", "0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		switch {
		case err != nil:
			if !strings.Contains(err.Error(), strconv.Quote(s)) {
				t.Fatalf("error does not quote %q: %v", s, err)
			}
		case s == "":
			if n != 0 {
				t.Fatalf("empty gave %d", n)
			}
		case n < 1<<20:
			t.Fatalf("%q accepted as %d, under 1M", s, n)
		}
	})
}
