"""Operand rules written as code, for programs whose files depend on more than their options: an archiver's
mode, a downloader's output directory, dd's ``of=``, awk's program text, rm's flags.

Everything here works on argv words the shell analyser has already unquoted; nothing touches the disk.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from seepient.protocol import Capability
from seepient.shell.interpretation import Danger, Interpretation, Word, destructive
from seepient.shell.interpreters import inline_code
from seepient.shell.operand_rules import OperandRule
from seepient.shell.options import ASSIGNMENT, name_set, option_spec, parse_options


def dd_operands(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    for word in args:
        key, eq, value = word.text.partition("=")
        if not eq:
            continue
        if key == "if":
            interpretation.opens(Word(value, word.static, word.glob), write=False, role="dd input")
        elif key == "of":
            target = Word(value, word.static, word.glob)
            interpretation.opens(target, write=True, role="dd output")
            if value.startswith("/dev/") and value not in name_set(
                "/dev/null /dev/stdout /dev/stderr /dev/zero"
            ):
                interpretation.dangers.append(Danger("deny", f"dd writes straight to the device {value}"))


def tar_operands(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    words = list(args)
    if words and words[0].static and not words[0].text.startswith("-") and words[0].text[:1].isalpha():
        words[0] = Word("-" + words[0].text)  # old-style bundled options: 'tar czf out.tgz dir'
    parsed = parse_options(
        words,
        option_spec(
            "-f --file -C --directory -T --files-from -X --exclude-from -b -g --listed-incremental -I "
            "--use-compress-program -H --format --exclude -N --newer"
        ),
        program,
    )
    creating = parsed.has("-c", "--create", "-r", "--append", "-u", "--update", "-A", "--catenate")
    extracting = parsed.has("-x", "--extract", "--get")
    for archive in parsed.values("-f", "--file"):
        interpretation.opens(archive, write=creating, role="tar archive")
    for listing in parsed.values("-T", "--files-from", "-X", "--exclude-from"):
        interpretation.opens(listing, write=False, role="tar file list")
    if extracting:
        targets = parsed.values("-C", "--directory") or [Word(".")]
        for target in targets:
            interpretation.opens(
                target, write=True, role="tar extraction directory", recursive=True, directory=True
            )
    elif creating:
        for word in parsed.operands:
            interpretation.opens(word, write=False, role="tar input", recursive=True)


def unzip_operands(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    parsed = parse_options(args, option_spec("-d -x -P"), program)
    if parsed.operands:
        interpretation.opens(parsed.operands[0], write=False, role="unzip archive")
    if not parsed.has("-l", "-t", "-v", "-p", "-Z"):
        for target in parsed.values("-d") or [Word(".")]:
            interpretation.opens(
                target, write=True, role="unzip extraction directory", recursive=True, directory=True
            )


def zip_operands(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    parsed = parse_options(args, option_spec("-b -n -t -tt -x -i -P -Z -O"), program)
    recursive = parsed.has("-r", "-R", "--recurse-paths")
    if parsed.operands:
        interpretation.opens(parsed.operands[0], write=True, role="zip archive")
    for word in parsed.operands[1:]:
        interpretation.opens(word, write=False, role="zip input", recursive=recursive)


def compressor_operands(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    parsed = parse_options(args, option_spec("-S --suffix -T --threads -o"), program)
    to_stdout = parsed.has("-c", "--stdout", "--to-stdout", "-l", "--list", "-t", "--test")
    for word in parsed.operands:
        interpretation.opens(word, write=not to_stdout, role=f"{program} file")


# The options of the downloaders that take a value; a value is a file for some of them.
_CURL_OPTIONS = option_spec(
    "-o --output -c --cookie-jar -D --dump-header --trace --trace-ascii --stderr --output-dir -T "
    "--upload-file -K --config -d --data --data-binary --data-raw --data-urlencode --data-ascii -F --form -H "
    "--header -u --user -X --request -e --referer -A --user-agent -b --cookie -x --proxy -m --max-time "
    "--connect-timeout -w --write-out -r --range -E --cert --key --cacert --capath --retry --url -Y -y -z "
    "--limit-rate"
)
_WGET_OPTIONS = option_spec(
    "-O --output-document -o --output-file -a --append-output -P --directory-prefix -i --input-file "
    "--post-file --body-file --load-cookies --save-cookies -U --user-agent --header -t --tries -T --timeout "
    "-e --execute -l --level -A --accept -R --reject -D --domains --user --password --method --body-data "
    "--post-data"
)


def curl_operands(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    parsed = parse_options(args, _CURL_OPTIONS, program)
    for word in parsed.values(
        "-o", "--output", "-c", "--cookie-jar", "-D", "--dump-header", "--trace", "--trace-ascii", "--stderr"
    ):
        if word.text != "-":
            interpretation.opens(word, write=True, role="curl output")
    for word in parsed.values("--output-dir"):
        interpretation.opens(word, write=True, role="curl output directory", directory=True)
    if parsed.has("-O", "--remote-name", "-J", "--remote-header-name", "--remote-name-all"):
        interpretation.opens(Word("."), write=True, role="curl download directory", directory=True)
    for word in parsed.values("-T", "--upload-file", "-K", "--config"):
        interpretation.opens(word, write=False, role="curl upload")


def wget_operands(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    parsed = parse_options(args, _WGET_OPTIONS, program)
    outputs = parsed.values("-O", "--output-document")
    for word in outputs:
        if word.text != "-":
            interpretation.opens(word, write=True, role="wget output")
    for word in parsed.values("-o", "--output-file", "-a", "--append-output", "--save-cookies"):
        interpretation.opens(word, write=True, role="wget log")
    directories = parsed.values("-P", "--directory-prefix")
    if not outputs:
        for word in directories or [Word(".")]:
            interpretation.opens(
                word,
                write=True,
                role="wget download directory",
                directory=True,
                recursive=parsed.has("-r", "--recursive", "-m", "--mirror"),
            )
    for word in parsed.values("-i", "--input-file", "--post-file", "--body-file", "--load-cookies"):
        interpretation.opens(word, write=False, role="wget input")


def patch_operands(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    parsed = parse_options(
        args,
        option_spec(
            "-i --input -p --strip -d --directory -o --output -r --reject-file -F --fuzz "
            "-z --suffix -B --prefix -D --ifdef -V --version-control"
        ),
        program,
    )
    for word in parsed.values("-i", "--input"):
        interpretation.opens(word, write=False, role="patch file")
    target = (parsed.values("-d", "--directory") or [Word(".")])[0]
    if parsed.operands:
        interpretation.opens(parsed.operands[0], write=True, role="patched file")
        for word in parsed.operands[1:]:
            interpretation.opens(word, write=False, role="patch file")
    else:
        # The files a patch changes are named inside it, so anything below the directory may change.
        interpretation.opens(
            target, write=True, role="files named inside the patch", recursive=True, directory=True
        )


def chmod_like_operands(program: str) -> OperandRule:
    def rule(args: Sequence[Word], interpretation: Interpretation, name: str) -> None:
        parsed = parse_options(args, option_spec("--reference --from"), name)
        operands = list(parsed.operands)
        if not parsed.values("--reference") and operands:
            operands.pop(0)  # the mode, owner or attributes: not a file
        recursive = parsed.has("-R", "--recursive")
        for word in operands:
            interpretation.opens(word, write=True, role=f"{name} target", recursive=recursive)
        # setuid/setgid modes and hand-overs to root are judged in privileged.py, like every such command.
        if program in ("chown", "chgrp"):
            interpretation.capabilities.add(Capability.PRIVILEGE)

    return rule


def rm_operands(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    parsed = parse_options(args, option_spec("--interactive"), program)
    recursive = parsed.has("-r", "-R", "--recursive")
    force = parsed.has("-f", "--force")
    if parsed.has("--no-preserve-root"):
        interpretation.dangers.append(Danger("deny", "rm --no-preserve-root is how whole systems get erased"))
    for word in parsed.operands:
        interpretation.opens(word, write=True, role="rm target", recursive=recursive)
    if recursive or force:
        flags = "-" + ("r" if recursive else "") + ("f" if force else "")
        destructive(interpretation, f"rm {flags} deletes files without a way back")


def kill_operands(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    # 'kill -1' alone names signal 1; a trailing -1 after another word is the process id -1: everything.
    if len(args) >= 2 and args[-1].text == "-1":
        interpretation.dangers.append(Danger("deny", "kill ... -1 signals every process the user owns"))


_AWK_OPTIONS = option_spec("-f --file -v --assign -F --field-separator -i --include -l --load -E --exec")
_AWK_PIPE_IN = re.compile(r'"((?:[^"\\\n]|\\.)*)"\s*\|\s*getline')
_AWK_PIPE_OUT = re.compile(r'\|&?\s*"((?:[^"\\\n]|\\.)*)"')
_AWK_FILE_OUT = re.compile(r'\bprintf?\b[^;}\n]*?>>?\s*"((?:[^"\\\n]|\\.)*)"')


def awk_operands(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    """awk reads its input files, and its program may run commands (``system()``, pipes) and write files."""
    parsed = parse_options(args, _AWK_OPTIONS, program)
    scripts = parsed.values("-f", "--file", "-E", "--exec")
    operands = list(parsed.operands)
    for script in scripts:
        interpretation.opens(script, write=False, role=f"{program} program file")
    if scripts:
        interpretation.problems.append(
            f"{program} -f runs a program file whose commands are not analysed here"
        )
    elif operands:
        code = operands.pop(0)
        inline_code(code, interpretation, program)
        if code.static:
            for match in (*_AWK_PIPE_IN.finditer(code.text), *_AWK_PIPE_OUT.finditer(code.text)):
                interpretation.scripts.append(Word(match.group(1)))
            for match in _AWK_FILE_OUT.finditer(code.text):
                interpretation.opens(Word(match.group(1)), write=True, role=f"{program} output")
            if re.search(r"\bsystem\s*\(\s*[^\s\")]", code.text) or re.search(
                r"\|&?\s*(?!getline\b)[A-Za-z_$]", code.text
            ):
                interpretation.problems.append(f"{program} runs a command built at run time")
    for word in operands:
        if word.static and ASSIGNMENT.match(word.text):
            continue  # 'var=value' operands set variables, they are not files
        interpretation.opens(word, write=False, role=f"{program} input")
