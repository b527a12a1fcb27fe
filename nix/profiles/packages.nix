# Which nixpkgs attribute replaces each @placeholder@ of the templates in this
# directory. The placeholder is the package's main program (meta.mainProgram),
# and it is rendered as <store path>/bin/<placeholder>. nix/tests/eval.nix
# checks that every placeholder of every template is listed here.
{
  claude = "claude-code";
  pi = "pi-coding-agent";
  codex = "codex";
  git = "git";
  rg = "ripgrep";
  fd = "fd";
  bash = "bash";
}
