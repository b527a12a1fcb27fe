# agent-sandbox, built from a filtered source so that the store path (outside
# every workdir) holds only what the build needs. The flake's nono is put on
# the binary's PATH, so `nix run .#agent-sandbox -- claude` uses it.
{
  lib,
  buildGoModule,
  makeWrapper,
  nono,
  version ? "dev",
}:

buildGoModule {
  pname = "agent-sandbox";
  inherit version;

  src = lib.fileset.toSource {
    root = ../.;
    fileset = lib.fileset.unions [
      ../go.mod
      ../go.sum
      ../cmd
      ../internal
      ../pathresolve
      ../doctor
      ../e2e
    ];
  };

  # `nix/update-vendor-hash.sh` recomputes it after go.mod or go.sum change.
  vendorHash = lib.fileContents ./vendor-hash;

  subPackages = [ "cmd/agent-sandbox" ];
  env.CGO_ENABLED = 0;
  ldflags = [
    "-s"
    "-w"
    "-X main.version=${version}"
  ];

  nativeBuildInputs = [ makeWrapper ];
  # Unit tests only in the package build; checks.go-test runs everything.
  checkFlags = [ "-short" ];

  postInstall = ''
    wrapProgram $out/bin/agent-sandbox --prefix PATH : ${lib.makeBinPath [ nono ]}
  '';

  meta = {
    description = "Run AI coding agents inside a sandbox (nono, Docker Sandboxes, or built-in Landlock)";
    mainProgram = "agent-sandbox";
    platforms = lib.platforms.linux ++ lib.platforms.darwin;
  };
}
