# agent-sandbox, built from a filtered source so that the store path (outside
# every workdir) holds only what the build needs. `nono` (the flake passes its
# patched nono, nix/nono.nix) is put on the binary's PATH, so
# `nix run .#agent-sandbox -- claude` uses it; `nono = null` builds a launcher
# with the built-in landlock engine only.
{
  lib,
  buildGoModule,
  makeWrapper,
  nono ? null,
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
  # Not yet confirmed by a build on a Nix host (README, "Nix").
  vendorHash = lib.fileContents ./vendor-hash;

  subPackages = [ "cmd/agent-sandbox" ];
  env.CGO_ENABLED = 0;
  ldflags = [
    "-s"
    "-w"
    "-X main.version=${version}"
  ];

  nativeBuildInputs = lib.optional (nono != null) makeWrapper;
  # Unit tests only in the package build; checks.go-test runs the -short suite
  # of every package, the VM tests run the e2e suites.
  checkFlags = [ "-short" ];

  postInstall = lib.optionalString (nono != null) ''
    wrapProgram $out/bin/agent-sandbox --prefix PATH : ${lib.makeBinPath [ nono ]}
  '';

  passthru = { inherit nono; };

  meta = {
    description = "Run AI coding agents inside a sandbox (nono, Docker Sandboxes, or built-in Landlock)";
    mainProgram = "agent-sandbox";
    platforms = lib.platforms.linux ++ lib.platforms.darwin;
  };
}
