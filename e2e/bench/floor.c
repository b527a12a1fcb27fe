// floor: the kernel work of one sandboxed start, with nothing else around
// it. It makes the same kinds of calls agent-sandbox's built-in engine makes
// to start /bin/true (new user, mount, PID, IPC, UTS and, with --offline,
// network namespaces; a uid/gid map; a tmpfs root with read-only binds of
// /usr and /etc, /dev, /proc and /tmp; pivot_root; loopback up; a fresh
// session keyring; resource limits; then, in the agent, a Landlock ruleset,
// capabilities dropped, no_new_privs and a seccomp filter) and nothing
// more: no configuration, no planning, no runtime start. It is the floor
// e2e/bench/launch.sh compares against, built there with the system C
// compiler (static) and never committed as a binary.
//
// Usage: floor [--offline] PROGRAM [ARGS...]
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/keyctl.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

// Newer Landlock access rights than old kernel headers know.
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#define SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define SCOPE_SIGNAL (1ULL << 1)

// The ruleset attribute of Landlock ABI 6 (older headers lack its fields).
struct ruleset_attr {
	__u64 handled_access_fs;
	__u64 handled_access_net;
	__u64 scoped;
};

static void die(const char *what) {
	perror(what);
	_exit(125);
}

static char **agent;
static int offline;
static int syncfd[2];

static void writefile(const char *path, const char *s) {
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, s, strlen(s)) < 0)
		die(path);
	close(fd);
}

static void bind_ro(const char *src, const char *dst) {
	mkdir(dst, 0755);
	if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
		die(src);
	if (mount(NULL, dst, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
		die(dst);
}

static void link_if(const char *name) {
	char host[64], buf[256];
	snprintf(host, sizeof host, "/%s", name);
	ssize_t n = readlink(host, buf, sizeof buf - 1);
	if (n < 0)
		return;
	buf[n] = 0;
	symlinkat(buf, AT_FDCWD, name);
}

static void add_rule(int ruleset, const char *path, __u64 access) {
	int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return;
	struct landlock_path_beneath_attr pb = {.allowed_access = access, .parent_fd = fd};
	if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
		die("landlock_add_rule");
	close(fd);
}

// confine gives the calling process the agent's confinement and execs it.
static void confine_and_exec(void) {
	const __u64 read = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
	const __u64 all = read | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
			  LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |
			  LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
			  LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM | LANDLOCK_ACCESS_FS_REFER |
			  LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV;
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 5) {
		fprintf(stderr, "floor: needs Landlock ABI 5 or later (kernel has %ld)\n", abi);
		_exit(125);
	}
	struct ruleset_attr ra = {.handled_access_fs = all};
	size_t size = 2 * sizeof(__u64);
	if (abi >= 6) {
		ra.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL;
		size = sizeof ra;
	}
	int ruleset = syscall(SYS_landlock_create_ruleset, &ra, size, 0);
	if (ruleset < 0)
		die("landlock_create_ruleset");
	add_rule(ruleset, "/usr", read);
	add_rule(ruleset, "/etc", read & ~LANDLOCK_ACCESS_FS_EXECUTE);
	add_rule(ruleset, "/proc", read & ~LANDLOCK_ACCESS_FS_EXECUTE);
	add_rule(ruleset, "/dev", all);
	add_rule(ruleset, "/tmp", all);
	// Capabilities: none, and none to regain.
	for (int c = 0; c <= CAP_LAST_CAP; c++)
		prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {0};
	if (syscall(SYS_capset, &h, d) < 0)
		die("capset");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die("no_new_privs");
	// seccomp: refuse TIOCSTI and the keyring calls, allow the rest.
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI, 4, 5),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_keyctl, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_add_key, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		die("seccomp");
	if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
		die("landlock_restrict_self");
	close(ruleset);
	execvp(agent[0], agent);
	die(agent[0]);
}

static int init(void *arg) {
	(void)arg;
	char c;
	close(syncfd[1]);
	if (read(syncfd[0], &c, 1) != 1)
		_exit(125);
	if (mount("", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		die("private /");
	if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0 || chdir("/tmp") < 0)
		die("root tmpfs");
	bind_ro("/usr", "usr");
	bind_ro("/etc", "etc");
	link_if("bin");
	link_if("lib");
	link_if("lib64");
	link_if("sbin");
	mkdir("dev", 0755);
	if (mount("tmpfs", "dev", "tmpfs", MS_NOSUID, "mode=0755") < 0)
		die("/dev");
	close(open("dev/null", O_CREAT | O_WRONLY | O_CLOEXEC, 0666));
	if (mount("/dev/null", "dev/null", NULL, MS_BIND, NULL) < 0)
		die("/dev/null");
	mkdir("tmp", 01777);
	if (mount("tmpfs", "tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0)
		die("/tmp");
	mkdir("proc", 0555);
	if (mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		die("/proc");
	if (syscall(SYS_pivot_root, ".", ".") < 0 || umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		die("pivot_root");
	if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0)
		die("read-only root");
	if (offline) {
		int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		struct ifreq ifr = {0};
		strcpy(ifr.ifr_name, "lo");
		if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
			die("lo");
		ifr.ifr_flags |= IFF_UP;
		if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
			die("lo up");
		close(s);
	}
	if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0)
		die("keyring");
	struct rlimit nproc = {4096, 4096}, nofile = {4096, 4096};
	setrlimit(RLIMIT_NPROC, &nproc);
	setrlimit(RLIMIT_NOFILE, &nofile);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		confine_and_exec();
	}
	int status = 0;
	for (;;) {
		int ws;
		pid_t p = wait(&ws);
		if (p == pid)
			status = ws;
		if (p < 0 && errno == ECHILD)
			break;
		if (p == pid)
			kill(-1, SIGKILL);
	}
	if (WIFSIGNALED(status))
		_exit(128 + WTERMSIG(status));
	_exit(WEXITSTATUS(status));
}

static char stack[256 * 1024] __attribute__((aligned(16)));

int main(int argc, char **argv) {
	int i = 1;
	if (i < argc && strcmp(argv[i], "--offline") == 0) {
		offline = 1;
		i++;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: floor [--offline] PROGRAM [ARGS...]\n");
		return 125;
	}
	agent = argv + i;
	if (pipe2(syncfd, O_CLOEXEC) < 0)
		die("pipe");
	int flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | SIGCHLD;
	if (offline)
		flags |= CLONE_NEWNET;
	uid_t uid = geteuid();
	gid_t gid = getegid();
	pid_t pid = clone(init, stack + sizeof stack, flags, NULL);
	if (pid < 0)
		die("clone");
	close(syncfd[0]);
	char path[64], map[64];
	snprintf(map, sizeof map, "%d %d 1\n", uid, uid);
	snprintf(path, sizeof path, "/proc/%d/uid_map", pid);
	writefile(path, map);
	snprintf(path, sizeof path, "/proc/%d/setgroups", pid);
	writefile(path, "deny");
	snprintf(map, sizeof map, "%d %d 1\n", gid, gid);
	snprintf(path, sizeof path, "/proc/%d/gid_map", pid);
	writefile(path, map);
	if (write(syncfd[1], "x", 1) != 1)
		die("sync");
	close(syncfd[1]);
	int ws;
	if (waitpid(pid, &ws, 0) < 0)
		die("waitpid");
	if (WIFSIGNALED(ws))
		return 128 + WTERMSIG(ws);
	return WEXITSTATUS(ws);
}
