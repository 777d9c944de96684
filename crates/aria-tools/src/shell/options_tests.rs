//! The classifier judges each program's options, not just the program. One test per
//! class, each table taken from the program's manual; a command that uses an option that
//! writes, executes or reaches the network is never `read`. (The labelled corpora in
//! `tests/data/shell_*.txt` measure the same classes in bulk.)

use aria_api::Tier::{Blocked, Irreversible, Read, RecoverableWrite};

use super::classify_tests::check;

#[test]
fn git_global_options_that_run_programs_are_irreversible() {
    check(&[
        ("git -p log", Irreversible, "pager"),
        ("git --paginate status", Irreversible, "pager"),
        ("git --exec-path=/tmp/x status", Irreversible, "--exec-path"),
        ("git --exec-path", Read, "git"),
        ("git -c log.showSignature=true log", Irreversible, "log.showSignature"),
        ("git -c commit.gpgsign=true commit -m x", Irreversible, "gpgsign"),
        ("git -c commit.gpgsign=false commit -m x", RecoverableWrite, "git commit"),
        ("git -c safe.directory=/x status", Irreversible, "safe.directory"),
        ("git --config-env=core.pager=P log", Irreversible, "core.pager"),
        ("git -c color.ui=never log", Read, "git log"),
        ("git -C /tmp/other status", Irreversible, "outside the working directory"),
        ("git --git-dir=../x/.git log", Irreversible, "outside the working directory"),
        ("git -C sub status", Read, "git status"),
        ("git for-each-ref --format='%(signature)'", Irreversible, "gpg"),
    ]);
}

#[test]
fn git_subcommand_forms_that_write_execute_or_connect_are_not_read() {
    check(&[
        ("git branch --edit-description", Irreversible, "--edit-description"),
        ("git tag -s v1 -m x", Irreversible, "-s"),
        ("git remote show origin", Irreversible, "network"),
        ("git remote show -n origin", Read, "local"),
        ("git ls-remote origin", Irreversible, "network"),
        ("git fetch --upload-pack=x origin", Irreversible, "network"),
        ("git blame --output=x f", RecoverableWrite, "--output"),
        ("git log --output=/etc/x", Blocked, "/etc/x"),
        ("git grep -O x", Irreversible, "-O"),
        ("git grep --open-files-in-pager x", Irreversible, "pager"),
        ("git show --textconv HEAD:f", Irreversible, "--textconv"),
        ("git log --show-signature", Irreversible, "gpg"),
        ("git log --format=%G?", Irreversible, "gpg"),
        ("git cat-file --filters HEAD:f", Irreversible, "--filters"),
        ("git rebase --exec 'make' main", Irreversible, "--exec"),
        ("git log --help", Irreversible, "man"),
        ("git help log", Irreversible, "man"),
        ("git help", Read, "list"),
        ("git config --edit", Irreversible, "editor"),
        ("git config --global user.name x", Irreversible, "--global"),
        ("git log -h", Read, "git log"),
        ("git log --pretty=format:'%h %s'", Read, "git log"),
    ]);
}

#[test]
fn search_and_sort_options_that_run_or_write_are_not_read() {
    check(&[
        ("rg --pre ./x foo", Irreversible, "--pre"),
        ("rg -z foo", Irreversible, "-z"),
        ("rg -zl foo", Irreversible, "-z"),
        ("rg --search-zip foo", Irreversible, "decompression"),
        ("rg --hostname-bin x foo", Irreversible, "--hostname-bin"),
        ("rg -e -z foo", Read, "rg"),
        ("sort -o out f", RecoverableWrite, "-o"),
        ("sort -rno out f", RecoverableWrite, "out"),
        ("sort --output=/etc/passwd f", Blocked, "/etc/passwd"),
        ("sort --compress-program=x f", Irreversible, "--compress-program"),
        ("tree -o out.txt", RecoverableWrite, "-o"),
        ("base64 -o out in", RecoverableWrite, "-o"),
        ("uniq in out", RecoverableWrite, "out"),
        ("uniq -c in", Read, "uniq"),
        ("xxd in out", RecoverableWrite, "out"),
        ("less -o log f", RecoverableWrite, "log"),
        ("less '+!id' f", Irreversible, "+!id"),
        ("less +G f", Read, "less"),
        ("sort -o /dev/stdout f", Read, "sort"),
    ]);
}

#[test]
fn xargs_takes_the_tier_of_what_it_runs_and_what_its_input_can_add() {
    check(&[
        ("xargs -a list.txt grep x", Read, "grep"),
        ("xargs wc -l", Read, "wc"),
        ("xargs sort", Irreversible, "appends words"),
        ("xargs git log", Irreversible, "appends words"),
        ("xargs -I{} rg {} .", Irreversible, "appends words"),
        ("xargs rm", Irreversible, "rm"),
    ]);
}

#[test]
fn sed_scripts_that_read_files_or_cannot_be_read_are_not_read() {
    check(&[
        ("sed 'r other' f", Irreversible, "r/R"),
        ("sed '1R other' f", Irreversible, "r/R"),
        ("sed -I '' s/a/b/ f", RecoverableWrite, "-I"),
        ("sed --i s/a/b/ f", RecoverableWrite, "--i"),
        ("sed \"$S\" f", Irreversible, "variable"),
        ("sed -e \"$S\" f", Irreversible, "variable"),
        ("sed --sandbox 's/a/b/e' f", Read, "sed"),
        ("sed -n 'w /dev/stdout' f", Read, "sed"),
    ]);
}

#[test]
fn awk_programs_that_run_load_or_connect_are_not_read() {
    check(&[
        ("awk '{ x = systemx; system(\"id\") }'", Irreversible, "system()"),
        ("awk '@include \"x\"'", Irreversible, "@"),
        ("awk 'BEGIN{f=\"system\"; @f(\"id\")}'", Irreversible, "@"),
        ("mawk -W exec p.awk", Irreversible, "-W exec"),
        ("gawk --exec=p.awk", Irreversible, "--exec"),
        ("gawk -p '{print}' f", RecoverableWrite, "profile"),
        ("gawk -D '{print}' f", Irreversible, "debugger"),
        ("awk \"$P\" f", Irreversible, "variable"),
        ("gawk 'BEGIN{print \"x\" |& \"/inet/tcp/0/h/80\"}'", Irreversible, "/inet"),
        ("gawk --sandbox 'BEGIN{system(\"id\")}'", Read, "gawk"),
        ("awk -W version", Read, "awk"),
    ]);
}

#[test]
fn archive_options_that_run_programs_or_write_outside_are_irreversible() {
    check(&[
        ("tar -xf a.tar --to-command=sh", Irreversible, "--to-command"),
        ("tar -cf a.tar -I ./x .", Irreversible, "-I"),
        ("tar --use-comp=./x -cf a.tar .", Irreversible, "--use-compress-program"),
        ("tar -cf a.tar --checkpoint-action=exec=id .", Irreversible, "exec=id"),
        ("tar -cf a.tar -F ./x .", Irreversible, "-F"),
        ("tar --rsh-command=x -cf h:a.tar .", Irreversible, "--rsh-command"),
        ("tar -cf user@host:/a.tar .", Irreversible, "another machine"),
        ("tar --force-local -cf c:a.tar .", RecoverableWrite, "tar"),
        ("tar -xPf a.tar", Irreversible, "-P"),
        ("tar -xf a.tar -C /tmp", Irreversible, "outside"),
        ("tar -xf a.tar -C sub", RecoverableWrite, "tar"),
        ("tar -czf /etc/x.tgz src", Blocked, "/etc/x.tgz"),
        ("tar -tf a.tar", Read, "lists"),
        ("tar tvzf a.tgz", Read, "lists"),
        ("tar -xOf a.tar f", Read, "prints"),
        ("zip -TT 'sh -c id' a.zip f", Irreversible, "-TT"),
        ("zip -T a.zip f", Irreversible, "unzip"),
        ("zip -r a.zip src", RecoverableWrite, "zip"),
        ("unzip -: a.zip", Irreversible, "../"),
        ("unzip a.zip -d /tmp/x", Irreversible, "outside"),
        ("unzip -l a.zip", Read, "lists"),
        ("unzip -p a.zip f", Read, "prints"),
        ("gzip f", RecoverableWrite, "gzip"),
        ("gzip -c f", Read, "standard output"),
        ("zstd -d f.zst -o f", RecoverableWrite, "zstd"),
    ]);
}

#[test]
fn interpreters_with_inline_code_are_irreversible_and_their_version_is_read() {
    check(&[
        ("python3 -c 'print(1)'", Irreversible, "-c"),
        ("perl -E 'say 1'", Irreversible, "-E"),
        ("node -p 1", Irreversible, "-p"),
        ("ruby -e 'p 1'", Irreversible, "-e"),
        ("php -r 'echo 1;'", Irreversible, "-r"),
        ("lua -e 'print(1)'", Irreversible, "-e"),
        ("python3 --version", Read, "version"),
        ("bash --version", Read, "version"),
    ]);
}

#[test]
fn watch_runs_its_words_through_a_shell() {
    check(&[
        ("watch ls", Irreversible, "shell"),
        ("watch -n 1 'ls; id'", Irreversible, "shell"),
        ("watch -x ls", Read, "ls"),
    ]);
}

#[test]
fn other_read_programs_options_that_change_the_system() {
    check(&[
        ("dmesg -c", Irreversible, "clears"),
        ("dmesg", Read, "dmesg"),
        ("journalctl --vacuum-time=1d", Irreversible, "deletes"),
        ("journalctl -u x -n 50", Read, "journalctl"),
        ("ss -K dst 1.2.3.4", Irreversible, "closes"),
        ("hostname new", Irreversible, "host name"),
        ("hostname -I", Read, "hostname"),
        ("time -o t.txt ls", RecoverableWrite, "-o"),
        ("yq -i .a=1 f.yaml", RecoverableWrite, "-i"),
        ("file -C -m magic", RecoverableWrite, "-C"),
        ("bat --pager=x f", Irreversible, "--pager"),
        ("docker search x", Irreversible, "docker search"),
        ("kubectl get pods", Irreversible, "network"),
        ("pip list --outdated", Irreversible, "network"),
        ("pip list", Read, "pip list"),
        ("npm view react", Irreversible, "network"),
        ("cargo tree", Irreversible, "--frozen"),
        ("cargo tree --frozen", Read, "locked"),
        ("go list ./...", Irreversible, "download"),
        ("pacman -Syu", Irreversible, "pacman"),
        ("pacman -Qi vim", Read, "queries"),
        ("dpkg -l", Read, "package"),
        ("dpkg -i x.deb", Irreversible, "dpkg"),
        ("apt-cache policy git", Read, "apt-cache"),
    ]);
}

#[test]
fn listing_the_system_configuration_is_read_and_changing_it_stays_blocked() {
    check(&[
        ("mount", Read, "only shows"),
        ("mount /dev/sdb1 /mnt", Blocked, "mount"),
        ("sysctl -a", Read, "only shows"),
        ("sysctl net.ipv4.ip_forward", Read, "only shows"),
        ("sysctl -w net.ipv4.ip_forward=1", Blocked, "sysctl"),
        ("sysctl net.ipv4.ip_forward=1", Blocked, "sysctl"),
        ("iptables -L -n -v", Read, "only shows"),
        ("iptables -t nat -nvL", Read, "only shows"),
        ("iptables -A INPUT -j DROP", Blocked, "iptables"),
        ("iptables -L -F", Blocked, "iptables"),
        ("nft list ruleset", Read, "only shows"),
        ("nft flush ruleset", Blocked, "nft"),
        ("ufw status", Read, "only shows"),
        ("ufw enable", Blocked, "ufw"),
        ("firewall-cmd --list-all", Read, "only shows"),
        ("swapon --show", Read, "only shows"),
        ("swapon /swapfile", Blocked, "swapon"),
        ("fdisk -l", Read, "only shows"),
        ("fdisk /dev/sda", Blocked, "fdisk"),
    ]);
}
