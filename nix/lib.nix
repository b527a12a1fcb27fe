# The logic that turns options into agent folders, as plain functions of
# nixpkgs' `lib`: no `pkgs`, no derivations. module.nix, profiles/default.nix
# and the flake call these; nix/tests/eval.nix evaluates them with
# `nix-instantiate --eval --strict` against nixpkgs' lib (or, where no copy of
# it is on the machine, against nix/tests/lib-stub.nix, a named stand-in).
#
# Only these lib functions are used, so that the stand-in stays small:
# lib.filterAttrs, lib.mapAttrs, lib.mapAttrsToList, lib.concatMap,
# lib.unique, lib.hasPrefix, lib.concatStringsSep, lib.optional,
# lib.optionalAttrs, lib.elem.
{ lib }:
rec {
  # The agent id rule of internal/agent (CheckID): 1-64 characters of
  # a-z, 0-9, '.', '_' and '-', starting with a letter or digit.
  validAgentId =
    name: builtins.stringLength name <= 64 && builtins.match "[a-z0-9][a-z0-9._-]*" name != null;

  # The keys agent.toml accepts (internal/agent/config.go, Config and
  # SbxConfig; internal/agent TestNixModuleKeys compares them). The module's
  # typed `settings` options are exactly these.
  agentTomlKeys = [
    "command"
    "args"
    "description"
    "config_paths"
    "read_paths"
    "code_paths"
    "code_keys"
    "env"
    "set_env"
    "exec_paths"
    "allow_edit"
    "loopback_env"
    "nested_userns"
    "tmp_size"
    "memory_max"
    "credentials"
    "expected_refusals"
    "checkpoint"
    "sbx"
  ];
  agentTomlSbxKeys = [
    "install"
    "version_command"
    "home"
  ];

  # The keys of sandbox/nono.json and sandbox/sbx.json (internal/sandboxfile).
  nonoJsonKeys = {
    top = [
      "sandbox"
      "filesystem"
      "network"
      "unsafe_macos_seatbelt_rules"
    ];
    filesystem = [
      "read"
      "write"
      "allow"
      "unix_socket_dir_bind"
    ];
    network = [
      "block"
      "allow_domain"
      "open_port"
      "listen_port"
      "network_profile"
    ];
  };
  sbxJsonKeys = {
    top = [
      "sandbox"
      "filesystem"
      "network"
    ];
    filesystem = [
      "read"
      "write"
      "allow"
    ];
    network = [
      "block"
      "allow_domain"
    ];
  };

  # The program of a package, as an absolute store path:
  # "<out>/bin/<meta.mainProgram>" (the package name when mainProgram is
  # unset, as lib.getExe does). Rendering this string into a file keeps the
  # package alive and follows every nixpkgs bump.
  exe =
    pkg:
    let
      main = pkg.meta.mainProgram or (pkg.pname or (builtins.parseDrvName pkg.name).name);
    in
    "${pkg}/bin/${main}";

  # The placeholder name of a package in a template: its main program, so
  # @claude@, @git@, @rg@.
  placeholderName =
    pkg: pkg.meta.mainProgram or (pkg.pname or (builtins.parseDrvName pkg.name).name);

  # Drop nulls, empty lists and empty attribute sets, recursively (TOML has no
  # null, and an unset option should not appear in the file). The top value is
  # kept even when it ends up empty: `{}` is a valid nono.json that opts in.
  clean =
    v:
    if builtins.isAttrs v && !(v ? outPath) then
      lib.filterAttrs (_: x: x != null && x != [ ] && x != { }) (lib.mapAttrs (_: clean) v)
    else if builtins.isList v then
      map clean v
    else
      v;

  # agent.toml's contents for one agent of the module: the settings, with
  # `command` from `package` and `exec_paths` from `execPackages` (each as
  # "<store path>/bin/<mainProgram>"), ahead of any literal exec_paths.
  agentToml =
    agent:
    let
      s = clean agent.settings;
      execs = lib.unique (map exe agent.execPackages ++ (s.exec_paths or [ ]));
    in
    s
    // lib.optionalAttrs (agent.package != null) { command = exe agent.package; }
    // lib.optionalAttrs (execs != [ ]) { exec_paths = execs; };

  # The folder's files as { "<relative path>" = { format; value; } }, before
  # any pkgs.formats rendering. sandbox.nono / sandbox.sbx null: no file.
  agentFiles =
    agent:
    {
      "agent.toml" = {
        format = "toml";
        value = agentToml agent;
      };
    }
    // lib.optionalAttrs (agent.sandbox.nono != null) {
      "sandbox/nono.json" = {
        format = "json";
        value = clean agent.sandbox.nono;
      };
    }
    // lib.optionalAttrs (agent.sandbox.sbx != null) {
      "sandbox/sbx.json" = {
        format = "json";
        value = clean agent.sandbox.sbx;
      };
    };

  # The @name@ placeholders that occur in a template text, in order, each
  # once. Same identifier pattern as replaceVarsWith's leftover check.
  placeholdersIn =
    text:
    lib.unique (
      map builtins.head (
        builtins.filter builtins.isList (builtins.split "@([a-zA-Z_][0-9A-Za-z_'-]*)@" text)
      )
    );

  # The replacements for one template file: only the names that occur in it
  # (replaceVarsWith fails on a name that does not occur), each rendered to a
  # string (a package becomes its program's store path). A placeholder with
  # no replacement is an evaluation error naming the file, before
  # replaceVarsWith's own leftover check would fail the build.
  replacementsFor =
    file: text: replacements:
    let
      wanted = placeholdersIn text;
      missing = builtins.filter (n: !(replacements ? ${n})) wanted;
      render = v: if builtins.isString v then v else exe v;
    in
    if missing != [ ] then
      throw "agent-sandbox: ${file}: no replacement for ${
        lib.concatStringsSep ", " (map (n: "@${n}@") missing)
      }; add it to `replacements` (or the package to `package`/`execPackages`)"
    else
      lib.mapAttrs (_: render) (lib.filterAttrs (n: _: lib.elem n wanted) replacements);

  # The replacements a module agent gets without asking: each of its packages
  # under its main program's name.
  packageReplacements =
    agent:
    builtins.listToAttrs (
      map (p: {
        name = placeholderName p;
        value = p;
      }) (lib.optional (agent.package != null) agent.package ++ agent.execPackages)
    );

  # Assertions over the module's enabled agents, as NixOS `assertions`
  # entries. `agents` is the attrset of enabled agents; `files` maps an agent
  # name to its agentFiles (null for a rendered profile, whose agent.toml is
  # checked by doctor at build time instead).
  agentAssertions =
    agents:
    let
      names = builtins.attrNames agents;
      wrappers = builtins.filter (w: w != null) (map (n: agents.${n}.wrapper) names);
      dupWrappers = lib.unique (
        builtins.filter (w: builtins.length (builtins.filter (x: x == w) wrappers) > 1) wrappers
      );
      perAgent =
        name:
        let
          a = agents.${name};
          toml = if a.profile == null then agentToml a else { };
          execs = toml.exec_paths or [ ];
          cmd = toml.command or null;
        in
        [
          {
            assertion = validAgentId name;
            message = "programs.agent-sandbox.agents.${name}: \"${name}\" is not a valid agent id: 1-64 characters of a-z, 0-9, '.', '_' and '-', starting with a letter or digit";
          }
          {
            assertion = builtins.all (p: lib.hasPrefix "/" p) execs;
            message = "programs.agent-sandbox.agents.${name}.settings.exec_paths: every entry must be an absolute path (got ${
              lib.concatStringsSep ", " (builtins.filter (p: !(lib.hasPrefix "/" p)) execs)
            }); name packages in execPackages instead";
          }
          {
            assertion = a.profile != null || cmd != null;
            message = "programs.agent-sandbox.agents.${name}: no command; set `package` (rendered as <store path>/bin/<mainProgram>), `settings.command` or `profile`";
          }
          {
            assertion =
              cmd == null
              || cmd == "$SHELL"
              || lib.hasPrefix "/" cmd
              || builtins.match ".*/.*" cmd == null;
            message = "programs.agent-sandbox.agents.${name}.settings.command: \"${toString cmd}\" is a relative path; use a name looked up on PATH or an absolute path";
          }
          {
            assertion = a.wrapper == null || builtins.match "[A-Za-z0-9._+-]+" a.wrapper != null;
            message = "programs.agent-sandbox.agents.${name}.wrapper: \"${toString a.wrapper}\" is not a command name (letters, digits, '.', '_', '+', '-')";
          }
          {
            assertion = a.wrapper != "agent-sandbox";
            message = "programs.agent-sandbox.agents.${name}.wrapper: \"agent-sandbox\" would shadow the launcher itself";
          }
        ];
    in
    lib.concatMap perAgent names
    ++ [
      {
        assertion = dupWrappers == [ ];
        message = "programs.agent-sandbox.agents: wrapper names must be unique; used more than once: ${lib.concatStringsSep ", " dupWrappers}";
      }
    ];

  # Warnings about the kernel the configuration boots: the built-in engine
  # needs Landlock in the LSM list, and its full view needs unprivileged user
  # namespaces. `lsm` is security.lsm ([] when unset), `kernelParams` is
  # boot.kernelParams, `allowUserNamespaces` is security.allowUserNamespaces,
  # `maxUserNamespaces` is the user.max_user_namespaces sysctl (null if unset).
  kernelWarnings =
    {
      lsm,
      kernelParams,
      allowUserNamespaces,
      maxUserNamespaces ? null,
    }:
    let
      lsmParams = builtins.filter (p: lib.hasPrefix "lsm=" p) kernelParams;
      lsmLists = map (
        p: builtins.filter builtins.isString (builtins.split "," (builtins.substring 4 (builtins.stringLength p) p))
      ) lsmParams;
      # The kernel takes the last lsm= on its command line.
      effective =
        if lsmLists != [ ] then
          builtins.elemAt lsmLists (builtins.length lsmLists - 1)
        else if lsm != [ ] then
          lsm
        else
          null;
      noLandlock = effective != null && !(lib.elem "landlock" effective);
      noUserns = !allowUserNamespaces || maxUserNamespaces == 0;
    in
    lib.optional noLandlock "programs.agent-sandbox: Landlock is not in the kernel's LSM list (lsm=${lib.concatStringsSep "," effective}): the built-in landlock engine cannot run and agent-sandbox refuses such runs with exit 125; add \"landlock\" to security.lsm"
    ++ lib.optional noUserns "programs.agent-sandbox: unprivileged user namespaces are disabled (security.allowUserNamespaces or user.max_user_namespaces): the landlock engine runs without its namespace view (Landlock and seccomp only) and refuses what that cannot enforce; `agent-sandbox doctor` says which mode this host gets";
}
