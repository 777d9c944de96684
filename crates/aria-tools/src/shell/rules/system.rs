//! The second half of the program table (`rules.rs`): the network, packages and builds,
//! wrappers, shells and interpreters, what is never run, and the subcommand tables.

use super::*;

/// Programs that reach the network, install or build, wrap other commands, interpret code, or
/// change the system.
pub(super) static SYSTEM_PROGRAMS: &[Entry] =
    &[
        // ---- network
        e(&["curl"], I, "opens a network connection (data can leave the machine)")
            .rules(&[
                not_one_of(
                    "-X",
                    &["GET", "HEAD"],
                    I,
                    "sends a request that can change data on the server",
                ),
                not_one_of(
                    "--request",
                    &["GET", "HEAD"],
                    I,
                    "sends a request that can change data on the server",
                ),
                value("-d", I, "sends data to the server"),
                value("--data", I, "sends data to the server"),
                value("--data-binary", I, "sends data to the server"),
                value("--data-raw", I, "sends data to the server"),
                value("--data-urlencode", I, "sends data to the server"),
                value("--json", I, "sends data to the server"),
                value("-F", I, "uploads a form"),
                value("--form", I, "uploads a form"),
                value("-T", I, "uploads a file"),
                value("--upload-file", I, "uploads a file"),
                path("-o", W, "writes the response to a file"),
                path("--output", W, "writes the response to a file"),
                value("-K", I, "reads options from a file"),
                value("--config", I, "reads options from a file"),
            ])
            .values(&[
                "-H",
                "--header",
                "-A",
                "--user-agent",
                "-u",
                "--user",
                "-e",
                "--referer",
                "-m",
                "--max-time",
                "-w",
                "--write-out",
                "-b",
                "--cookie",
                "-c",
                "--cookie-jar",
                "-x",
                "--proxy",
                "-r",
                "--range",
                "--connect-timeout",
                "--retry",
                "-E",
                "--cert",
                "--cacert",
                "--key",
                "--url",
            ]),
        e(&["wget"], I, "opens a network connection (data can leave the machine)")
            .special(analyze::wget)
            .rules(&[
                value("--post-data", I, "sends data to the server"),
                value("--post-file", I, "sends a file to the server"),
                value("--body-data", I, "sends data to the server"),
                value("--body-file", I, "sends a file to the server"),
                not_one_of(
                    "--method",
                    &["GET", "HEAD"],
                    I,
                    "sends a request that can change data on the server",
                ),
                value("-e", I, "runs a wgetrc command"),
                value("--execute", I, "runs a wgetrc command"),
            ])
            .values(&[
                "-O",
                "--output-document",
                "-o",
                "--output-file",
                "-a",
                "--append-output",
                "-P",
                "--directory-prefix",
                "-U",
                "--user-agent",
                "--header",
                "-i",
                "--input-file",
                "-t",
                "--tries",
                "-T",
                "--timeout",
                "--user",
                "--password",
            ]),
        e(
            &[
                "ssh", "scp", "sftp", "rsync", "ftp", "telnet", "nc", "ncat", "netcat", "socat",
                "mosh",
            ],
            I,
            "connects to another machine",
        ),
        e(
            &[
                "ping",
                "ping6",
                "traceroute",
                "tracepath",
                "mtr",
                "dig",
                "nslookup",
                "host",
                "whois",
                "nmap",
                "aria2c",
                "http",
                "https",
                "xh",
                "httpie",
                "lynx",
                "w3m",
                "links",
            ],
            I,
            "opens a network connection (data can leave the machine)",
        ),
        // ---- packages and builds (they run code from the internet or the project)
        e(&["pip", "pip3"], I, "manages Python packages").sub(PIP, R, I),
        e(&["npm", "pnpm", "yarn", "bun"], I, "manages JavaScript packages and runs scripts")
            .sub(NPM, I, I),
        e(&["cargo"], I, "builds Rust code, running build scripts")
            .sub(CARGO, R, I)
            .values(&["-Z", "--config", "-C"]),
        e(&["go"], I, "builds Go code").sub(GO, R, I),
        e(&["apt-cache"], R, "shows package information").sub(APT_CACHE, R, I),
        e(&["dpkg", "dpkg-query"], I, "installs or removes Debian packages").special(analyze::dpkg),
        e(&["rpm"], I, "installs or removes RPM packages").special(analyze::rpm),
        e(&["pacman", "nix-env"], I, "installs or removes packages").special(analyze::pacman),
        e(&["apt", "apt-get"], I, "installs or removes packages").sub(PACKAGES, R, I),
        // Their queries may refresh metadata or ask an index over the network.
        e(
            &[
                "dnf", "yum", "zypper", "apk", "brew", "snap", "flatpak", "gem", "conda", "mamba",
                "port",
            ],
            I,
            "installs or removes packages, or asks a package index over the network",
        )
        .sub(&[], R, I),
        e(
            &["make", "cmake", "ninja", "meson", "gradle", "mvn", "ant", "bazel", "just"],
            I,
            "runs build recipes (arbitrary commands)",
        ),
        e(&["git"], R, "inspects a repository").special(git::git),
        // ---- wrappers: judged by what they run
        e(&["env"], R, "prints the environment")
            .wrap(Wrap { assignments: true, default: Some("prints the environment"), ..WRAP })
            .values(&["-u", "--unset", "-C", "--chdir"])
            .rules(&[
                value("-S", I, "splits a string into a command ARIA does not parse"),
                value("--split-string", I, "splits a string into a command ARIA does not parse"),
            ]),
        e(&["nice"], R, "runs a command at another priority")
            .wrap(WRAP)
            .values(&["-n", "--adjustment"]),
        e(&["ionice"], R, "runs a command at another I/O priority").wrap(WRAP).values(&[
            "-c",
            "-n",
            "-p",
            "-P",
            "-u",
            "--class",
            "--classdata",
        ]),
        e(&["timeout"], R, "runs a command with a time limit")
            .wrap(Wrap { skip: 1, ..WRAP })
            .values(&["-s", "-k", "--signal", "--kill-after"]),
        e(&["nohup", "setsid", "busybox", "unbuffer"], R, "runs a command").wrap(WRAP),
        e(&["time"], R, "runs a command and reports its time")
            .wrap(WRAP)
            .rules(&[
                path("-o", W, "writes the report to a file"),
                path("--output", W, "writes the report to a file"),
            ])
            .values(&["-f", "--format"]),
        e(&["stdbuf"], R, "runs a command with other buffering")
            .wrap(WRAP)
            .values(&["-i", "-o", "-e", "--input", "--output", "--error"]),
        e(&["xargs"], R, "runs a command on its input")
            .wrap(Wrap { default: Some("runs echo"), detaches_stdin: true, appends: true, ..WRAP })
            .values(&[
                "-I",
                "-L",
                "-n",
                "-P",
                "-s",
                "-d",
                "-E",
                "-a",
                "--arg-file",
                "--delimiter",
                "--max-args",
                "--max-procs",
                "--replace",
                "--max-lines",
                "--eof",
                "--max-chars",
                "--process-slot-var",
            ]),
        e(&["watch"], R, "runs a command repeatedly")
            .wrap(Wrap { script: true, ..WRAP })
            .values(&["-n", "-d", "-q", "--interval", "--differences", "--equexit"]),
        // ---- shells and interpreters
        e(
            &["sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash", "yash"],
            I,
            "runs a shell",
        )
        .interp(SHELL),
        e(&["python", "python2", "python3", "python3.*", "pypy", "pypy3"], I, "runs Python code")
            .interp(Interp { shell: false, code: &["-c", "-m"], values: &["-W", "-X", "-Q"] }),
        e(&["node", "nodejs", "deno", "ts-node"], I, "runs JavaScript code").interp(Interp {
            shell: false,
            code: &["-e", "--eval", "-p", "--print"],
            values: &["-r", "--require", "--import", "--input-type"],
        }),
        e(
            &["perl", "ruby", "lua", "php", "Rscript", "tclsh", "julia", "osascript"],
            I,
            "runs a script",
        )
        .interp(Interp { shell: false, code: &["-e", "-E", "-r"], values: &["-I", "-M"] }),
        // ---- never
        e(
            &["sudo", "doas", "su", "pkexec", "runuser", "chroot", "sudoedit"],
            B,
            "runs commands as another user; ARIA never escalates privileges",
        ),
        e(
            &[
                "mkfs",
                "mkfs.*",
                "mke2fs",
                "mkswap",
                "cfdisk",
                "gdisk",
                "sgdisk",
                "parted",
                "wipefs",
                "blkdiscard",
                "fsck",
                "fsck.*",
                "e2fsck",
                "tune2fs",
                "cryptsetup",
                "losetup",
                "swapoff",
                "hdparm",
            ],
            B,
            "formats or repartitions disks",
        ),
        e(
            &["shutdown", "reboot", "halt", "poweroff", "init", "telinit", "killall5"],
            B,
            "stops or restarts the machine",
        ),
        e(
            &["umount", "insmod", "rmmod", "modprobe", "setenforce"],
            B,
            "changes the system configuration",
        ),
        // Their listing forms (`mount`, `sysctl -a`, `iptables -L`, `fdisk -l`) only read.
        e(
            &[
                "mount",
                "sysctl",
                "iptables",
                "ip6tables",
                "nft",
                "ufw",
                "firewall-cmd",
                "swapon",
                "fdisk",
                "sfdisk",
            ],
            B,
            "changes the system configuration",
        )
        .special(analyze::admin),
        e(
            &[
                "passwd", "chpasswd", "useradd", "userdel", "usermod", "groupadd", "groupdel",
                "visudo", "chsh", "chfn", "adduser", "deluser",
            ],
            B,
            "changes user accounts",
        ),
    ];

pub(super) static SYSTEMCTL: &[Entry] = &[
    e(
        &[
            "status",
            "show",
            "cat",
            "list-units",
            "list-unit-files",
            "list-timers",
            "list-sockets",
            "is-active",
            "is-enabled",
            "is-failed",
            "--version",
            "help",
        ],
        R,
        "shows service state",
    ),
    e(
        &[
            "poweroff",
            "reboot",
            "halt",
            "kexec",
            "suspend",
            "hibernate",
            "emergency",
            "rescue",
            "isolate",
            "default",
        ],
        B,
        "stops or restarts the machine",
    ),
];

pub(super) static DOCKER: &[Entry] = &[
    e(
        &[
            "ps", "images", "logs", "inspect", "version", "info", "stats", "top", "port",
            "history", "diff", "events",
        ],
        R,
        "shows container state",
    ),
    e(&["run", "create"], I, "starts a container").rules(&[
        flag("--privileged", B, "gives the container full control of the host"),
        value("--pid", I, "shares the host's process namespace"),
    ]),
];

pub(super) static KUBECTL: &[Entry] = &[e(
    &[
        "get",
        "describe",
        "logs",
        "top",
        "explain",
        "version",
        "api-resources",
        "cluster-info",
        "diff",
    ],
    I,
    "reads cluster state over the network (a kubeconfig can also run credential programs)",
)];

static PIP: &[Entry] = &[
    e(
        &["list", "show", "freeze", "check", "help", "inspect", "debug"],
        R,
        "shows installed Python packages",
    )
    .rules(&[
        flag("-o", I, "asks the package index over the network"),
        flag("--outdated", I, "asks the package index over the network"),
        flag("-u", I, "asks the package index over the network"),
        flag("--uptodate", I, "asks the package index over the network"),
        value("--path", R, "lists packages installed in a directory"),
    ])
    .values(&["--format", "--exclude", "--target", "--prefix", "-f", "--files"]),
    e(&["search", "index"], I, "asks the package index over the network"),
    e(
        &["install", "uninstall", "download", "wheel"],
        I,
        "installs or removes Python packages (setup code runs)",
    ),
];

static NPM: &[Entry] = &[
    e(
        &["ls", "list", "ll", "la", "why", "explain", "root", "bin", "prefix", "--version", "-v"],
        R,
        "shows package information",
    ),
    e(
        &["view", "info", "show", "outdated", "search", "doctor", "audit", "fund", "help"],
        I,
        "asks the registry over the network, or opens a browser or pager",
    ),
    e(
        &["install", "i", "ci", "add", "remove", "rm", "uninstall", "update", "upgrade", "link"],
        I,
        "installs or removes packages (install scripts run)",
    ),
    e(
        &["run", "run-script", "test", "t", "start", "exec", "x", "dlx", "npx"],
        I,
        "runs a project script (arbitrary code)",
    ),
];

static CARGO: &[Entry] = &[
    e(
        &["version", "help", "locate-project", "read-manifest", "verify-project"],
        R,
        "shows package information",
    ),
    e(
        &["tree", "metadata", "pkgid"],
        I,
        "resolves dependencies (it may download and write Cargo.lock)",
    )
    .special(analyze::cargo_offline),
    e(&["search", "info"], I, "asks the registry over the network"),
    e(&["fmt"], W, "formats the source files").rules(&[]),
    e(&["add", "remove", "update", "generate-lockfile"], W, "edits the manifest or lock file"),
    e(&["install", "uninstall"], I, "installs programs (build scripts run)"),
    e(&["publish", "yank", "owner", "login", "logout"], I, "publishes to a registry"),
    e(
        &[
            "build", "b", "check", "c", "test", "t", "run", "r", "bench", "clippy", "doc", "d",
            "clean", "fix", "rustc", "rustdoc", "package", "vendor",
        ],
        I,
        "builds or runs code, including build scripts",
    ),
];

static GO: &[Entry] = &[
    e(&["version", "doc", "help"], R, "shows Go information"),
    e(&["env"], R, "shows the Go environment").rules(&[
        flag("-w", I, "changes the user's Go configuration"),
        flag("-u", I, "changes the user's Go configuration"),
    ]),
    e(&["list"], I, "lists packages (it may download modules)"),
];

static APT_CACHE: &[Entry] = &[e(
    &[
        "policy",
        "show",
        "showpkg",
        "showsrc",
        "search",
        "depends",
        "rdepends",
        "madison",
        "pkgnames",
        "stats",
        "dump",
        "dumpavail",
        "unmet",
    ],
    R,
    "shows package information from the local cache",
)];

static PACKAGES: &[Entry] = &[
    e(
        &["list", "show", "info", "policy", "madison", "depends", "rdepends"],
        R,
        "shows package information",
    ),
    e(
        &["search", "query", "doctor", "outdated", "find", "changelog"],
        I,
        "asks a package index over the network",
    ),
    e(
        &[
            "install",
            "reinstall",
            "remove",
            "purge",
            "uninstall",
            "upgrade",
            "update",
            "dist-upgrade",
            "full-upgrade",
            "autoremove",
            "add",
            "del",
        ],
        I,
        "installs or removes system packages",
    ),
];
