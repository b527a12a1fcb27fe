# NixOS VM tests (testers.runNixOSTest), Linux only, run by `nix flake check`.
# Each node imports the module by relative path, as sops-nix's tests do.
#
#   module      (a) the module installs; `agents` lists the /etc folders;
#                   doctor passes as an ordinary user; the folders name the
#                   current store paths; a wrapper runs its agent
#   escapes     (b) the e2e escape suite, prebuilt, as an ordinary user against
#                   the installed agent-sandbox, under landlock and nono, failing
#                   on any skip; a second node is the network target
#   closures    (c) an agent behind a makeWrapper chain and a binary linking
#                   libgcc_s start under both backends; a command_policies
#                   profile runs under the flake's nono (which has the ELF
#                   resolution fix, natively from 0.78.0, else patched)
#   stale       (d) a specialisation with a bumped agent re-renders the folder
#                   and doctor passes; a copy naming a dead store path fails
#   failclosed  (e) Landlock removed from the LSM list and user namespaces
#                   off: runs exit 125 and nothing runs unsandboxed
#   scope       (f) alice's systemd user manager (lingering) bounds a run:
#                   the agent runs in an agent-sandbox-*.scope whose
#                   memory.max and pids.max are the run's; memory_max = "64M"
#                   gets a 512 MiB allocation killed, "none" lets it through;
#                   the same in the weaker sandbox (a node without user
#                   namespaces), and under nono (its --memory) from a scope
#                   of alice's user manager, refused from outside one
#
# Written against nixpkgs' documented interfaces; not run on the machines this
# was written on (no nixpkgs, no KVM there). README, "Nix".
{
  lib,
  pkgs,
  agent-sandbox,
  nono,
  e2e-tests,
}:
let
  inherit (pkgs) testers;

  common =
    { pkgs, ... }:
    {
      imports = [ ../module.nix ];
      programs.agent-sandbox = {
        enable = true;
        package = agent-sandbox;
        nonoPackage = nono;
      };
      users.users.alice = {
        isNormalUser = true;
        uid = 1000;
      };
      # Landlock ABI 6 (signal and abstract-socket scoping) needs Linux 6.12.
      boot.kernelPackages = pkgs.linuxPackages_latest;
      environment.systemPackages = [
        pkgs.curl
        pkgs.python3
        nono
      ];
      virtualisation.memorySize = 2048;
    };

  # Python helpers shared by the test scripts.
  helpers = ''
    import shlex

    def as_alice(machine, cmd, code=0):
        """Run cmd as alice in ~/project; assert its exit status; return output."""
        full = "su - alice -c " + shlex.quote("mkdir -p ~/project && cd ~/project && " + cmd)
        status, out = machine.execute(full)
        print(f"[alice] {cmd}\n(exit {status})\n{out}")
        assert status == code, f"{cmd}: exit {status}, want {code}"
        return out
  '';

  # An agent reached through two makeWrapper layers (wrapper -> wrapper -> ELF).
  wrappedAgent =
    pkgs.runCommand "wrapped-agent"
      {
        nativeBuildInputs = [ pkgs.makeWrapper ];
        meta.mainProgram = "wrapped-agent";
      }
      ''
        mkdir -p $out/bin
        makeWrapper ${pkgs.hello}/bin/hello $out/bin/inner-agent --set AGENT_LAYER inner
        makeWrapper $out/bin/inner-agent $out/bin/wrapped-agent --set AGENT_LAYER outer
      '';

  # A binary whose closure reaches libgcc_s.so.1 (RPATH-less, needs libc.so.6
  # by bare soname: nolabs-ai/nono#1649).
  gccsProbe =
    pkgs.runCommandCC "gccs-probe"
      {
        meta.mainProgram = "gccs-probe";
      }
      ''
        mkdir -p $out/bin
        printf '#include <stdio.h>\nint main(void){puts("libgcc_s probe ran");return 0;}\n' > m.c
        $CC -o $out/bin/gccs-probe m.c -Wl,--no-as-needed -lgcc_s
        $READELF -d $out/bin/gccs-probe | grep -q 'libgcc_s.so.1'
      '';

  # writeShellScriptBin sets meta.mainProgram to its name.
  bumpy =
    v:
    pkgs.writeShellScriptBin "bumpy" ''
      echo "bumpy ${v}"
    '';
in
{
  # (a)
  module = testers.runNixOSTest {
    name = "agent-sandbox-module";
    nodes.machine = {
      imports = [ common ];
      programs.agent-sandbox.agents.hello = {
        package = pkgs.hello;
        execPackages = [ pkgs.git ];
        settings.description = "GNU hello, sandboxed";
        sandbox.nono.network.block = true;
        wrapper = "hello-sandboxed";
      };
      programs.agent-sandbox.agents.rg = {
        profile = ./fixtures/rg;
        package = pkgs.ripgrep;
      };
    };
    testScript = helpers + ''
      machine.wait_for_unit("multi-user.target")

      # The folders are the rendered store paths of this system.
      machine.succeed("grep -F 'command = \"${pkgs.hello}/bin/hello\"' /etc/agent-sandbox/agents/hello/agent.toml")
      machine.succeed("grep -F '${pkgs.git}/bin/git' /etc/agent-sandbox/agents/hello/agent.toml")
      machine.succeed("grep -F '${pkgs.ripgrep}/bin/rg' /etc/agent-sandbox/agents/rg/agent.toml")
      machine.succeed("test -f /etc/agent-sandbox/agents/hello/sandbox/nono.json")
      machine.fail("test -e /etc/agent-sandbox/agents/hello/sandbox/sbx.json")

      # `agents` finds them as system config, for an ordinary user (the
      # binary has no `agents --json` yet: this reads its table).
      out = as_alice(machine, "agent-sandbox agents")
      for name in ["hello", "rg"]:
          line = next((l for l in out.splitlines() if l.split()[:1] == [name]), None)
          assert line is not None and "system config" in line, f"{name} not listed from /etc:\n{out}"

      # doctor passes as alice (host checks included), on every agent found.
      as_alice(machine, "agent-sandbox doctor")
      as_alice(machine, "agent-sandbox doctor --json hello rg > /tmp/doctor.json")

      # The agent runs sandboxed, through the wrapper and by name.
      assert "Hello, world!" in as_alice(machine, "hello-sandboxed")
      assert "Hello, world!" in as_alice(machine, "agent-sandbox --sandbox-backend landlock hello")

      # No setuid wrapper for agent-sandbox or nono.
      machine.fail("find /run/wrappers -name 'agent-sandbox*' -o -name 'nono*' | grep .")
    '';
  };

  # (b)
  escapes = testers.runNixOSTest {
    name = "agent-sandbox-escapes";
    nodes.target = {
      networking.firewall.allowedTCPPorts = [ 80 ];
      services.nginx = {
        enable = true;
        virtualHosts.target.locations."/".return = "200 'target-canary-7f3a'";
      };
    };
    nodes.machine =
      { pkgs, ... }:
      {
        imports = [ common ];
        environment.systemPackages = [ e2e-tests ];
        # The probes look for /usr/bin/python3, as on the CI hosts.
        systemd.tmpfiles.rules = [ "L+ /usr/bin/python3 - - - - ${pkgs.python3}/bin/python3" ];
        # Let the TIOCSTI attack be real, so its row proves something.
        boot.kernel.sysctl."dev.tty.legacy_tiocsti" = 1;
      };
    testScript = helpers + ''
      start_all()
      target.wait_for_unit("nginx.service")
      machine.wait_for_unit("multi-user.target")
      print(as_alice(machine, "agent-sandbox doctor"))

      # The escape suite, as alice, against the installed binary; any skip fails.
      # The "write /etc" row's control must succeed unsandboxed, so alice may
      # write /etc for the length of the suite (a throwaway VM).
      machine.succeed("chmod 1777 /etc")
      out = as_alice(
          machine,
          "AGENT_SANDBOX_E2E_BIN=$(readlink -f $(command -v agent-sandbox)) "
          + "agent-sandbox-e2e.test -test.v -test.count=1 -test.run 'TestEscapes|TestNono' 2>&1 | tee ~/escapes.log; "
          + "exit ''${PIPESTATUS[0]}",
      )
      machine.succeed("chmod 755 /etc")
      skips = [l for l in out.splitlines() if "--- SKIP" in l]
      assert not skips, "skipped rows:\n" + "\n".join(skips)
      for backend in ["landlock", "nono"]:
          assert f"--- PASS: TestEscapes/{backend} " in out, f"TestEscapes/{backend} did not pass"

      # The second node: reachable without the sandbox (control), not offline,
      # not when only another host is allowed; allowed under nono's proxy.
      assert "target-canary-7f3a" in as_alice(machine, "curl -sf --max-time 10 http://target/")
      for backend in ["landlock", "nono"]:
          out = as_alice(machine, f"agent-sandbox --sandbox-backend {backend} --offline shell -c 'curl -s --max-time 10 http://target/; echo rc=$?'")
          assert "target-canary-7f3a" not in out, f"{backend} --offline reached the target"
          status, out = machine.execute("su - alice -c " + shlex.quote(
              f"cd ~/project && agent-sandbox --sandbox-backend {backend} --allow-host example.invalid shell -c 'curl -s --max-time 10 http://target/'"))
          assert "target-canary-7f3a" not in out, f"{backend} reached a host that was not allowed"
      out = as_alice(machine, "agent-sandbox --sandbox-backend nono --allow-host target shell -c 'curl -s --max-time 20 http://target/'")
      assert "target-canary-7f3a" in out, "nono --allow-host target did not reach the target"
    '';
  };

  # (c)
  closures = testers.runNixOSTest {
    name = "agent-sandbox-closures";
    nodes.machine = {
      imports = [ common ];
      environment.systemPackages = [ gccsProbe ];
      programs.agent-sandbox.agents.wrapped = {
        package = wrappedAgent;
        sandbox.nono.network.block = true;
      };
      programs.agent-sandbox.agents.gccs = {
        package = gccsProbe;
        sandbox.nono.network.block = true;
      };
    };
    testScript =
      let
        policyProfile = pkgs.writeText "command-policies.json" (
          builtins.toJSON {
            workdir.access = "readwrite";
            command_policies.commands.gccs-probe = {
              executable = "${gccsProbe}/bin/gccs-probe";
              sandbox.fs_read = [ ];
            };
          }
        );
      in
      helpers
      + ''
        machine.wait_for_unit("multi-user.target")
        for backend in ["landlock", "nono"]:
            assert "Hello, world!" in as_alice(machine, f"agent-sandbox --sandbox-backend {backend} wrapped")
            assert "libgcc_s probe ran" in as_alice(machine, f"agent-sandbox --sandbox-backend {backend} gccs")

        # tool-sandbox resolves gccs-probe's ELF closure (libgcc_s -> libc):
        # this is what failed before nolabs-ai/nono#1650 (e2e/nono_elf_test.go
        # reproduces it with nono-cli 0.77.0 outside Nix).
        as_alice(machine, "nono profile validate ${policyProfile}")
        out = as_alice(machine, "NONO_NO_UPDATE_CHECK=1 nono -s run --profile ${policyProfile} --allow-cwd -- ${pkgs.bash}/bin/bash -c gccs-probe")
        assert "libgcc_s probe ran" in out
      '';
  };

  # (d)
  stale =
    let
      # An agent rendered by an older nixpkgs and since garbage-collected:
      # its store path is named here without its context, so it is never
      # built and never reaches the VM's store.
      deadPath = builtins.unsafeDiscardStringContext "${bumpy "0"}/bin/bumpy";
    in
    testers.runNixOSTest {
      name = "agent-sandbox-stale";
      nodes.machine = {
        imports = [ common ];
        programs.agent-sandbox.agents.bumpy = {
          package = bumpy "1";
          sandbox.nono.network.block = true;
        };
        specialisation.bumped.configuration.programs.agent-sandbox.agents.bumpy.package = lib.mkForce (
          bumpy "2"
        );
      };
      testScript = helpers + ''
        machine.wait_for_unit("multi-user.target")
        machine.succeed("grep -F '${bumpy "1"}/bin/bumpy' /etc/agent-sandbox/agents/bumpy/agent.toml")
        assert "bumpy 1" in as_alice(machine, "agent-sandbox --sandbox-backend landlock bumpy")

        machine.succeed("/run/current-system/specialisation/bumped/bin/switch-to-configuration test")
        machine.succeed("grep -F '${bumpy "2"}/bin/bumpy' /etc/agent-sandbox/agents/bumpy/agent.toml")
        as_alice(machine, "agent-sandbox doctor --folders-only bumpy")
        assert "bumpy 2" in as_alice(machine, "agent-sandbox --sandbox-backend landlock bumpy")

        # A hand-made copy naming a dead store path fails doctor and does not run.
        machine.fail("test -e ${deadPath}")
        as_alice(machine, "mkdir -p ~/agents/bumpy && printf 'command = \"%s\"\\n' ${deadPath} > ~/agents/bumpy/agent.toml")
        out = as_alice(machine, "agent-sandbox doctor --folders-only ~/agents/bumpy 2>&1", code=1)
        assert "stale" in out, out
        status, _ = machine.execute("su - alice -c 'cd ~/project && agent-sandbox --sandbox-backend landlock ~/agents/bumpy'")
        assert status in (125, 126, 127), f"a dead command path started? exit {status}"
      '';
    };

  # (e)
  failclosed = testers.runNixOSTest {
    name = "agent-sandbox-failclosed";
    nodes.machine = {
      imports = [ common ];
      security.lsm = lib.mkForce [
        "yama"
        "bpf"
      ];
      # Without user namespaces too: where the kernel has them, the
      # namespace view runs without Landlock (README, "Kernels"); with
      # neither, every built-in run is refused.
      boot.kernel.sysctl."user.max_user_namespaces" = 0;
      programs.agent-sandbox.agents.marker = {
        package = pkgs.writeShellScriptBin "marker" "touch /tmp/ran-unsandboxed";
        sandbox.nono.network.block = true;
      };
    };
    testScript = helpers + ''
      machine.wait_for_unit("multi-user.target")
      machine.fail("grep -qw landlock /sys/kernel/security/lsm")
      out = as_alice(machine, "agent-sandbox doctor 2>&1", code=1)
      assert "andlock" in out

      for args in ["--sandbox-backend landlock", "--sandbox-backend landlock --offline"]:
          as_alice(machine, f"agent-sandbox {args} shell -c 'touch /tmp/ran-unsandboxed'", code=125)
          as_alice(machine, f"agent-sandbox {args} marker", code=125)
          machine.fail("test -e /tmp/ran-unsandboxed")

      # nono needs Landlock too (and is the default backend of both folders):
      # whatever it exits with, nothing ran.
      for args in ["--sandbox-backend nono", ""]:
          for agent in ["marker", "shell -c 'touch /tmp/ran-unsandboxed'"]:
              status, out = machine.execute("su - alice -c " + shlex.quote(
                  f"mkdir -p ~/project && cd ~/project && agent-sandbox {args} {agent}"))
              print(f"{args or 'default backend'}, {agent}, without Landlock: exit {status}\n{out}")
              assert status != 0
              machine.fail("test -e /tmp/ran-unsandboxed")
    '';
  };

  # (f)
  scope =
    let
      scopeNode = {
        imports = [ common ];
        # A user manager for alice from boot, as a desktop login gives.
        users.users.alice.linger = true;
      };
    in
    testers.runNixOSTest {
      name = "agent-sandbox-scope";
      nodes.machine = scopeNode;
      # The weaker sandbox: no user namespaces on this host.
      nodes.weaker = {
        imports = [ scopeNode ];
        boot.kernel.sysctl."user.max_user_namespaces" = 0;
      };
      testScript = helpers + ''
        def folder(node, name, memory_max):
            d = f"/home/alice/agents/{name}"
            toml = f'command = "python3"\nmemory_max = "{memory_max}"\n'
            node.succeed(f"install -d -o alice {d} && printf %s {shlex.quote(toml)} > {d}/agent.toml && chown alice {d}/agent.toml")

        start_all()
        for node, env in [(machine, ""), (weaker, "AGENT_SANDBOX_WEAKER_SANDBOX=1 ")]:
            node.wait_for_unit("multi-user.target")
            node.wait_for_unit("user@1000.service")
            out = as_alice(node, env + "agent-sandbox --dry-run --sandbox-backend landlock shell 2>&1")
            assert "in a systemd user scope made at launch (agent-sandbox-shell-<pid>.scope)" in out, out

            # The agent is in the run's scope, which bounds memory and tasks.
            out = as_alice(node, env + "agent-sandbox --sandbox-backend landlock shell -c 'cat /proc/self/cgroup'")
            assert "/agent-sandbox-shell-" in out and ".scope" in out, out
            node.succeed("su - alice -c " + shlex.quote(
                "cd ~/project && " + env + "agent-sandbox --sandbox-backend landlock shell -c 'sleep 30' >/dev/null 2>&1 &"))
            node.wait_until_succeeds("find /sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service -name 'agent-sandbox-shell-*.scope' | grep .")
            cg = node.succeed("find /sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service -name 'agent-sandbox-shell-*.scope' | head -1").strip()
            mem_total_kb = int(node.succeed("awk '/^MemTotal:/ {print $2}' /proc/meminfo"))
            memory_max = int(node.succeed(f"cat {cg}/memory.max"))
            want = (mem_total_kb * 1024 // 4 * 3) // 4096 * 4096
            assert memory_max == want, f"memory.max {memory_max}, want {want}"
            assert node.succeed(f"cat {cg}/pids.max").strip() == "8192"
            node.succeed("pkill -u alice -f 'sleep 30' || true")

            # memory_max bounds the run: an allocation past it is killed.
            folder(node, "small", "64M")
            folder(node, "unbounded", "none")
            # Touched memory (a repeated byte string), not a lazily zeroed one.
            hog = "-c 'b = bytes([120]) * (512 << 20); print(1234567)'"
            as_alice(node, env + f"agent-sandbox --sandbox-backend landlock ~/agents/small {hog}", code=137)
            assert "1234567" in as_alice(node, env + f"agent-sandbox --sandbox-backend landlock ~/agents/unbounded {hog}")

        # nono applies memory_max as its own --memory, a cgroup it makes in
        # the delegated subtree it runs in: from a scope of alice's user
        # manager (as a desktop terminal's), not from su's session (refused
        # with 125 before nono starts).
        out = as_alice(machine, f"agent-sandbox --sandbox-backend nono ~/agents/small {hog}", code=125)
        assert "cannot be applied under nono (--memory)" in out, out
        in_manager = "XDG_RUNTIME_DIR=/run/user/1000 systemd-run --user --scope --quiet agent-sandbox --sandbox-backend nono "
        as_alice(machine, in_manager + f"~/agents/small {hog}", code=137)
        assert "1234567" in as_alice(machine, in_manager + f"~/agents/unbounded {hog}")
      '';
    };
}
