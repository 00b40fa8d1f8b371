import pytest

from sema_rpc.core.policy.bash_safety import (
    is_safe_readonly_command,
    names_git_dir,
    network_program,
    rule_for,
    rule_matches,
)

SAFE = [
    "ls",
    "ls -la src",
    "cat README.md | head -20",
    "git status",
    "git diff HEAD~1 -- src/",
    "git log --oneline -n 5 && git branch -a",
    "git --no-pager show HEAD:file.py",
    "grep -rn 'a|b' src; pwd",
    "rg -n 'foo;bar' --glob '*.py'",
    "find . -name '*.py' -type f | wc -l",
    "echo 'a > b' | wc -c",
    "ls *.py src/*.txt",
    "[ -f x ] && ls",
    "ps aux",
    "jq .name package.json",
    "tree -L 2",
    "sort -u names.txt | uniq -c",
    "date +%Y-%m-%d",
    "which python || echo none",
    "ls\npwd\n",
    "ls # trailing comment ; rm -rf /",
]

UNSAFE = [
    "rm -rf build",
    "ls > out.txt",
    "ls >> out.txt",
    "ls 2>/dev/null",
    "cat < input",
    "echo $(rm -rf /)",
    "echo ${X:-$(rm -rf /)}",
    "echo ${X:-`rm -rf /`}",
    'echo "${X:-$(rm -rf /)}"',
    "echo `rm -rf /`",
    "diff <(ls a) <(ls b)",
    "sudo ls",
    "FOO=1 ls",
    "cat <<EOF\nhi\nEOF",
    "ls; rm x",
    "ls\nrm x",
    "ls && rm x",
    "ls | xargs rm",
    "ls &",
    "(ls)",
    "{ ls; }",
    "find . -delete",
    "find . -name x -exec rm {} ;",
    "find . ${X:--delete}",
    "find . -de{l,}ete",
    'find . "|" ls -delete',
    "git commit -m x",
    "git push",
    "git branch -D main",
    "git branch new-branch",
    "git -c core.pager=evil log",
    "git diff --output=/tmp/x",
    "sort -o out.txt in.txt",
    "sort -uo out.txt in.txt",
    "sort --out=out.txt in.txt",
    "sort --compress-program=sh in.txt",
    "git grep -Ovim pattern",
    "git log --outp=/tmp/x",
    "tree -R",
    "hostname evil",
    "rg --pre=./evil x",
    "uniq in.txt out.txt",
    "tree -o out.txt",
    "date -s 2020-01-01",
    "rg --pre ./evil x",
    "sed -i s/a/b/ f",
    "awk '{system(\"rm x\")}'",
    "env rm x",
    "./ls",
    "echo 'unterminated",
    "echo a#b; rm x",
    "",
    # ANSI-C quoting is decoded before the checks: these are -delete, --output, -o
    "find src $'-\\x64elete'",
    "git diff --no-index $'--\\x6futput=/tmp/x' a b",
    "sort $'-\\x6f/tmp/x' README.md",
    "rg $'--pr\\x65=./evil' x",
    # a glob may expand to a file named like an option
    "find src ?delete",
    "sort *",
    # parameter expansions may reveal secrets or anything else
    "echo $HOME",
    "echo ${ANTHROPIC_API_KEY}",
    'cat "$HOME/.ssh/id_rsa"',
    "printenv",
    "printenv ANTHROPIC_API_KEY",
    # the environment by other means
    "ps axeww",
    "jq -n env",
    "jq -n '$ENV'",
]

OUTSIDE = [
    "cat ~/.ssh/id_rsa",
    "cat /etc/passwd",
    "ls ../..",
    "head -5 src/../../secret.txt",
    "grep -r --file=/etc/shadow x",
    "cd src && cat ../../x",
    "grep -f/etc/shadow x",
    "cat ~-/.ssh/id_rsa",
    "cat ~root/.profile",
    "cat .?/.?/etc/passwd",
    "cat outlink/passwd",
]

INSIDE = ["cat src/../README.md", "ls -la", "grep -rn x . | head", "ls /dev/null"]


@pytest.mark.parametrize("command", SAFE)
def test_safe(command: str) -> None:
    assert is_safe_readonly_command(command), command


@pytest.mark.parametrize("command", UNSAFE)
def test_unsafe(command: str) -> None:
    assert not is_safe_readonly_command(command), command


@pytest.mark.parametrize("command", OUTSIDE)
def test_paths_outside_the_workspace_are_asked(command: str, tmp_path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "outlink").symlink_to("/etc")  # a link shipped in a cloned repository
    assert is_safe_readonly_command(command), command  # read-only, so concurrency-safe
    assert not is_safe_readonly_command(command, workspace), command


@pytest.mark.parametrize("command", INSIDE)
def test_paths_inside_the_workspace_run(command: str, tmp_path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    assert is_safe_readonly_command(command, workspace), command


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("git commit -m 'x y'", "Bash(git commit:*)"),
        ("make test", "Bash(make test:*)"),
        ("npm install --save-dev x", "Bash(npm install:*)"),
        ("npm run build -- --watch", "Bash(npm run build:*)"),
        ("python -m pytest -q tests", "Bash(python -m pytest:*)"),
        ("python3 -m pip install x", "Bash(python3 -m pip:*)"),
        ("cargo test --release", "Bash(cargo test:*)"),
        ("docker compose up", "Bash(docker compose:*)"),
        ("rm -rf build", "Bash(rm -rf build)"),
        ("git commit -m x && git push", "Bash(git commit -m x && git push)"),
        ("make   test  >  log", "Bash(make test > log)"),
        ("git -C sub status", "Bash(git -C sub status)"),
        ("FOO=1 make test", "Bash(FOO=1 make test)"),
        ("make", "Bash(make)"),
    ],
)
def test_rule_for(command: str, rule: str) -> None:
    assert rule_for(command) == rule


@pytest.mark.parametrize(
    "command",
    [
        "git commit -m x",
        "git commit",
        "git  commit   --amend",
        "git commit -m 'a && b; c | d'",
        "'git' commit -m x",
    ],
)
def test_prefix_rule_matches(command: str) -> None:
    assert rule_matches("Bash(git commit:*)", command)


@pytest.mark.parametrize(
    "command",
    [
        "git commit -m x && rm -rf /",
        "git commit -m x; rm -rf /",
        "git commit -m x || rm -rf /",
        "git commit -m x | sh",
        "git commit -m x\nrm -rf /",
        "git commit -m x & rm -rf /",
        "git commit -m $(rm -rf /)",
        "git commit -m `rm -rf /`",
        "git commit -m x > /etc/passwd",
        "git commit-tree x",
        "git push",
        "GIT_DIR=/x git commit",
        "(git commit -m x)",
        "git",
        "git commit -m 'unterminated",
    ],
)
def test_prefix_rule_never_widens(command: str) -> None:
    assert not rule_matches("Bash(git commit:*)", command)


def test_exact_rule() -> None:
    assert rule_matches("Bash(npm test)", "npm   test")
    assert rule_matches("Bash(ls && pwd)", "ls && pwd")
    assert not rule_matches("Bash(npm test)", "npm test --watch")
    assert not rule_matches("Bash(npm test)", "npm test; rm -rf /")
    assert not rule_matches("Read(x)", "npm test")
    assert not rule_matches("Bash()", "")
    # bash runs a line break as a separator: `./deploy.sh\nprod` is two commands
    assert not rule_matches("Bash(./deploy.sh prod)", "./deploy.sh\nprod")
    assert rule_matches(rule_for("make a\nmake b"), "make a\nmake b")


def test_rules_round_trip() -> None:
    for command in ["git commit -m x", "make test", "rm -rf build", "ls && pwd"]:
        assert rule_matches(rule_for(command), command)


@pytest.mark.parametrize(
    ("command", "program"),
    [
        ("curl x", "curl"),
        ("ls; wget y", "wget"),
        ("echo $(curl x)", "curl"),
        ('echo "$(nc -l 1)"', "nc"),
        ("echo ${X:-$(curl x)}", "curl"),
        ("bash -c 'ssh host'", "ssh"),
        ("sudo -u root curl x", "curl"),
        ("timeout 5 telnet x", "telnet"),
        ("env A=1 /usr/bin/scp a b", "scp"),
        ("echo curl", None),
        ("cat <<'EOF'\nit's curl time\nEOF", None),
        ("cat <<EOF\nnow $(curl x)\nEOF", "curl"),
        ("git fetch", None),
        ("$'\\x63url' x", "curl"),
    ],
)
def test_network_program(command: str, program: str | None) -> None:
    assert network_program(command) == program


FOLLOWS_LINKS = [
    "grep -R x .",
    "grep -nR x src",
    "grep --dereference-recursive x",
    "rg --follow x",
    "rg -L x",
    "find -L . -name x",
    "find . -follow",
    "du -L .",
    "du --deref src",
    "ls -lL",
    "tree -l",
    "diff -ru a b",
    "wc --files0-from=list",
    "sort --files0-from=list",
    "sha256sum -c sums.txt",
    "file -f names.txt",
    "strings @opts",
]


@pytest.mark.parametrize("command", FOLLOWS_LINKS)
def test_options_that_read_unnamed_files_are_not_read_only(command: str) -> None:
    assert not is_safe_readonly_command(command), command


@pytest.mark.parametrize(
    "command", ["grep -rn x .", "find . -name x", "du -sh .", "diff -r --no-dereference a b"]
)
def test_walking_without_following_links_stays_read_only(command: str) -> None:
    assert is_safe_readonly_command(command), command


def test_globs_are_checked_against_what_they_expand_to(tmp_path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "a.py").write_text("x\n")
    assert is_safe_readonly_command("cat src/*.py", workspace)
    (workspace / "src" / "zz.py").symlink_to("/etc/passwd")
    assert not is_safe_readonly_command("cat src/*.py", workspace)  # a link leading out
    assert not is_safe_readonly_command("grep x s?c/*", workspace)
    assert is_safe_readonly_command("cat src/a*", workspace)
    (workspace / "src" / "zz.py").unlink()
    (workspace / "src" / "-R").write_text("")
    assert not is_safe_readonly_command("grep x src/*", workspace)  # expands to an option
    assert is_safe_readonly_command("cat src/a*.py", workspace)


@pytest.mark.parametrize(
    "command",
    [
        "sort -o .git/config .git/config",
        "sed -i s/a/b/ .git/config",
        "git diff --output=.git/hooks/pre-commit",
        "echo x >> .GIT/config",
        "cd .git && sed -i s/a/b/ config",
        "sed -i x .g?t/config",
        "sed -i x .[a-z]*/config",
        "sed -i x .[^a]*/config",
        "sed -i x $'\\x2egit'/config",
        "sed -i x .g''it/config",
        "sh -c 'sed -i x .git/config'",
        "echo $(sed -i x .git/config)",
        "cp hook -t.git/hooks",
        "sort -o.git/config x",
        "bash <<EOF\nsed -i x .git/config\nEOF",
        "git config core.fsmonitor 'touch x'",
        "git -C . config --unset core.x",
        "git config --edit",
        "git config alias.st '!touch x'",
        "git config --add include.path ../evil",
        "git config set core.hooksPath hooks",
        "shopt -s dotglob; rm -rf *",
    ],
)
def test_commands_naming_dot_git_are_recognised(command: str) -> None:
    assert names_git_dir(command), command


@pytest.mark.parametrize(
    "command",
    ["git commit -m x", "git config user.name", "git config --get core.x", "cat .gitignore",
     "git config user.email bot@example.com", "git config pull.rebase true",
     "git remote add origin git@example.com:me/repo.git", "pip install git+https://x/y.git",
     "touch .github/workflows/ci.yml", "rm -rf build/*", "sed -i s/a/b/ src/*.py"],
)  # fmt: skip
def test_commands_not_naming_dot_git(command: str) -> None:
    assert not names_git_dir(command), command
