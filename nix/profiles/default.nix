# packages.<system>.agent-profiles: the templates of this directory rendered
# against a nixpkgs (the flake's locked one), one folder per agent, in one
# store path: <out>/<agent>/agent.toml, <out>/<agent>/sandbox/nono.json.
# Every placeholder becomes the store path of the current package, so the
# folders are correct for exactly this nixpkgs; checks.profiles runs doctor on
# them. claude-code is unfree: pass a pkgs that allows it (the flake allows it
# by predicate for that one package).
{
  lib,
  pkgs,
  agents ? [
    "claude"
    "pi"
    "codex"
  ],
}:
let
  render = pkgs.callPackage ../render.nix { };
  attrFor = import ./packages.nix;
  replacements = lib.mapAttrs (_: attr: pkgs.${attr}) attrFor;
  farm = render.farm "agent-sandbox-profiles" (
    lib.concatMap (name: render.templateEntries name (./. + "/${name}") replacements) agents
  );
in
farm.overrideAttrs (old: {
  passthru = (old.passthru or { }) // {
    names = agents;
  };
})
