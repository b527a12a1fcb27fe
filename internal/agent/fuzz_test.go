package agent

import (
	"strings"
	"testing"
)

// FuzzParseConfig: no agent.toml panics, and every error names the file.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		`command = "claude"`,
		"command = \"x\"\nargs = [\"a\"]\nconfig_paths = [\"~/.x\"]\n[set_env]\nA = \"1\"\n[sbx]\ninstall = \"npm:x\"\nversion_command = [\"x\", \"--version\"]\nhome = \"~\"",
		`command = 1`, `[sbx]`, `x = [`,
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
